import { describe, expect, it } from 'vitest';
import { InvalidRepoName, parseRepoName } from '../../lib/repoName.js';

describe('parseRepoName', () => {
  it.each([
    ['name', 'name'],
    ['owner/name', 'owner/name'],
    ['name.git', 'name'],
    ['owner/name.git', 'owner/name'],
    ['Owner-1/my_repo.v2', 'Owner-1/my_repo.v2'],
    ['0/9', '0/9'],
    ['a.b-c_d', 'a.b-c_d'],
    ['x'.repeat(100), 'x'.repeat(100)],
    [`${'o'.repeat(100)}/${'n'.repeat(100)}.git`, `${'o'.repeat(100)}/${'n'.repeat(100)}`],
  ])('accepts %j as %j', (raw, canonical) => {
    expect(parseRepoName(raw)).toBe(canonical);
  });

  it.each([
    '',
    '.git',
    '..',
    '.',
    'a/../b',
    '../a',
    'a/..',
    'a/b/c',
    'a/b/c.git',
    '/a',
    'a/',
    'a//b',
    '.hidden',
    'owner/.hidden',
    '-dash',
    '_under',
    'a..b',
    'owner/a..b',
    'has space',
    'dollar$',
    'per%cent',
    'café',
    'naïve/repo',
    'x.git.git',
    'owner.git/name',
    'foo.lock',
    'owner/foo.lock.git',
    'a\\b',
    'a\nb',
    'x'.repeat(101),
    `owner/${'n'.repeat(101)}`,
  ])('refuses %j', (raw) => {
    expect(() => parseRepoName(raw)).toThrow(InvalidRepoName);
  });

  it('explains the rule and names the input', () => {
    expect(() => parseRepoName('a/b/c')).toThrow('invalid repository name "a/b/c": use NAME or OWNER/NAME');
    let caught: unknown;
    try {
      parseRepoName('bad name');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidRepoName);
    expect((caught as InvalidRepoName).code).toBe('InvalidRepoName');
    expect((caught as Error).message).toMatch(/^invalid repository name "bad name": each part must start/);
  });
});

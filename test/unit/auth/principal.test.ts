import { describe, expect, it } from 'vitest';
import {
  holds,
  InvalidGrant,
  includes,
  matchesRepo,
  type Principal,
  parsePattern,
  parseScope,
  SCOPES,
} from '../../../lib/auth/Principal.js';

describe('matchesRepo', () => {
  it.each([
    ['alice/app', 'alice/app', true],
    ['alice/app', 'alice/app2', false],
    ['alice/app', 'xalice/app', false],
    ['alice/*', 'alice/app', true],
    ['alice/*', 'alice', false],
    ['alice/*', 'bob/app', false],
    ['*', 'app', true],
    ['*', 'alice/app', false],
    ['**', 'app', true],
    ['**', 'alice/app', true],
    ['alice/**', 'alice/app', true],
    ['alice/**', 'bob/app', false],
    ['*/app', 'alice/app', true],
    ['*/app', 'app', false],
    ['*/app', 'alice/app2', false],
    ['alice/app-*', 'alice/app-1', true],
    ['alice/app-*', 'alice/app', false],
    // Regular-expression metacharacters in patterns are literals.
    ['a.b', 'a.b', true],
    ['a.b', 'axb', false],
    ['a+b', 'aab', false],
    ['a+b', 'a+b', true],
    ['a?', 'ab', false],
    ['(a|b)', 'a', false],
    ['[ab]', 'a', false],
    ['a{2}', 'aa', false],
    ['^a$', 'a', false],
    ['a\\b', 'a\\b', true],
    ['alice/app.*', 'alice/app.git2', true],
    ['alice/app.*', 'alice/appxgit', false],
  ])('%j against %j is %s', (pattern, repo, expected) => {
    expect(matchesRepo(pattern, repo)).toBe(expected);
  });
});

describe('parsePattern / parseScope', () => {
  it.each(['app', 'alice/app', 'alice/*', '*/app', '**', 'alice/**', 'a.b_c-d/app-*'])('accepts %j', (p) => {
    expect(parsePattern(p)).toBe(p);
  });

  it.each(['', '/', 'a/', '/a', 'a//b', 'a/b/c', 'has space', 'a$b', 'team/[ab]', 'x'.repeat(101)])(
    'refuses %j with a message naming it',
    (p) => {
      expect(() => parsePattern(p)).toThrow(InvalidGrant);
      expect(() => parsePattern(p)).toThrow(`invalid repository pattern ${JSON.stringify(p)}`);
    },
  );

  it('knows exactly the three scopes', () => {
    expect(SCOPES.map(parseScope)).toEqual(['read', 'write', 'admin']);
    expect(() => parseScope('owner')).toThrow('invalid scope "owner": use read, write or admin');
  });
});

describe('includes / holds', () => {
  it.each([
    ['read', 'read', true],
    ['read', 'write', false],
    ['read', 'admin', false],
    ['write', 'read', true],
    ['write', 'write', true],
    ['write', 'admin', false],
    ['admin', 'read', true],
    ['admin', 'write', true],
    ['admin', 'admin', true],
  ] as const)('%s includes %s: %s', (held, needed, expected) => {
    expect(includes(held, needed)).toBe(expected);
  });

  const p = (grants: Principal['grants']): Principal => ({ name: 'p', grants, create: false });

  it('matches the repository against each grant of a sufficient scope', () => {
    const dev = p([
      { scope: 'read', pattern: 'docs/*' },
      { scope: 'write', pattern: 'team/app' },
    ]);
    expect(holds(dev, 'read', 'docs/guide')).toBe(true);
    expect(holds(dev, 'write', 'docs/guide')).toBe(false);
    expect(holds(dev, 'read', 'team/app')).toBe(true);
    expect(holds(dev, 'write', 'team/app')).toBe(true);
    expect(holds(dev, 'write', 'team/app2')).toBe(false);
    expect(holds(dev, 'admin', 'team/app')).toBe(false);
  });

  it('grants on the host only through the global pattern', () => {
    expect(holds(p([{ scope: 'admin', pattern: '**' }]), 'admin', null)).toBe(true);
    expect(holds(p([{ scope: 'admin', pattern: 'team/*' }]), 'admin', null)).toBe(false);
    expect(holds(p([{ scope: 'admin', pattern: '*' }]), 'admin', null)).toBe(false);
    expect(holds(p([{ scope: 'write', pattern: '**' }]), 'admin', null)).toBe(false);
  });
});

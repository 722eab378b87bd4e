import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { pushRefNameProblem, refNameProblem } from '../../../lib/protocol/refName.js';

/** What the installed git (2.39) says: `git check-ref-format` exits 0 for a valid name. */
function gitAccepts(name: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const valid = [
  'refs/heads/main',
  'heads/main',
  'refs/heads/feature/x-1_2',
  'refs/tags/v1.0.0',
  'refs/heads/a./b',
  'refs/heads/a.b',
  'refs/heads/@',
  'refs/@/x',
  'refs/heads/a@b',
  'refs/heads/a{b}',
  'refs/heads/a}',
  'refs/heads/a@/{b',
  'refs/heads/a|b',
  'refs/heads/é',
  'refs/heads/日本',
  'refs/heads/a.lock.b',
  'refs/heads/lock',
  'refs/heads/x.loc',
  'refs/heads/x-.lock-y',
  'refs/heads/HEAD',
  'refs/heads/a!#$%&()+,;<=>"\'`',
  'refs/for/main%topic=x',
  `refs/heads/${'x'.repeat(2000)}`,
];

const invalid: [string, string][] = [
  ['', 'is empty'],
  ['@', "is the single character '@'"],
  ['foo', "has no '/' (a ref needs at least two components)"],
  ['HEAD', "has no '/' (a ref needs at least two components)"],
  ['/refs/heads/a', "starts with '/'"],
  ['refs/heads/a/', "ends with '/'"],
  ['refs//heads', "contains '//'"],
  ['refs/heads/a..b', "contains '..'"],
  ['refs/heads/..', "contains '..'"],
  ['refs/heads/.a', "has a component starting with '.'"],
  ['refs/.heads/a', "has a component starting with '.'"],
  ['refs/heads/.', "has a component starting with '.'"],
  ['refs/heads/a.', "ends with '.'"],
  ['refs/heads/x.lock', "has a component ending with '.lock'"],
  ['refs/heads/x.lock/y', "has a component ending with '.lock'"],
  ['refs/heads/.lock', "has a component starting with '.'"],
  ['refs/heads/a@{b', "contains '@{'"],
  ['refs/heads/@{', "contains '@{'"],
  ['refs/heads/a b', 'contains a space'],
  ['refs/heads/a\tb', "contains the control character '\\x09'"],
  ['refs/heads/a\nb', "contains the control character '\\x0a'"],
  ['refs/heads/a\x01', "contains the control character '\\x01'"],
  ['refs/heads/a\x7f', "contains the control character '\\x7f'"],
  ['refs/heads/a~1', "contains '~'"],
  ['refs/heads/a^', "contains '^'"],
  ['refs/heads/a:b', "contains ':'"],
  ['refs/heads/a?', "contains '?'"],
  ['refs/heads/a*', "contains '*'"],
  ['refs/heads/*', "contains '*'"],
  ['refs/heads/a[1]', "contains '['"],
  ['refs\\heads\\a', "contains '\\'"],
];

describe('refNameProblem', () => {
  it.each(valid)('accepts %j', (name) => {
    expect(refNameProblem(name)).toBeUndefined();
  });

  it.each(invalid)('refuses %j: %s', (name, reason) => {
    expect(refNameProblem(name)).toBe(reason);
  });

  it('refuses a NUL, which git could never be handed', () => {
    expect(refNameProblem('refs/heads/a\0b')).toBe("contains the control character '\\x00'");
  });

  it('agrees with `git check-ref-format` on every case above', () => {
    const names = [...valid, ...invalid.map(([name]) => name)].filter((name) => name !== '');
    const disagreements = names.filter((name) => gitAccepts(name) !== (refNameProblem(name) === undefined));
    expect(disagreements).toEqual([]);
  });
});

describe('pushRefNameProblem', () => {
  it.each([
    'refs/heads/main',
    'refs/tags/v1',
    'refs/for/main',
    'refs/heads/a/b/c',
    `refs/heads/${'x'.repeat(1013)}`,
  ])('accepts %j', (name) => {
    expect(pushRefNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['main', "does not start with 'refs/'"],
    ['heads/main', "does not start with 'refs/'"],
    ['HEAD', "does not start with 'refs/'"],
    ['refs/', "ends with '/'"],
    ['refs//heads/a', "starts with '/'"],
    ['refs/foo', "needs a category below refs/ (as in 'refs/heads/main')"],
    ['refs/@', "is the single character '@'"],
    ['refs/heads/a..b', "contains '..'"],
    ['refs/heads/main.lock', "has a component ending with '.lock'"],
    ['refs/heads/', "ends with '/'"],
    [`refs/heads/${'x'.repeat(1014)}`, 'is longer than 1024 bytes'],
    [`refs/heads/${'é'.repeat(507)}`, 'is longer than 1024 bytes'],
  ])('refuses %j: %s', (name, reason) => {
    expect(pushRefNameProblem(name)).toBe(reason);
  });

  it('agrees with receive-pack, which checks the name below refs/ with `check_refname_format`', () => {
    const names = ['refs/foo', 'refs/heads/main', 'refs/@', 'refs/heads/a..b', 'refs/a/b.', 'refs/x/@{y'];
    for (const name of names) {
      expect(pushRefNameProblem(name) === undefined, name).toBe(gitAccepts(name.slice('refs/'.length)));
    }
  });
});

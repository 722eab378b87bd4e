import { describe, expect, it } from 'vitest';
import { canCreate, canRead, canWrite, matchesRepo, type Principal } from '../../../lib/auth/Principal.js';

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

const principal = (p: Partial<Principal>): Principal => ({
  name: 'p',
  admin: false,
  create: false,
  read: [],
  write: [],
  ...p,
});

describe('canRead / canWrite / canCreate', () => {
  const anonymous = null;
  const reader = principal({ read: ['alice/*'] });
  const writer = principal({ write: ['alice/app'] });
  const creator = principal({ create: true, write: ['alice/*'] });
  const createOnly = principal({ create: true, read: ['alice/*'] });
  const admin = principal({ admin: true });

  it.each([
    // who, repo, public, read, write, create
    ['anonymous', anonymous, 'alice/app', false, false, false, false],
    ['anonymous', anonymous, 'alice/app', true, true, false, false],
    ['reader', reader, 'alice/app', false, true, false, false],
    ['reader', reader, 'bob/app', false, false, false, false],
    ['reader', reader, 'bob/app', true, true, false, false],
    ['writer', writer, 'alice/app', false, true, true, false],
    ['writer', writer, 'alice/other', false, false, false, false],
    ['creator', creator, 'alice/new', false, true, true, true],
    ['creator', creator, 'bob/new', false, false, false, false],
    ['create without write', createOnly, 'alice/new', false, true, false, false],
    ['admin', admin, 'anyone/anything', false, true, true, true],
  ] as const)('%s on %s (public %s)', (_who, who, repo, isPublic, read, write, create) => {
    expect(canRead(who, repo, isPublic)).toBe(read);
    expect(canWrite(who, repo)).toBe(write);
    expect(canCreate(who, repo)).toBe(create);
  });
});

import { describe, expect, it } from 'vitest';
import { AccessDenied } from '../../../lib/auth/AccessDenied.js';
import { type Access, allows, authorize } from '../../../lib/auth/authorize.js';
import type { Grant, Principal } from '../../../lib/auth/Principal.js';

const token = (name: string, grants: Grant[], create = false): Principal => ({ name, grants, create });

const anonymous = null;
const reader = token('reader', [{ scope: 'read', pattern: 'alice/*' }]);
const writer = token('writer', [{ scope: 'write', pattern: 'alice/app' }]);
const creator = token('creator', [{ scope: 'write', pattern: 'alice/*' }], true);
const createOnly = token('create-only', [{ scope: 'read', pattern: 'alice/*' }], true);
const repoAdmin = token('repo-admin', [{ scope: 'admin', pattern: 'alice/*' }]);
const globalReader = token('global-reader', [{ scope: 'read', pattern: '**' }]);
const admin = token('admin', [{ scope: 'admin', pattern: '**' }], true);

type Outcome = 'ok' | 'Unauthenticated' | 'Forbidden' | 'Hidden';

function outcome(who: Principal | null, repo: string | null, access: Access, isPublic = false): Outcome {
  try {
    authorize(who, repo, access, { public: isPublic });
    return 'ok';
  } catch (error) {
    if (error instanceof AccessDenied) return error.reason;
    throw error;
  }
}

describe('authorize', () => {
  it.each([
    // who, repo, public, read, write, create, admin
    [
      anonymous,
      'alice/app',
      false,
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
      'Unauthenticated',
    ],
    [anonymous, 'alice/app', true, 'ok', 'Unauthenticated', 'Unauthenticated', 'Unauthenticated'],
    [reader, 'alice/app', false, 'ok', 'Forbidden', 'Forbidden', 'Forbidden'],
    [reader, 'bob/app', false, 'Hidden', 'Hidden', 'Hidden', 'Hidden'],
    [reader, 'bob/app', true, 'ok', 'Forbidden', 'Forbidden', 'Forbidden'],
    [writer, 'alice/app', false, 'ok', 'ok', 'Forbidden', 'Forbidden'],
    [writer, 'alice/other', false, 'Hidden', 'Hidden', 'Hidden', 'Hidden'],
    [creator, 'alice/new', false, 'ok', 'ok', 'ok', 'Forbidden'],
    [creator, 'bob/new', false, 'Hidden', 'Hidden', 'Hidden', 'Hidden'],
    [createOnly, 'alice/new', false, 'ok', 'Forbidden', 'Forbidden', 'Forbidden'],
    [repoAdmin, 'alice/app', false, 'ok', 'ok', 'ok', 'ok'],
    [repoAdmin, 'bob/app', false, 'Hidden', 'Hidden', 'Hidden', 'Hidden'],
    [globalReader, 'anyone/anything', false, 'ok', 'Forbidden', 'Forbidden', 'Forbidden'],
    [admin, 'anyone/anything', false, 'ok', 'ok', 'ok', 'ok'],
  ] as const)('%o on %s (public %s)', (who, repo, isPublic, read, write, create, adminAccess) => {
    expect(outcome(who, repo, 'read', isPublic)).toBe(read);
    expect(outcome(who, repo, 'write', isPublic)).toBe(write);
    expect(outcome(who, repo, 'create', isPublic)).toBe(create);
    expect(outcome(who, repo, 'admin', isPublic)).toBe(adminAccess);
    expect(allows(who, repo, 'read', { public: isPublic })).toBe(read === 'ok');
    expect(allows(who, repo, 'write', { public: isPublic })).toBe(write === 'ok');
  });

  it('manages the host (tokens) only with admin on **', () => {
    expect(outcome(admin, null, 'admin')).toBe('ok');
    expect(outcome(repoAdmin, null, 'admin')).toBe('Forbidden');
    expect(outcome(globalReader, null, 'admin')).toBe('Forbidden');
    expect(outcome(anonymous, null, 'admin')).toBe('Unauthenticated');
    expect(outcome(admin, null, 'create')).toBe('Forbidden');
  });

  it('says what was refused without revealing a hidden repository', () => {
    const message = (who: Principal | null, repo: string | null, access: Access) => {
      try {
        authorize(who, repo, access);
      } catch (error) {
        return (error as Error).message;
      }
      return 'allowed';
    };
    expect(message(anonymous, 'alice/app', 'read')).toBe('authentication required for alice/app');
    expect(message(anonymous, 'alice/app', 'write')).toBe('authentication required to push to alice/app');
    expect(message(reader, 'alice/app', 'write')).toBe('token reader may not push to alice/app');
    expect(message(createOnly, 'alice/new', 'create')).toBe('token create-only may not create alice/new');
    expect(message(writer, 'alice/app', 'admin')).toBe('token writer may not administer alice/app');
    expect(message(reader, 'bob/app', 'read')).toBe('repository bob/app not found');
    expect(message(reader, 'bob/app', 'write')).toBe('repository bob/app not found');
    expect(message(repoAdmin, null, 'admin')).toBe(
      'token repo-admin needs the admin scope on ** (global) for this',
    );
  });
});

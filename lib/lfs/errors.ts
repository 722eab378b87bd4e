/**
 * Git LFS failures, each a class with a stable code; lib/http/errorResponse.ts gives each its
 * status, and the LFS routes answer them in LFS's JSON error format
 * (https://github.com/git-lfs/git-lfs/blob/main/docs/api/batch.md, "Response Errors").
 */
import type { LockView } from './lockTable.js';

/** The request is not one the LFS API accepts (422). */
export class InvalidLfsRequest extends Error {
  readonly code = 'InvalidLfsRequest';
}

/** A hash algorithm other than SHA-256 (409, as the batch API specifies). */
export class UnsupportedHashAlgorithm extends Error {
  readonly code = 'UnsupportedHashAlgorithm';
  constructor(readonly algorithm: string) {
    super(`only sha256 objects are supported, not ${algorithm}`);
  }
}

/** No object with this oid is stored for the repository (404). */
export class LfsObjectMissing extends Error {
  readonly code = 'LfsObjectMissing';
  constructor(readonly oid: string) {
    super(`object ${oid} is not on the server`);
  }
}

/** The bytes sent are not the object announced: another size or another SHA-256 (422). Nothing was stored. */
export class LfsContentMismatch extends Error {
  readonly code = 'LfsContentMismatch';
}

/** The object is larger than the host accepts (413). */
export class LfsObjectTooLarge extends Error {
  readonly code = 'LfsObjectTooLarge';
  constructor(
    readonly size: number,
    readonly max: number,
  ) {
    super(`the object is ${size} bytes, larger than this server accepts (${max} bytes)`);
  }
}

/** A verify names an upload the store has no bytes for (404): upload it again. */
export class LfsUploadMissing extends Error {
  readonly code = 'LfsUploadMissing';
  constructor(readonly oid: string) {
    super(`no upload of ${oid} arrived; upload it again`);
  }
}

/** Someone holds a lock on the path (409); the answer carries their lock. */
export class LockConflict extends Error {
  readonly code = 'LockConflict';
  constructor(readonly lock: LockView) {
    super(`${lock.path} is already locked by ${lock.owner.name}`);
  }
}

/** No lock with this id (404). */
export class LockNotFound extends Error {
  readonly code = 'LockNotFound';
  constructor(readonly id: string) {
    super(`no lock with id ${id}`);
  }
}

/** The lock belongs to someone else, and the unlock was not forced by an admin (403). */
export class LockNotOwned extends Error {
  readonly code = 'LockNotOwned';
  constructor(readonly lock: LockView) {
    super(`${lock.path} is locked by ${lock.owner.name}; only they may unlock it, or an admin with --force`);
  }
}

/** The repository holds as many locks as it may (409). */
export class TooManyLocks extends Error {
  readonly code = 'TooManyLocks';
  constructor(readonly max: number) {
    super(`the repository already holds ${max} locks, the most it may; unlock some first`);
  }
}

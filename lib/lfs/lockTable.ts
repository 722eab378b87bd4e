/**
 * A repository's Git LFS locks, as the log keeps them: one immutable table of every lock, sorted by
 * path and stored under its content address (`lfs/locks/<sha256>.json`), which the index names.
 * A lock or an unlock is an entry of the log that swaps in the next table by the same
 * compare-and-swap as a push, so two clients can never both hold a path and the log says who
 * locked what and when. The API's view of a lock:
 * https://github.com/git-lfs/git-lfs/blob/main/docs/api/locking.md
 */

/** Who holds a lock: the token that took it (by name, and id unless it is the configured admin token). */
export interface LockOwner {
  readonly name: string;
  readonly tokenId?: string;
}

export interface LockRecord {
  readonly id: string;
  readonly path: string;
  /** RFC 3339. */
  readonly lockedAt: string;
  readonly owner: LockOwner;
}

export interface LockTable {
  readonly v: 1;
  /** Sorted by path, one lock per path. */
  readonly locks: readonly LockRecord[];
}

/** A lock as the locking API shows it. */
export interface LockView {
  readonly id: string;
  readonly path: string;
  readonly locked_at: string;
  readonly owner: { readonly name: string };
}

export function lockView(lock: LockRecord): LockView {
  return { id: lock.id, path: lock.path, locked_at: lock.lockedAt, owner: { name: lock.owner.name } };
}

/** Whether `owner` is the holder of `lock`: the same token (the configured admin token by its name). */
export function ownedBy(lock: LockRecord, owner: LockOwner): boolean {
  if (lock.owner.tokenId !== undefined || owner.tokenId !== undefined)
    return lock.owner.tokenId === owner.tokenId;
  return lock.owner.name === owner.name;
}

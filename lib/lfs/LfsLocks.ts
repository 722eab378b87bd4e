/**
 * Git LFS file locks (https://github.com/git-lfs/git-lfs/blob/main/docs/api/locking.md), kept in
 * the log: each lock and unlock is an entry published by the same compare-and-swap as a push,
 * which swaps in the repository's next lock table (lockTable.ts). A lock is decided against the
 * very index its CAS replaces, so two clients racing for one path cannot both get it, and the log
 * records who took and released every lock, and when.
 */
import { randomBytes } from 'node:crypto';
import { encodeJson, sha256 } from '../wal/indexCodec.js';
import { lfsLocksKey } from '../wal/keys.js';
import type { Publisher, StateChange, StateDecision } from '../wal/Publisher.js';
import type { Identity, RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { InvalidLfsRequest, LockConflict, LockNotFound, LockNotOwned, TooManyLocks } from './errors.js';
import {
  type LockOwner,
  type LockRecord,
  type LockTable,
  type LockView,
  lockView,
  ownedBy,
} from './lockTable.js';

/** Locks one repository may hold: a table of them is rewritten by every lock and unlock. */
export const MAX_LOCKS = 10_000;
/** Locks one page of a listing holds at most (and by default). */
export const MAX_PAGE = 1000;
const DEFAULT_PAGE = 100;
/** Lock tables kept in memory, by key (they never change). */
const CACHED_TABLES = 256;

export interface LfsLocksOptions {
  readonly wal: Wal;
  readonly publisher: Publisher;
  readonly maxLocks?: number;
  readonly now?: () => Date;
}

export interface LockPage {
  readonly locks: readonly LockView[];
  readonly next_cursor?: string;
}

export interface VerifyPage {
  readonly ours: readonly LockView[];
  readonly theirs: readonly LockView[];
  readonly next_cursor?: string;
}

export interface LockResult {
  readonly lock: LockView;
  /** The entry that recorded it. */
  readonly seq: number | null;
}

export class LfsLocks {
  readonly #wal: Wal;
  readonly #publisher: Publisher;
  readonly #max: number;
  readonly #now: () => Date;
  readonly #tables = new Map<string, readonly LockRecord[]>();

  constructor(options: LfsLocksOptions) {
    this.#wal = options.wal;
    this.#publisher = options.publisher;
    this.#max = options.maxLocks ?? MAX_LOCKS;
    this.#now = options.now ?? (() => new Date());
  }

  /** Every lock of the repository at `index`, sorted by path. */
  async locks(index: RepoIndex): Promise<readonly LockRecord[]> {
    const pointer = index.lfsLocks;
    if (pointer === undefined) return [];
    const cached = this.#tables.get(pointer.key);
    if (cached) return cached;
    const table = await this.#wal.store.get(pointer.key);
    if (table.notModified) throw new Error(`unexpected 304 for ${pointer.key}`);
    const locks = (JSON.parse(table.body.toString('utf8')) as LockTable).locks;
    if (this.#tables.size >= CACHED_TABLES) this.#tables.delete(this.#tables.keys().next().value as string);
    this.#tables.set(pointer.key, locks);
    return locks;
  }

  /** A page of locks, by path; `path` or `id` pick one lock. */
  async list(
    index: RepoIndex,
    filter: { path?: string; id?: string; cursor?: string; limit?: number },
  ): Promise<LockPage> {
    const all = (await this.locks(index)).filter(
      (l) =>
        (filter.path === undefined || l.path === filter.path) &&
        (filter.id === undefined || l.id === filter.id),
    );
    const { page, next } = paged(all, filter.cursor, filter.limit);
    return { locks: page.map(lockView), ...(next !== undefined ? { next_cursor: next } : {}) };
  }

  /** A page of locks split into those `owner` holds and those others hold (git-lfs asks before a push). */
  async verify(
    index: RepoIndex,
    owner: LockOwner,
    options: { cursor?: string; limit?: number },
  ): Promise<VerifyPage> {
    const { page, next } = paged(await this.locks(index), options.cursor, options.limit);
    return {
      ours: page.filter((l) => ownedBy(l, owner)).map(lockView),
      theirs: page.filter((l) => !ownedBy(l, owner)).map(lockView),
      ...(next !== undefined ? { next_cursor: next } : {}),
    };
  }

  /** Takes a lock on `path` for `who`; throws LockConflict when anyone holds one on it. */
  async lock(repo: string, path: string, who: Identity): Promise<LockResult> {
    const lock: LockRecord = {
      id: randomBytes(8).toString('hex'),
      path: checkPath(path),
      lockedAt: this.#now().toISOString(),
      owner: ownerOf(who),
    };
    const change: StateChange = {
      kind: 'lock',
      decide: async (index) => {
        const locks = await this.locks(index);
        const held = locks.find((l) => l.path === lock.path);
        if (held) throw new LockConflict(lockView(held));
        if (locks.length >= this.#max) throw new TooManyLocks(this.#max);
        return this.#decision(repo, [...locks, lock], {
          action: 'lock',
          id: lock.id,
          path: lock.path,
          owner: lock.owner,
        });
      },
    };
    const result = await this.#publisher.publish({
      repo,
      commands: [],
      atomic: false,
      who,
      packs: [],
      change,
    });
    return { lock: lockView(lock), seq: result.seq };
  }

  /**
   * Releases lock `id`. Only its holder may, unless `force` (the caller checked that `who` is an
   * admin of the repository).
   */
  async unlock(repo: string, id: string, who: Identity, force: boolean): Promise<LockResult> {
    let released: LockRecord | undefined;
    const change: StateChange = {
      kind: 'lock',
      decide: async (index) => {
        const locks = await this.locks(index);
        const lock = locks.find((l) => l.id === id);
        if (lock === undefined) throw new LockNotFound(id);
        const mine = ownedBy(lock, ownerOf(who));
        if (!mine && !force) throw new LockNotOwned(lockView(lock));
        released = lock;
        return this.#decision(
          repo,
          locks.filter((l) => l.id !== id),
          {
            action: 'unlock',
            id,
            path: lock.path,
            owner: lock.owner,
            ...(mine ? {} : { forced: true as const }),
          },
        );
      },
    };
    const result = await this.#publisher.publish({
      repo,
      commands: [],
      atomic: false,
      who,
      packs: [],
      change,
    });
    if (released === undefined)
      throw new Error(`the unlock of ${id} in ${repo} was decided without its lock`);
    return { lock: lockView(released), seq: result.seq };
  }

  #decision(
    repo: string,
    locks: LockRecord[],
    event: NonNullable<StateDecision['entry']['lock']>,
  ): StateDecision {
    if (locks.length === 0) return { index: { lfsLocks: undefined }, entry: { lock: event }, objects: [] };
    const sorted = locks.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const table: LockTable = { v: 1, locks: sorted };
    const body = encodeJson(table);
    const key = lfsLocksKey(repo, sha256(body));
    this.#tables.set(key, sorted);
    return {
      index: { lfsLocks: { key, count: sorted.length } },
      entry: { lock: event },
      objects: [{ key, body }],
    };
  }
}

/** The token a lock belongs to. */
export function ownerOf(who: Identity): LockOwner {
  return { name: who.token, ...(who.tokenId ? { tokenId: who.tokenId } : {}) };
}

/**
 * A path as git-lfs sends it: relative to the repository's root, `/` between segments. Locks are
 * labels, but one that could name no file is refused rather than kept forever.
 */
function checkPath(path: string): string {
  if (
    path === '' ||
    Buffer.byteLength(path) > 4096 ||
    path.startsWith('/') ||
    [...path].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) ||
    path.split('/').some((s) => s === '' || s === '.' || s === '..')
  )
    throw new InvalidLfsRequest(
      `invalid path to lock: ${JSON.stringify(path)} (a file's path in the repository)`,
    );
  return path;
}

/** A page of `items` (sorted by path) after `cursor` (the path the page starts at). */
function paged(
  items: readonly LockRecord[],
  cursor: string | undefined,
  limit: number | undefined,
): { page: readonly LockRecord[]; next?: string } {
  const size = Math.min(Math.max(1, limit ?? DEFAULT_PAGE), MAX_PAGE);
  const start = cursor === undefined ? 0 : items.findIndex((l) => l.path >= cursor);
  if (start < 0) return { page: [] };
  const page = items.slice(start, start + size);
  const next = items[start + size]?.path;
  return next === undefined ? { page } : { page, next };
}

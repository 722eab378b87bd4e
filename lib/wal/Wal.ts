/**
 * Reading a repository's log: the index, the refs it implies, and the items between two
 * sequence numbers. Writing is the Publisher's job; both share this view of the store.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreError, NotFound } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { ImmutableCache } from './ImmutableCache.js';
import { decodeIndex, decodeJson, emptyIndex, encodeJson } from './indexCodec.js';
import { indexKey } from './keys.js';
import type { LoadedIndex, LogItem, RefTable, RepoIndex, Segment } from './types.js';
import { ZERO_OID } from './types.js';

export class RepoExists extends Error {
  readonly code = 'RepoExists';
  constructor(repo: string) {
    super(`repository ${repo} already exists`);
  }
}

export class Wal {
  readonly store: ObjectStore;
  readonly #immutable: ImmutableCache;
  /** The newest index this process has seen per repository: a hint, never proof of freshness. */
  readonly #known = new Map<string, LoadedIndex>();
  /** When each known index was last confirmed current by a read or a write of this process. */
  readonly #confirmed = new Map<string, number>();

  constructor(store: ObjectStore, immutable = new ImmutableCache()) {
    this.store = store;
    this.#immutable = immutable;
  }

  /** Reads the current index (one conditional GET when this process has seen it before). */
  async readIndex(repo: string): Promise<LoadedIndex | null> {
    const key = indexKey(repo);
    const known = this.#known.get(repo);
    try {
      const got = await retryReads(() =>
        this.store.get(key, known ? { ifNoneMatch: known.etag } : undefined),
      );
      if (got.notModified) {
        if (known && known.etag === got.etag) {
          this.#confirmed.set(repo, Date.now());
          return known;
        }
        return this.readIndexFully(repo);
      }
      const loaded = { index: decodeIndex(key, got.body), etag: got.etag };
      this.remember(repo, loaded);
      return loaded;
    } catch (error) {
      if (isStoreError(error, 'NotFound')) {
        this.#known.delete(repo);
        return null;
      }
      throw error;
    }
  }

  async readIndexFully(repo: string): Promise<LoadedIndex | null> {
    this.#known.delete(repo);
    return this.readIndex(repo);
  }

  /** The known index if it was confirmed current within `maxAgeMs`. */
  recentIndex(repo: string, maxAgeMs: number): LoadedIndex | undefined {
    const at = this.#confirmed.get(repo);
    return at !== undefined && Date.now() - at <= maxAgeMs ? this.#known.get(repo) : undefined;
  }

  /** The last index seen by this process, if any (a starting guess for a CAS). */
  knownIndex(repo: string): LoadedIndex | undefined {
    return this.#known.get(repo);
  }

  remember(repo: string, loaded: LoadedIndex): void {
    const known = this.#known.get(repo);
    if (known === undefined || known.index.seq <= loaded.index.seq) {
      this.#known.set(repo, loaded);
      this.#confirmed.set(repo, Date.now());
    }
  }

  /**
   * Creates an empty repository; throws RepoExists when the index is already there. A create that
   * collides (409) or whose outcome is unknown (5xx) is settled by reading the index back.
   */
  async createRepo(repo: string, options: { public: boolean; now?: Date }): Promise<LoadedIndex> {
    const index = emptyIndex(repo, { public: options.public, now: options.now ?? new Date() });
    const body = encodeJson(index);
    for (let attempt = 1; ; attempt++) {
      try {
        const { etag } = await this.store.put(indexKey(repo), body, {
          ifNoneMatch: '*',
          contentType: 'application/json',
        });
        const loaded = { index, etag };
        this.remember(repo, loaded);
        return loaded;
      } catch (error) {
        if (isStoreError(error, 'PreconditionFailed')) throw new RepoExists(repo);
        if (!isStoreError(error, 'ConditionalConflict') && !isStoreError(error, 'StoreUnavailable'))
          throw error;
        const existing = await this.readIndexFully(repo);
        if (existing !== null) {
          if (existing.index.created === index.created && existing.index.seq === 0) return existing;
          throw new RepoExists(repo);
        }
        if (attempt >= 5) throw error;
        await sleep(Math.round(Math.random() * 20 * 2 ** attempt));
      }
    }
  }

  /** The values of `names` at `index` (ZERO_OID for a ref that does not exist). */
  async resolveRefs(index: RepoIndex, names: Iterable<string>): Promise<Map<string, string>> {
    const wanted = new Set(names);
    const found = new Map<string, string>();
    for (let i = index.tail.length - 1; i >= 0 && found.size < wanted.size; i--) {
      const item = index.tail[i];
      if (item === undefined) continue;
      for (let u = item.updates.length - 1; u >= 0; u--) {
        const update = item.updates[u];
        if (update && wanted.has(update.ref) && !found.has(update.ref)) found.set(update.ref, update.new);
      }
    }
    if (found.size < wanted.size && index.table) {
      const table = await this.refTableMap(index.table.key);
      for (const name of wanted) if (!found.has(name)) found.set(name, table.get(name) ?? ZERO_OID);
    }
    for (const name of wanted) if (!found.has(name)) found.set(name, ZERO_OID);
    return found;
  }

  /** Every ref at `index`, without deleted ones. */
  async allRefs(index: RepoIndex): Promise<Map<string, string>> {
    const refs = index.table ? new Map(await this.refTableMap(index.table.key)) : new Map();
    for (const item of index.tail) applyUpdates(refs, item);
    return refs;
  }

  /** Items with seq in (afterSeq, index.seq], oldest first, reading only the segments needed. */
  async itemsAfter(index: RepoIndex, afterSeq: number): Promise<LogItem[]> {
    if (afterSeq >= index.seq) return [];
    const fromTail = index.tail.filter((item) => item.seq > afterSeq);
    const firstTail = index.tail[0]?.seq ?? index.seq + 1;
    if (afterSeq + 1 >= firstTail) return fromTail;
    const needed = index.segments.filter((s) => s.to > afterSeq);
    const segments = await Promise.all(needed.map((s) => this.segment(s.key)));
    const older = segments.flatMap((s) => s.items.filter((item) => item.seq > afterSeq));
    return [...older, ...fromTail];
  }

  async segment(key: string): Promise<Segment> {
    return this.#immutable.get(key, async () => decodeJson<Segment>(key, await this.#body(key)));
  }

  async refTableMap(key: string): Promise<ReadonlyMap<string, string>> {
    return this.#immutable.get(`map:${key}`, async () => {
      const table = decodeJson<RefTable>(key, await this.#body(key));
      return new Map(table.refs.map(([name, oid]) => [name, oid] as [string, string]));
    });
  }

  /** Lets a writer seed the cache with a table it just wrote. */
  seedTable(key: string, refs: ReadonlyMap<string, string>): void {
    this.#immutable.set(`map:${key}`, refs);
  }

  seedSegment(key: string, segment: Segment): void {
    this.#immutable.set(key, segment);
  }

  async #body(key: string): Promise<Buffer> {
    const got = await retryReads(() => this.store.get(key));
    if (got.notModified) throw new NotFound(key);
    return got.body;
  }
}

export function applyUpdates(refs: Map<string, string>, item: Pick<LogItem, 'updates'>): void {
  for (const update of item.updates) {
    if (update.new === ZERO_OID) refs.delete(update.ref);
    else refs.set(update.ref, update.new);
  }
}

/**
 * A repository's log in the store. It reads the index, the refs it implies and the items between
 * two sequence numbers, and it makes the index's two kinds of write: the create-only first index
 * of a new repository (createRepo) and the conditional swap that publishes (swapIndex). Deciding
 * what to publish, and every other write that goes with it, is the Publisher's job.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type RefValue, ZERO_OID } from '../protocol/refValue.js';
import { isStoreError, NotFound } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { mapLimit } from '../util/mapLimit.js';
import { RepoExists } from './errors.js';
import { ImmutableCache } from './ImmutableCache.js';
import { decodeImmutable, decodeIndex, emptyIndex, encodeJson } from './indexCodec.js';
import { chunkKey, indexKey, pageKey } from './keys.js';
import { findRow, isTombstone, mergeRows, rowsToMap, rowValue } from './refRows.js';
import type {
  EntryObject,
  LoadedIndex,
  LogChunk,
  LogItem,
  LogPage,
  RefRow,
  RefTable,
  RepoIndex,
  TablePointer,
} from './types.js';
import { CHUNK_SIZE, chunkedUpTo, PAGE_SIZE } from './types.js';

export class Wal {
  readonly store: ObjectStore;
  readonly #immutable: ImmutableCache;
  /** The newest index this process has seen per repository: a hint, never proof of freshness. */
  readonly #known = new Map<string, LoadedIndex>();
  /** When each known index was last confirmed current by a read or a write of this process. */
  readonly #confirmed = new Map<string, number>();

  /** The clock that dates confirmations (milliseconds). */
  readonly #now: () => number;

  constructor(store: ObjectStore, options: { immutable?: ImmutableCache; now?: () => number } = {}) {
    this.store = store;
    this.#immutable = options.immutable ?? new ImmutableCache();
    this.#now = options.now ?? Date.now;
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
          this.#confirmed.set(repo, this.#now());
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
    return at !== undefined && this.#now() - at <= maxAgeMs ? this.#known.get(repo) : undefined;
  }

  /** Takes back the confirmation of the known index: the next `recentIndex` finds none. */
  unconfirm(repo: string): void {
    this.#confirmed.delete(repo);
  }

  /** The last index seen by this process, if any (a starting guess for a CAS). */
  knownIndex(repo: string): LoadedIndex | undefined {
    return this.#known.get(repo);
  }

  /**
   * Swaps in `next` as the index of `repo` if the index is still the one read with `etag` (the
   * conditional PUT that publishes, docs/architecture.md invariant 1), and remembers it. A lost
   * race throws the store's PreconditionFailed or ConditionalConflict; a StoreUnavailable leaves
   * the outcome unknown. Only the Publisher calls it.
   */
  async swapIndex(repo: string, next: RepoIndex, etag: string): Promise<LoadedIndex> {
    const put = await this.store.put(indexKey(repo), encodeJson(next), {
      ifMatch: etag,
      contentType: 'application/json',
    });
    const landed = { index: next, etag: put.etag };
    this.remember(repo, landed);
    return landed;
  }

  remember(repo: string, loaded: LoadedIndex): void {
    const known = this.#known.get(repo);
    if (known === undefined || known.index.seq <= loaded.index.seq) {
      this.#known.set(repo, loaded);
      this.#confirmed.set(repo, this.#now());
    }
  }

  /**
   * Creates an empty repository; throws RepoExists when the index is already there. A create that
   * collides (409) or whose outcome is unknown (5xx) is settled by reading the index back.
   */
  async createRepo(repo: string, options: { public: boolean; now?: Date }): Promise<LoadedIndex> {
    const index = emptyIndex(repo, { public: options.public, now: options.now ?? new Date(this.#now()) });
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
        const refused = isStoreError(error, 'PreconditionFailed');
        if (
          !refused &&
          !isStoreError(error, 'ConditionalConflict') &&
          !isStoreError(error, 'StoreUnavailable')
        )
          throw error;
        const existing = await this.readIndexFully(repo);
        if (existing !== null) {
          if (!refused && existing.index.created === index.created && existing.index.seq === 0)
            return existing;
          throw new RepoExists(repo);
        }
        // Refused, yet nothing is there: the index was deleted in between, or the store's answer
        // was wrong. Either way the create has not happened, so it is tried again.
        if (attempt >= 5) throw refused ? new RepoExists(repo) : error;
        await sleep(Math.round(Math.random() * 20 * 2 ** attempt));
      }
    }
  }

  /** The object ids of `names` at `index` (ZERO_OID for a ref that does not exist). */
  async resolveRefs(index: RepoIndex, names: Iterable<string>): Promise<Map<string, string>> {
    const values = await this.refValues(index, names);
    return new Map([...values].map(([name, value]) => [name, value?.oid ?? ZERO_OID]));
  }

  /** The values of `names` at `index` (null for a ref that does not exist). */
  async refValues(index: RepoIndex, names: Iterable<string>): Promise<Map<string, RefValue | null>> {
    const found = new Map<string, RefValue | null>();
    const missing: string[] = [];
    for (const name of new Set(names)) {
      const row = findRow(index.recent, name);
      if (row) found.set(name, isTombstone(row) ? null : rowValue(row));
      else missing.push(name);
    }
    if (missing.length === 0) return found;
    const tables = await Promise.all(index.tables.map((t) => this.table(t.key)));
    for (const name of missing) {
      let value: RefValue | null = null;
      for (let t = tables.length - 1; t >= 0; t--) {
        const row = findRow((tables[t] as RefTable).rows, name);
        if (row) {
          value = isTombstone(row) ? null : rowValue(row);
          break;
        }
      }
      found.set(name, value);
    }
    return found;
  }

  /** Every ref at `index`. */
  async allRefs(index: RepoIndex): Promise<Map<string, RefValue>> {
    return rowsToMap(mergeRows(await this.stackRows(index.tables), index.recent, true));
  }

  /** The rows of a table stack merged into one complete, sorted list (cached per stack). */
  async stackRows(tables: readonly TablePointer[]): Promise<readonly RefRow[]> {
    if (tables.length === 0) return [];
    const id = `stack:${tables.map((t) => t.key).join(',')}`;
    return this.#immutable.get(id, async () => {
      const loaded = await Promise.all(tables.map((t) => this.table(t.key)));
      let rows: readonly RefRow[] = [];
      for (const [i, table] of loaded.entries())
        rows = i === 0 ? table.rows : mergeRows(rows, table.rows, false);
      return loaded.length === 1 ? rows : mergeRows([], rows, true);
    });
  }

  /**
   * Items with seq in (afterSeq, upTo], oldest first: from the pages that hold them (read in
   * parallel) and the tail.
   */
  async itemsAfter(index: RepoIndex, afterSeq: number, upTo = index.seq): Promise<LogItem[]> {
    const last = Math.min(upTo, index.seq);
    if (afterSeq >= last) return [];
    const chunked = chunkedUpTo(index);
    const [pages, chunks] = await Promise.all([
      mapLimit(blocks(afterSeq, Math.min(last, index.paged), PAGE_SIZE), 32, (n) => this.page(index, n)),
      mapLimit(blocks(Math.max(afterSeq, index.paged), Math.min(last, chunked), CHUNK_SIZE), 32, (n) =>
        this.chunk(index, n),
      ),
    ]);
    const out: LogItem[] = [];
    for (const items of [...pages.map((p) => p.items), ...chunks.map((c) => c.items), index.tail]) {
      for (const item of items) if (item.seq > afterSeq && item.seq <= last) out.push(item);
    }
    return out;
  }

  async chunk(index: Pick<RepoIndex, 'repo' | 'created'>, chunk: number): Promise<LogChunk> {
    const key = chunkKey(index.repo, index.created, chunk);
    return this.#immutable.get(key, async () => decodeImmutable<LogChunk>(key, await this.#body(key)));
  }

  async page(index: Pick<RepoIndex, 'repo' | 'created'>, page: number): Promise<LogPage> {
    const key = pageKey(index.repo, index.created, page);
    return this.#immutable.get(key, async () => decodeImmutable<LogPage>(key, await this.#body(key)));
  }

  async table(key: string): Promise<RefTable> {
    return this.#immutable.get(key, async () => decodeImmutable<RefTable>(key, await this.#body(key)));
  }

  /** The whole entry object of an item (every update, not just the first few). */
  async entry(key: string): Promise<EntryObject> {
    return this.#immutable.get(key, async () => decodeImmutable<EntryObject>(key, await this.#body(key)));
  }

  /** Lets a writer seed the cache with an immutable object it just wrote. */
  seed(key: string, value: RefTable | LogPage | LogChunk | EntryObject): void {
    this.#immutable.set(key, value);
  }

  async #body(key: string): Promise<Buffer> {
    const got = await retryReads(() => this.store.get(key));
    if (got.notModified) throw new NotFound(key);
    return got.body;
  }
}

/** The numbers of the blocks of `size` items that hold the seqs in (after, last]. */
function blocks(after: number, last: number, size: number): number[] {
  if (after >= last) return [];
  const first = Math.floor(after / size);
  const end = Math.floor((last - 1) / size);
  return Array.from({ length: end - first + 1 }, (_, i) => first + i);
}

/** Applies an item's updates to a ref map (the item must show all of them). */
export function applyUpdates(refs: Map<string, RefValue>, item: Pick<LogItem, 'updates'>): void {
  for (const update of item.updates) {
    if (update.new === ZERO_OID) refs.delete(update.ref);
    else
      refs.set(update.ref, update.peeled ? { oid: update.new, peeled: update.peeled } : { oid: update.new });
  }
}

/**
 * Keeps the index every push rewrites bounded, whatever the length of the log or the number of
 * refs, by moving published state out of it into immutable objects written before the CAS:
 *
 * - Full pages of published items go to `log/<incarnation>/<n>.json`, and until a page is full its
 *   published items go by chunks of a quarter page to `log/<incarnation>/chunk-<n>.json`. Their
 *   keys follow from their position and their content from published items only, so every writer
 *   writes the same object and a lost race leaves nothing wrong behind.
 * - When the recent ref rows outgrow their bound they become a new table on top of the stack, and
 *   the tables above the bottom one are compacted geometrically (a table is merged into the one
 *   below while that one is at most twice its size, as reftable does), so the stack stays
 *   logarithmic and each row is rewritten O(log n) times, n the rows since the bottom table.
 * - The bottom table, the only one holding every ref, is never rewritten by a push: a checkpoint
 *   (made off the push's path) replaces it and every table it covers. So what a push writes
 *   depends on the refs changed since the last checkpoint, never on how many refs there are.
 */
import type { ObjectStore } from '../store/ObjectStore.js';
import { encodeImmutable, encodeJson, sha256 } from './indexCodec.js';
import { chunkKey, pageKey, tableKey } from './keys.js';
import { putImmutable } from './putImmutable.js';
import { mergeRows } from './refRows.js';
import type {
  CheckpointPointer,
  LogChunk,
  LogPage,
  RefRow,
  RefTable,
  RepoIndex,
  TablePointer,
} from './types.js';
import { CHUNK_SIZE, chunkedUpTo, PAGE_SIZE } from './types.js';
import type { Wal } from './Wal.js';

export interface IndexPolicy {
  /** Ref rows the index may hold before they move into a table. */
  readonly maxRecentRows: number;
  /** A table is merged into the one below it while that one has at most this many times its rows. */
  readonly geometricFactor: number;
}

export const DEFAULT_INDEX_POLICY: IndexPolicy = { maxRecentRows: 256, geometricFactor: 2 };

/**
 * Returns `next` bounded: pages written for items already published in `published` (the index
 * `next` was derived from), recent rows moved into a table when there are too many, the stack
 * compacted.
 */
export async function boundIndex(
  wal: Wal,
  store: ObjectStore,
  published: RepoIndex,
  next: RepoIndex,
  policy: IndexPolicy,
): Promise<RepoIndex> {
  const [paged, refs] = await Promise.all([
    writePages(wal, store, published.seq, next),
    boundRefs(wal, store, next, policy),
  ]);
  return { ...next, ...paged, ...refs };
}

async function writePages(
  wal: Wal,
  store: ObjectStore,
  publishedSeq: number,
  index: RepoIndex,
): Promise<Pick<RepoIndex, 'paged' | 'pagedCheckpoint' | 'chunked' | 'tail'>> {
  const chunked = chunkedUpTo(index);
  const fullChunks = Math.floor(publishedSeq / CHUNK_SIZE) * CHUNK_SIZE;
  if (fullChunks <= chunked)
    return { paged: index.paged, pagedCheckpoint: index.pagedCheckpoint, chunked, tail: index.tail };
  const fullPages = Math.floor(publishedSeq / PAGE_SIZE) * PAGE_SIZE;
  const [paged, written] = await Promise.all([
    fullPages > index.paged
      ? writeFullPages(wal, store, index, fullPages)
      : { paged: index.paged, pagedCheckpoint: index.pagedCheckpoint },
    writeChunks(wal, store, index, Math.max(chunked, fullPages), fullChunks),
  ]);
  return {
    ...paged,
    chunked: Math.max(written, paged.paged),
    tail: index.tail.filter((i) => i.seq > fullChunks),
  };
}

/** Writes the pages up to `full` from the chunks and tail that hold their items. */
async function writeFullPages(
  wal: Wal,
  store: ObjectStore,
  index: RepoIndex,
  full: number,
): Promise<Pick<RepoIndex, 'paged' | 'pagedCheckpoint'>> {
  const items = await wal.itemsAfter(index, index.paged, full);
  let before = index.pagedCheckpoint;
  const pages: LogPage[] = [];
  for (let start = index.paged; start < full; start += PAGE_SIZE) {
    const page = items.filter((item) => item.seq > start && item.seq <= start + PAGE_SIZE);
    if (page.length !== PAGE_SIZE) throw new Error(`log of ${index.repo} misses items of a full page`);
    pages.push({ v: 1, page: start / PAGE_SIZE, before, items: page });
    before = lastCheckpoint(page) ?? before;
  }
  await Promise.all(
    pages.map(async (page) => {
      const key = pageKey(index.repo, index.created, page.page);
      await putImmutable(store, key, await encodeImmutable(page));
      wal.seed(key, page);
    }),
  );
  return { paged: full, pagedCheckpoint: before };
}

/** Writes the chunks of the tail's items in (from, to] and returns `to` (both chunk boundaries). */
async function writeChunks(wal: Wal, store: ObjectStore, index: RepoIndex, from: number, to: number) {
  const chunks: LogChunk[] = [];
  for (let start = from; start < to; start += CHUNK_SIZE) {
    const items = index.tail.filter((item) => item.seq > start && item.seq <= start + CHUNK_SIZE);
    if (items.length !== CHUNK_SIZE) throw new Error(`log tail of ${index.repo} misses items of a chunk`);
    chunks.push({ v: 1, chunk: start / CHUNK_SIZE, items });
  }
  await Promise.all(
    chunks.map(async (chunk) => {
      const key = chunkKey(index.repo, index.created, chunk.chunk);
      await putImmutable(store, key, await encodeImmutable(chunk));
      wal.seed(key, chunk);
    }),
  );
  return to;
}

function lastCheckpoint(items: readonly { checkpoint?: CheckpointPointer }[]): CheckpointPointer | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const pointer = items[i]?.checkpoint;
    if (pointer) return pointer;
  }
  return undefined;
}

async function boundRefs(
  wal: Wal,
  store: ObjectStore,
  index: RepoIndex,
  policy: IndexPolicy,
): Promise<Pick<RepoIndex, 'tables' | 'recent'>> {
  if (index.recent.length <= policy.maxRecentRows) return { tables: index.tables, recent: index.recent };
  const complete = index.tables.length === 0;
  const rows = complete ? mergeRows([], index.recent, true) : [...index.recent];
  const top = await writeTable(wal, store, index.repo, index.seq, rows);
  return { tables: await compact(wal, store, index.repo, [...index.tables, top], policy), recent: [] };
}

/** Merges the top of the stack down while the geometric bound is violated, never into the bottom. */
export async function compact(
  wal: Wal,
  store: ObjectStore,
  repo: string,
  tables: TablePointer[],
  policy: IndexPolicy,
): Promise<TablePointer[]> {
  const stack = [...tables];
  for (;;) {
    const upper = stack[stack.length - 1];
    const lower = stack[stack.length - 2];
    if (!upper || !lower || stack.length <= 2 || lower.count > policy.geometricFactor * upper.count)
      return stack;
    const [a, b] = await Promise.all([wal.table(lower.key), wal.table(upper.key)]);
    // Both are deltas: tombstones stay until a checkpoint's complete table replaces them.
    const merged = mergeRows(a.rows, b.rows, false);
    stack.splice(-2, 2, await writeTable(wal, store, repo, upper.seq, merged));
  }
}

/** Writes rows as of `seq` as an immutable table and returns its pointer. */
export async function writeTable(
  wal: Wal,
  store: ObjectStore,
  repo: string,
  seq: number,
  rows: readonly RefRow[],
): Promise<TablePointer> {
  const table: RefTable = { v: 1, seq, rows };
  const json = encodeJson(table);
  const key = tableKey(repo, sha256(json));
  await putImmutable(store, key, await encodeImmutable(table, json));
  wal.seed(key, table);
  return { key, seq, count: rows.length };
}

/**
 * The stack with a checkpoint's complete table in place of every table it covers: tables as of
 * seqs at or before the checkpoint are replaced by it; newer ones (and the recent rows, which
 * hold current values) still overlay it.
 */
export function withCheckpointTable(index: RepoIndex, checkpoint: CheckpointPointer): RepoIndex {
  const bottom = index.tables[0];
  if (bottom !== undefined && bottom.seq > checkpoint.seq) return index;
  const newer = index.tables.filter((t) => t.seq > checkpoint.seq);
  return {
    ...index,
    tables: [{ key: checkpoint.table, seq: checkpoint.seq, count: checkpoint.count }, ...newer],
  };
}

/**
 * The refs of a repository after any entry: the newest checkpoint at or before it (a complete ref
 * table), then the entries after that checkpoint replayed. The log keeps the checkpoint preceding
 * every page (`LogPage.before`), so finding it costs one page read, and a replay is bounded by the
 * checkpoint interval.
 */

import type { RefValue } from '../protocol/refValue.js';
import { mapLimit } from '../util/mapLimit.js';
import { NoSuchEntry } from './errors.js';
import { rowsToMap } from './refRows.js';
import type { CheckpointPointer, LogItem, RefUpdate, RepoIndex } from './types.js';
import { PAGE_SIZE } from './types.js';
import { applyUpdates, type Wal } from './Wal.js';

/** Throws NoSuchEntry unless `seq` names a published entry (0 is the empty repository). */
export function checkSeq(index: RepoIndex, seq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 0 || seq > index.seq)
    throw new NoSuchEntry(index.repo, seq, index.seq);
}

/** The item of entry `seq` (1 <= seq <= index.seq). */
export async function itemAt(wal: Wal, index: RepoIndex, seq: number): Promise<LogItem> {
  checkSeq(index, seq);
  const [item] = await wal.itemsAfter(index, seq - 1, seq);
  if (item === undefined) throw new NoSuchEntry(index.repo, seq, index.seq);
  return item;
}

/** Every update of an item: the item itself when it shows them all, else its entry object. */
export async function fullUpdates(wal: Wal, item: LogItem): Promise<readonly RefUpdate[]> {
  if (item.count === undefined || item.count <= item.updates.length) return item.updates;
  return (await wal.entry(item.key)).updates;
}

/** Items with every update filled in, fetching the entries that need it in parallel. */
export async function withFullUpdates(wal: Wal, items: readonly LogItem[]): Promise<LogItem[]> {
  return mapLimit(items, 16, async (item) => {
    const updates = await fullUpdates(wal, item);
    return updates === item.updates ? item : { ...item, updates };
  });
}

/** The newest checkpoint whose state is at or before `seq` that the log can find in one read. */
export async function checkpointAt(
  wal: Wal,
  index: RepoIndex,
  seq: number,
): Promise<CheckpointPointer | null> {
  checkSeq(index, seq);
  if (index.checkpoint && index.checkpoint.seq <= seq) return index.checkpoint;
  if (seq === 0) return null;
  const candidates: (CheckpointPointer | null)[] = [];
  let items: readonly LogItem[];
  if (seq > index.paged) {
    // Past the last full page: at most three chunks and the tail, read in parallel.
    candidates.push(index.pagedCheckpoint);
    items = await wal.itemsAfter(index, index.paged, seq);
  } else {
    const page = await wal.page(index, Math.floor((seq - 1) / PAGE_SIZE));
    candidates.push(page.before);
    items = page.items;
  }
  for (const item of items) if (item.checkpoint) candidates.push(item.checkpoint);
  let best: CheckpointPointer | null = null;
  for (const c of candidates) if (c && c.seq <= seq && (best === null || c.seq > best.seq)) best = c;
  return best;
}

/** The refs as they were right after entry `seq` (0: none). */
export async function refsAt(wal: Wal, index: RepoIndex, seq: number): Promise<Map<string, RefValue>> {
  checkSeq(index, seq);
  if (seq === index.seq) return wal.allRefs(index);
  const checkpoint = await checkpointAt(wal, index, seq);
  const refs = checkpoint ? rowsToMap((await wal.table(checkpoint.table)).rows) : new Map<string, RefValue>();
  const items = await withFullUpdates(wal, await wal.itemsAfter(index, checkpoint?.seq ?? 0, seq));
  for (const item of items) applyUpdates(refs, item);
  return refs;
}

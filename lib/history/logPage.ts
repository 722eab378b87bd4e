/**
 * One page of the log, newest first: `limit` items ending at `before - 1` (or at the newest).
 * Costs at most ceil(limit / PAGE_SIZE) + 1 page reads, in parallel, whatever the log's length.
 */
import type { LogItem, RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';

export interface LogSlice {
  readonly items: readonly LogItem[];
  /** Pass as `before` for the next (older) page; null at the first entry. */
  readonly next: number | null;
  /** The newest sequence number. */
  readonly last: number;
}

export const MAX_LOG_LIMIT = 200;

export async function logPage(
  wal: Wal,
  index: RepoIndex,
  options: { before?: number; limit?: number } = {},
): Promise<LogSlice> {
  const limit = Math.min(Math.max(1, options.limit ?? 50), MAX_LOG_LIMIT);
  const end = Math.min(index.seq, Math.max(0, (options.before ?? index.seq + 1) - 1));
  const start = Math.max(0, end - limit);
  const items = (await wal.itemsAfter(index, start, end)).reverse();
  return { items, next: start > 0 ? start + 1 : null, last: index.seq };
}

/**
 * `narwal who REPO REF`: every move of one ref, newest first. Reads every page of the log in
 * parallel (a page holds PAGE_SIZE items), plus the entry objects of the few items too large
 * for their summary to show every update.
 */

import { withFullUpdates } from '../wal/stateAt.js';
import type { Identity, LogItem, RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';

export interface RefMove {
  readonly seq: number;
  readonly time: string;
  readonly who: Identity;
  readonly kind: NonNullable<LogItem['kind']> | 'push';
  readonly old: string;
  readonly new: string;
  /** Set on a rewind: the entry whose state it restored. */
  readonly rewindTo?: number;
}

export async function refMoves(wal: Wal, index: RepoIndex, ref: string): Promise<RefMove[]> {
  const all = await wal.itemsAfter(index, 0);
  // Only items that might hide the ref need their entry object.
  const partial = all.filter((item) => item.count !== undefined && item.count > item.updates.length);
  const filled = new Map((await withFullUpdates(wal, partial)).map((item) => [item.seq, item]));
  const moves: RefMove[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const item = filled.get((all[i] as LogItem).seq) ?? (all[i] as LogItem);
    for (const update of item.updates) {
      if (update.ref !== ref) continue;
      moves.push({
        seq: item.seq,
        time: item.time,
        who: item.who,
        kind: item.kind ?? 'push',
        old: update.old,
        new: update.new,
        ...(item.rewind ? { rewindTo: item.rewind.to } : {}),
      });
    }
  }
  return moves;
}

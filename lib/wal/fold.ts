/**
 * Keeps the index small: when the tail grows past its bounds, its items move into an immutable
 * segment and the refs they set into a new ref table, both written create-only before the CAS
 * that swaps them in. A push therefore rewrites an index of bounded size whatever the length of
 * the log.
 */
import type { ObjectStore } from '../store/ObjectStore.js';
import { encodeJson, sha256 } from './indexCodec.js';
import { segmentKey, tableKey } from './keys.js';
import { putImmutable } from './putImmutable.js';
import type { RefTable, RepoIndex, Segment } from './types.js';
import type { Wal } from './Wal.js';

export interface FoldPolicy {
  /** Fold when the tail holds more items than this... */
  readonly maxTailItems: number;
  /** ...or more ref updates than this in total. */
  readonly maxTailUpdates: number;
}

export const DEFAULT_FOLD_POLICY: FoldPolicy = { maxTailItems: 32, maxTailUpdates: 512 };

export function needsFold(index: RepoIndex, policy: FoldPolicy): boolean {
  if (index.tail.length > policy.maxTailItems) return true;
  let updates = 0;
  for (const item of index.tail) updates += item.updates.length;
  return updates > policy.maxTailUpdates;
}

/** Returns `index` with its whole tail folded into a new table and a new segment. */
export async function foldTail(wal: Wal, store: ObjectStore, index: RepoIndex): Promise<RepoIndex> {
  const first = index.tail[0];
  if (first === undefined) return index;
  const refs = await wal.allRefs(index);
  const segment: Segment = { v: 1, from: first.seq, to: index.seq, items: index.tail };
  const segmentBody = encodeJson(segment);
  const sKey = segmentKey(index.repo, sha256(segmentBody));
  const [tKey] = await Promise.all([
    writeRefTable(wal, store, index.repo, index.seq, refs),
    putImmutable(store, sKey, segmentBody),
  ]);
  wal.seedSegment(sKey, segment);
  return {
    ...index,
    table: { key: tKey, seq: index.seq, count: refs.size },
    segments: [...index.segments, { key: sKey, from: segment.from, to: segment.to }],
    tail: [],
  };
}

/** Writes every ref as of `seq` as an immutable table and returns its key. */
export async function writeRefTable(
  wal: Wal,
  store: ObjectStore,
  repo: string,
  seq: number,
  refs: ReadonlyMap<string, string>,
): Promise<string> {
  // Byte order, as git sorts refs.
  const sorted = [...refs.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const table: RefTable = { v: 1, seq, refs: sorted };
  const body = encodeJson(table);
  const key = tableKey(repo, sha256(body));
  await putImmutable(store, key, body);
  wal.seedTable(key, refs);
  return key;
}

/**
 * What a version 2 pack index (`.idx`, gitformat-pack(5)) says about its pack: the objects in it
 * and the pack's trailing checksum, which is the hash index-pack names the pack by and the one a
 * `packfile-uris` line must give (packfile-uri.txt).
 *
 * Layout: `\377tOc`, version 2, a fan-out table of 256 counts, the sorted object names, their
 * CRCs, their offsets (and 8-byte offsets for large packs), then the pack's checksum and the
 * index's own.
 */

const MAGIC = 0xff744f63;
const HASH_BYTES = 20;
const FANOUT_AT = 8;
const NAMES_AT = FANOUT_AT + 256 * 4;

export interface PackIndex {
  /** The objects of the pack, as hex, sorted. */
  readonly oids: readonly string[];
  /** Where each of `oids` starts in the pack, in the same order. */
  readonly offsets: readonly number[];
  /** The pack's trailing checksum, as hex. */
  readonly packHash: string;
}

/** Thrown for bytes that are not a version 2 SHA-1 pack index. */
export class InvalidPackIndex extends Error {
  readonly code = 'InvalidPackIndex';
}

/**
 * The object names of a pack index where they lie, for a caller that compares them as bytes
 * (ObjectList) instead of making a string of each.
 */
export interface PackNames {
  readonly count: number;
  /** The index itself: the name of object `i` (in sorted order) is at `nameAt(i)`, 20 bytes. */
  readonly bytes: Buffer;
  nameAt(i: number): number;
  /** The pack's trailing checksum, as hex. */
  readonly packHash: string;
}

export function readPackNames(idx: Buffer): PackNames {
  const count = checkedCount(idx);
  return {
    count,
    bytes: idx,
    nameAt: (i) => NAMES_AT + i * HASH_BYTES,
    packHash: idx.toString('hex', idx.length - 2 * HASH_BYTES, idx.length - HASH_BYTES),
  };
}

/** The object count of a well-formed index, or InvalidPackIndex. */
function checkedCount(idx: Buffer): number {
  if (idx.length < NAMES_AT + 2 * HASH_BYTES || idx.readUInt32BE(0) !== MAGIC || idx.readUInt32BE(4) !== 2)
    throw new InvalidPackIndex('not a version 2 pack index');
  const count = idx.readUInt32BE(NAMES_AT - 4);
  // Names, CRCs and 4-byte offsets, then at least the two checksums.
  if (idx.length < NAMES_AT + count * (HASH_BYTES + 8) + 2 * HASH_BYTES)
    throw new InvalidPackIndex('the pack index is shorter than its object count says');
  return count;
}

export function readPackIndex(idx: Buffer): PackIndex {
  const count = checkedCount(idx);
  const oids: string[] = new Array(count);
  const offsets: number[] = new Array(count);
  const smallAt = NAMES_AT + count * (HASH_BYTES + 4);
  const largeAt = smallAt + count * 4;
  for (let i = 0; i < count; i++) {
    const at = NAMES_AT + i * HASH_BYTES;
    oids[i] = idx.toString('hex', at, at + HASH_BYTES);
    const small = idx.readUInt32BE(smallAt + i * 4);
    if (small < 0x80000000) offsets[i] = small;
    else {
      // Past 2 GiB: an index into the table of 8-byte offsets after the 4-byte ones.
      const large = largeAt + (small & 0x7fffffff) * 8;
      if (large + 8 > idx.length - 2 * HASH_BYTES)
        throw new InvalidPackIndex('the pack index names a large offset it does not hold');
      offsets[i] = Number(idx.readBigUInt64BE(large));
    }
  }
  const packHash = idx.toString('hex', idx.length - 2 * HASH_BYTES, idx.length - HASH_BYTES);
  return { oids, offsets, packHash };
}

/**
 * How many distinct objects the packs hold together: each index lists its names sorted, so one
 * merge of the lists counts each name once, however many of the packs hold it.
 */
export function distinctObjectCount(packs: readonly PackNames[]): number {
  if (packs.length === 1) return packs[0]?.count ?? 0;
  const heads = packs.map((pack) => ({ pack, i: 0 }));
  let distinct = 0;
  for (;;) {
    let least: { pack: PackNames; i: number } | undefined;
    for (const head of heads)
      if (
        head.i < head.pack.count &&
        (least === undefined || nameOrder(head, least.pack.bytes, least.pack.nameAt(least.i)) < 0)
      )
        least = head;
    if (least === undefined) return distinct;
    distinct++;
    const bytes = least.pack.bytes;
    const at = least.pack.nameAt(least.i);
    for (const head of heads) if (head.i < head.pack.count && nameOrder(head, bytes, at) === 0) head.i++;
  }
}

/** How the name at a list's head sorts against the 20 bytes at `at` of `bytes`. */
function nameOrder(head: { pack: PackNames; i: number }, bytes: Buffer, at: number): number {
  const from = head.pack.nameAt(head.i);
  return head.pack.bytes.compare(bytes, at, at + HASH_BYTES, from, from + HASH_BYTES);
}

/**
 * Whether every object of `pack` is in one of `others`: found in each by the index's fan-out
 * table (the range of names with its first byte) and a binary search in that range.
 */
export function heldByOthers(pack: PackNames, others: readonly PackNames[]): boolean {
  for (let i = 0; i < pack.count; i++) {
    const at = pack.nameAt(i);
    if (!others.some((other) => holds(other, pack.bytes, at))) return false;
  }
  return true;
}

function holds(pack: PackNames, bytes: Buffer, at: number): boolean {
  const first = bytes[at] as number;
  let lo = first === 0 ? 0 : pack.bytes.readUInt32BE(FANOUT_AT + (first - 1) * 4);
  let hi = pack.bytes.readUInt32BE(FANOUT_AT + first * 4);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const from = pack.nameAt(mid);
    const order = pack.bytes.compare(bytes, at, at + HASH_BYTES, from, from + HASH_BYTES);
    if (order === 0) return true;
    if (order < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

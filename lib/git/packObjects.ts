/**
 * The objects of packs git has just written and checked (a push's received packs), read in this
 * process: their types and sizes, and the contents of the few a push looks into (Git LFS pointers,
 * annotated tags). Asking `git cat-file` instead costs a process per question, and a fork of this
 * process costs more the larger it grows; a push asked three such questions.
 *
 * Formats (gitformat-pack(5)): a version 2 index lists the sorted object names, then their CRCs,
 * then 31-bit offsets (with a table of 64-bit ones beyond 2 GiB). A pack entry starts with a
 * header of type and inflated size in a little-endian base-128 varint, then, for an offset delta,
 * the distance back to its base (a big-endian varint with an offset added per byte), for a
 * reference delta the base's name, and then the zlib stream. A delta is its base's size, the
 * result's size, and instructions that copy ranges of the base or insert literal bytes.
 *
 * Only packs git already validated are read here (index-pack --strict ran on them), so this reader
 * trusts their structure, but stays bounded: a pack over `maxPackBytes` is not read at all, and
 * the bytes inflated to rebuild contents are capped, an answer past the cap being "unknown" (the
 * caller then asks git).
 */
import { readFile, stat } from 'node:fs/promises';
import { constants, inflateSync } from 'node:zlib';
import { readPackIndex } from './packIndex.js';

export type ObjectType = 'commit' | 'tree' | 'blob' | 'tag';

export interface ObjectInfo {
  readonly type: ObjectType;
  readonly size: number;
}

export interface PackFiles {
  readonly packPath: string;
  readonly idxPath: string;
}

export interface PackReadLimits {
  /** Packs larger than this (together) are left to git. */
  readonly maxPackBytes: number;
  /** Bytes inflated, in all, to rebuild the contents asked for; past it, contents are unknown. */
  readonly maxInflatedBytes: number;
}

export const DEFAULT_PACK_READ_LIMITS: PackReadLimits = {
  maxPackBytes: 32 * 1024 * 1024,
  maxInflatedBytes: 64 * 1024 * 1024,
};

const SHA1_BYTES = 20;
const TRAILER_BYTES = 20;
const TYPES: Record<number, ObjectType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
const OFS_DELTA = 6;
const REF_DELTA = 7;

/** Where an object's entry is: its pack, the entry's start, and where the next entry starts. */
interface Entry {
  readonly pack: Buffer;
  readonly offset: number;
  readonly end: number;
}

interface Header {
  /** 1-4 for whole objects, OFS_DELTA or REF_DELTA. */
  readonly kind: number;
  /** Inflated size of the entry's data (for a delta: of the delta itself). */
  readonly size: number;
  /** Where the zlib stream starts. */
  readonly dataStart: number;
  /** The base entry of a delta. */
  readonly base?: Entry;
}

export class PackObjects {
  readonly #entries: Map<string, Entry>;
  readonly #byOffset: Map<Buffer, Map<number, Entry>>;
  readonly #infos = new Map<Entry, ObjectInfo | null>();
  #inflateBudget: number;

  private constructor(
    entries: Map<string, Entry>,
    byOffset: Map<Buffer, Map<number, Entry>>,
    budget: number,
  ) {
    this.#entries = entries;
    this.#byOffset = byOffset;
    this.#inflateBudget = budget;
  }

  /** Reads the packs and their indexes, or answers null when they are too large to read here. */
  static async read(
    packs: readonly PackFiles[],
    limits: PackReadLimits = DEFAULT_PACK_READ_LIMITS,
  ): Promise<PackObjects | null> {
    // Sizes first: a pack too large to read here is never read (a push may be gigabytes).
    const sizes = await Promise.all(packs.map(async (p) => (await stat(p.packPath)).size));
    if (sizes.reduce((sum, size) => sum + size, 0) > limits.maxPackBytes) return null;
    const files = await Promise.all(
      packs.map(async (p) => {
        const [pack, idx] = await Promise.all([readFile(p.packPath), readFile(p.idxPath)]);
        return { pack, idx };
      }),
    );
    const entries = new Map<string, Entry>();
    const byOffset = new Map<Buffer, Map<number, Entry>>();
    for (const { pack, idx } of files) {
      const index = readPackIndex(idx);
      const offsets = new Map(index.oids.map((oid, i) => [oid, index.offsets[i] ?? 0]));
      const sorted = [...new Set(index.offsets)].sort((a, b) => a - b);
      const ends = new Map<number, number>();
      for (const [i, offset] of sorted.entries())
        ends.set(offset, sorted[i + 1] ?? pack.length - TRAILER_BYTES);
      const at = new Map<number, Entry>();
      for (const [oid, offset] of offsets) {
        const entry = { pack, offset, end: ends.get(offset) ?? pack.length - TRAILER_BYTES };
        entries.set(oid, entry);
        at.set(offset, entry);
      }
      byOffset.set(pack, at);
    }
    return new PackObjects(entries, byOffset, limits.maxInflatedBytes);
  }

  /** The names of every object of the packs. */
  oids(): string[] {
    return [...this.#entries.keys()];
  }

  has(oid: string): boolean {
    return this.#entries.has(oid);
  }

  /** The object's type and size, or undefined when it is not in the packs. */
  info(oid: string): ObjectInfo | undefined {
    const entry = this.#entries.get(oid);
    return entry ? (this.#infoOf(entry) ?? undefined) : undefined;
  }

  /**
   * The object's contents, or undefined when it is not in the packs or rebuilding it would pass
   * the inflate cap.
   */
  contents(oid: string): Buffer | undefined {
    const entry = this.#entries.get(oid);
    if (!entry) return undefined;
    try {
      return this.#contentsOf(entry, 0);
    } catch (error) {
      if (error instanceof OverBudget) return undefined;
      throw error;
    }
  }

  #infoOf(entry: Entry): ObjectInfo | null {
    const known = this.#infos.get(entry);
    if (known !== undefined) return known;
    const header = this.#header(entry);
    let info: ObjectInfo | null;
    const type = TYPES[header.kind];
    if (type) info = { type, size: header.size };
    else {
      // A delta has its base's type and the size its own header states.
      const base = header.base ? this.#infoOf(header.base) : null;
      info = base ? { type: base.type, size: this.#deltaResultSize(entry, header) } : null;
    }
    this.#infos.set(entry, info);
    return info;
  }

  #contentsOf(entry: Entry, depth: number): Buffer {
    if (depth > 10_000) throw new Error('delta chain too long');
    const header = this.#header(entry);
    if (TYPES[header.kind]) return this.#inflate(entry, header);
    if (!header.base) throw new Error(`delta base of the entry at ${entry.offset} is not in the pack`);
    const base = this.#contentsOf(header.base, depth + 1);
    return applyDelta(base, this.#inflate(entry, header));
  }

  /**
   * The size of the object a delta rebuilds: the second field of its header, read from the first
   * bytes of the stream when they hold it (as git reads it), else from the whole delta.
   */
  #deltaResultSize(entry: Entry, header: Header): number {
    const head = inflateSync(
      entry.pack.subarray(header.dataStart, Math.min(entry.end, header.dataStart + 64)),
      {
        finishFlush: constants.Z_SYNC_FLUSH,
      },
    );
    const sizes = deltaSizes(head);
    return sizes ? sizes[1] : (deltaSizes(this.#inflate(entry, header)) ?? [0, 0])[1];
  }

  /** The entry's data inflated, charged to the budget. */
  #inflate(entry: Entry, header: Header): Buffer {
    if (header.size > this.#inflateBudget) throw new OverBudget();
    this.#inflateBudget -= header.size;
    const data = inflateSync(entry.pack.subarray(header.dataStart, entry.end));
    if (data.length !== header.size)
      throw new Error(`pack entry at ${entry.offset} inflated to ${data.length} bytes, not ${header.size}`);
    return data;
  }

  #header(entry: Entry): Header {
    const { pack } = entry;
    let at = entry.offset;
    let byte = pack[at++] ?? 0;
    const kind = (byte >> 4) & 7;
    let size = byte & 15;
    let shift = 4;
    while (byte & 0x80) {
      byte = pack[at++] ?? 0;
      size += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    }
    if (kind === OFS_DELTA) {
      byte = pack[at++] ?? 0;
      let distance = byte & 0x7f;
      while (byte & 0x80) {
        byte = pack[at++] ?? 0;
        distance = (distance + 1) * 128 + (byte & 0x7f);
      }
      const base = this.#byOffset.get(pack)?.get(entry.offset - distance);
      return { kind, size, dataStart: at, ...(base ? { base } : {}) };
    }
    if (kind === REF_DELTA) {
      const base = this.#entries.get(pack.toString('hex', at, at + SHA1_BYTES));
      return { kind, size, dataStart: at + SHA1_BYTES, ...(base ? { base } : {}) };
    }
    if (!TYPES[kind]) throw new Error(`pack entry at ${entry.offset} has unknown type ${kind}`);
    return { kind, size, dataStart: at };
  }
}

class OverBudget extends Error {}

/** The object names a version 2 pack index lists, read without its pack. */
export async function packIndexOids(idxPath: string): Promise<string[]> {
  return [...readPackIndex(await readFile(idxPath)).oids];
}

/** Reads a delta's little-endian base-128 size at `at`: the value and where the next field starts. */
function deltaSize(delta: Buffer, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  let byte: number;
  do {
    byte = delta[at++] ?? 0;
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

/** A delta's base and result sizes, or null when `delta` ends before both are complete. */
function deltaSizes(delta: Buffer): [number, number] | null {
  const [base, next] = deltaSize(delta, 0);
  const [result, end] = deltaSize(delta, next);
  return end <= delta.length ? [base, result] : null;
}

/** Rebuilds an object from its base and a delta. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  const [baseSize, afterBase] = deltaSize(delta, 0);
  if (baseSize !== base.length) throw new Error(`delta expects a ${baseSize}-byte base, got ${base.length}`);
  const [resultSize, start] = deltaSize(delta, afterBase);
  const out = Buffer.allocUnsafe(resultSize);
  let written = 0;
  let at = start;
  while (at < delta.length) {
    const op = delta[at++] ?? 0;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += (delta[at++] ?? 0) * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) size += (delta[at++] ?? 0) * 2 ** (8 * bit);
      if (size === 0) size = 0x10000;
      if (offset + size > base.length || written + size > resultSize)
        throw new Error('delta copies out of range');
      base.copy(out, written, offset, offset + size);
      written += size;
    } else if (op !== 0) {
      if (at + op > delta.length || written + op > resultSize) throw new Error('delta inserts out of range');
      delta.copy(out, written, at, at + op);
      written += op;
      at += op;
    } else throw new Error('delta has a reserved instruction');
  }
  if (written !== resultSize) throw new Error(`delta rebuilt ${written} bytes, not ${resultSize}`);
  return out;
}

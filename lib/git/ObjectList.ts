/**
 * What `git rev-list --objects` wrote (`<hex oid>[ <path>]` lines), held as the bytes it wrote,
 * with an index of the object names for questions over tens of thousands of objects (is every
 * object of this pack in the list?) without a string and a hash-table entry per object.
 *
 * The names are decoded once into one buffer, 20 bytes each, in line order; a table of buckets
 * keyed by each name's first bits, as git's fan-out but finer, leads to the few names starting
 * alike. Object names are hashes, so the buckets stay small whatever the list's size.
 */

const HASH_BYTES = 20;
const HEX_CHARS = 2 * HASH_BYTES;
const NEWLINE = 0x0a;
const SPACE = 0x20;

/** The value of each hex digit's byte, -1 for any other byte. */
const HEX_VALUE = (() => {
  const table = new Int8Array(256).fill(-1);
  for (let d = 0; d < 16; d++) {
    table[d.toString(16).charCodeAt(0)] = d;
    table[d.toString(16).toUpperCase().charCodeAt(0)] = d;
  }
  return table;
})();

/** Thrown for a line that does not start with an object name. */
export class InvalidObjectLine extends Error {
  readonly code = 'InvalidObjectLine';
}

export class ObjectList {
  readonly #text: Buffer;
  /** Where line i starts in `#text`; one more entry, the end. */
  readonly #lineStarts: Uint32Array;
  readonly #names: Buffer;
  /** Lines of the names in bucket b: `#order[#starts[b]]` up to `#order[#starts[b + 1]]`. */
  readonly #order: Uint32Array;
  readonly #starts: Uint32Array;
  readonly #shift: number;

  constructor(text: Buffer) {
    this.#text = text;
    const { names, lineStarts, count } = parseLines(text);
    this.#names = names;
    this.#lineStarts = lineStarts;
    // About one name per bucket, between 256 and a million buckets.
    const bits = Math.min(20, Math.max(8, Math.ceil(Math.log2(count + 1))));
    this.#shift = 32 - bits;
    const bucketStarts = new Uint32Array((1 << bits) + 1);
    for (let i = 0; i < count; i++) {
      const after = this.#bucket(this.#names, i * HASH_BYTES) + 1;
      bucketStarts[after] = (bucketStarts[after] ?? 0) + 1;
    }
    for (let b = 0; b < 1 << bits; b++)
      bucketStarts[b + 1] = (bucketStarts[b + 1] ?? 0) + (bucketStarts[b] ?? 0);
    const next = bucketStarts.slice(0, 1 << bits);
    const order = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const b = this.#bucket(this.#names, i * HASH_BYTES);
      order[next[b] ?? 0] = i;
      next[b] = (next[b] ?? 0) + 1;
    }
    this.#order = order;
    this.#starts = bucketStarts;
  }

  get size(): number {
    return this.#order.length;
  }

  /** Line `i`, without its newline. */
  line(i: number): string {
    const end = this.#lineStarts[i + 1] ?? 0;
    return this.#text.toString('utf8', this.#lineStarts[i], this.#text[end - 1] === NEWLINE ? end - 1 : end);
  }

  /** The line of the 20-byte name at `at` in `bytes`, or -1 when no line names it. */
  indexOf(bytes: Buffer, at: number): number {
    const b = this.#bucket(bytes, at);
    const end = this.#starts[b + 1] ?? 0;
    for (let k = this.#starts[b] ?? 0; k < end; k++) {
      const i = this.#order[k] ?? 0;
      if (sameName(this.#names, i * HASH_BYTES, bytes, at)) return i;
    }
    return -1;
  }

  #bucket(bytes: Buffer, at: number): number {
    return bytes.readUInt32BE(at) >>> this.#shift;
  }
}

/**
 * The object name of each line, decoded, and where each line starts (one more entry: the end).
 * One loop over the bytes: it runs once per plan, mostly in a function's first invocations, where
 * a call per line would cost more than the decoding.
 */
function parseLines(text: Buffer): { names: Buffer; lineStarts: Uint32Array; count: number } {
  // Every line holds at least a name and a newline, but the last one's.
  const most = Math.ceil(text.length / (HEX_CHARS + 1));
  const names = Buffer.alloc(most * HASH_BYTES);
  const starts = new Uint32Array(most + 1);
  let count = 0;
  let at = 0;
  while (at < text.length) {
    let bad = at + HEX_CHARS > text.length ? -1 : 0;
    for (let k = 0; k < HASH_BYTES && bad >= 0; k++) {
      const high = HEX_VALUE[text[at + 2 * k] ?? 0] ?? -1;
      const low = HEX_VALUE[text[at + 2 * k + 1] ?? 0] ?? -1;
      bad = high | low;
      names[count * HASH_BYTES + k] = (high << 4) | low;
    }
    const after = text[at + HEX_CHARS];
    if (bad < 0 || (after !== undefined && after !== NEWLINE && after !== SPACE))
      throw new InvalidObjectLine(
        `not an object name: ${JSON.stringify(text.toString('utf8', at, Math.min(text.length, at + HEX_CHARS + 1)))}`,
      );
    starts[count++] = at;
    const end = after === SPACE ? text.indexOf(NEWLINE, at + HEX_CHARS) : at + HEX_CHARS;
    at = end < 0 ? text.length : end + 1;
  }
  starts[count] = text.length;
  return { names, lineStarts: starts.subarray(0, count + 1), count };
}

/** Whether 20 bytes at `a` in `x` and at `b` in `y` are the same, without a native call per name. */
function sameName(x: Buffer, a: number, y: Buffer, b: number): boolean {
  for (let k = 0; k < HASH_BYTES; k++) if (x[a + k] !== y[b + k]) return false;
  return true;
}

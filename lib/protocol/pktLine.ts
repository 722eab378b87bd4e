/**
 * git's pkt-line framing. Documentation/technical/protocol-common.txt, "pkt-line Format":
 *
 *   A pkt-line is a variable length binary string.  The first four bytes of the line, the
 *   pkt-len, indicates the total length of the line, in hexadecimal.  The pkt-len includes the
 *   4 bytes used to contain the length's hexadecimal representation. [...]
 *   The maximum length of a pkt-line's data component is 65516 bytes.  Implementations MUST
 *   NOT send pkt-line whose length exceeds 65520 (65516 bytes of payload + 4 bytes of length
 *   data). [...] A pkt-line with a length field of 0 ("0000"), called a flush-pkt, is a special
 *   case and MUST be handled differently than an empty pkt-line ("0004").
 *
 * protocol-v2.txt adds "0001" (delim-pkt) and "0002" (response-end-pkt); "0003" means nothing.
 * Like git's own reader (pkt-line.c, packet_length) the length accepts upper- and lower-case hex.
 * git's reader tolerates up to 3 bytes over 65520; this one holds peers to the spec's limit.
 */
import { ProtocolError, printable } from './ProtocolError.js';

export type PktLine =
  | { kind: 'data'; payload: Buffer }
  | { kind: 'flush' }
  | { kind: 'delim' }
  | { kind: 'response-end' };

export const MAX_PKT_LENGTH = 65520;
export const MAX_PKT_PAYLOAD = MAX_PKT_LENGTH - 4;
/** side-band-64k: one band byte, then up to 65515 data bytes (git's send_sideband). */
export const MAX_SIDEBAND_DATA = MAX_PKT_PAYLOAD - 1;

export const FLUSH_PKT: Buffer = Buffer.from('0000');
export const DELIM_PKT: Buffer = Buffer.from('0001');
export const RESPONSE_END_PKT: Buffer = Buffer.from('0002');

export function encodePktLine(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  if (body.length > MAX_PKT_PAYLOAD) {
    throw new RangeError(`pkt-line payload of ${body.length} bytes exceeds ${MAX_PKT_PAYLOAD}`);
  }
  const header = Buffer.from((body.length + 4).toString(16).padStart(4, '0'));
  return Buffer.concat([header, body]);
}

/** Frames `data` on a side-band-64k band (1 pack data, 2 progress, 3 fatal error). */
export function encodeSideband(band: 1 | 2 | 3, data: Buffer | string): Buffer[] {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const packets: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += MAX_SIDEBAND_DATA) {
    const chunk = bytes.subarray(at, at + MAX_SIDEBAND_DATA);
    packets.push(encodePktLine(Buffer.concat([Buffer.of(band), chunk])));
  }
  return packets;
}

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  return -1;
}

/** Decodes a 4-byte pkt-len; throws on anything that is not a usable length. */
export function parseLength(header: Buffer): number {
  let length = 0;
  for (const byte of header) {
    const digit = hexValue(byte);
    if (digit < 0) {
      throw new ProtocolError(`malformed pkt-line: length '${printable(header)}' is not hexadecimal`);
    }
    length = length * 16 + digit;
  }
  if (length === 3) {
    throw new ProtocolError(`malformed pkt-line: length '${printable(header)}' is not a valid packet`);
  }
  if (length > MAX_PKT_LENGTH) {
    throw new ProtocolError(`malformed pkt-line: length ${length} exceeds the maximum of ${MAX_PKT_LENGTH}`);
  }
  return length;
}

/**
 * Incremental pkt-line reader: push chunks as they arrive (split anywhere), pull whole packets.
 * Chunks are kept as a list and sliced, never re-concatenated, so a push costs O(chunk).
 */
export class PktLineReader {
  #chunks: Buffer[] = [];
  /** Index of the first unread chunk; spent chunks before it are dropped in batches. */
  #first = 0;
  /** Read offset into `#chunks[#first]`. */
  #offset = 0;
  #buffered = 0;
  #consumed = 0;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** Bytes pushed but not yet returned as packets. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Bytes returned as packets so far (the offset of the next packet in the input). */
  get consumed(): number {
    return this.#consumed;
  }

  /** The next whole packet, or undefined until enough bytes are buffered. */
  next(): PktLine | undefined {
    if (this.#buffered < 4) return undefined;
    const length = parseLength(this.#peek(4));
    if (length < 4) {
      this.#take(4);
      if (length === 0) return { kind: 'flush' };
      return length === 1 ? { kind: 'delim' } : { kind: 'response-end' };
    }
    if (this.#buffered < length) return undefined;
    this.#take(4);
    return { kind: 'data', payload: this.#take(length - 4) };
  }

  /** Everything still buffered, removed from the reader (e.g. the packfile after a header). */
  takeRest(): Buffer {
    return this.#take(this.#buffered);
  }

  #peek(n: number): Buffer {
    const first = this.#chunks[this.#first];
    if (first !== undefined && first.length - this.#offset >= n) {
      return first.subarray(this.#offset, this.#offset + n);
    }
    const out = Buffer.alloc(n);
    let filled = 0;
    let offset = this.#offset;
    for (let i = this.#first; i < this.#chunks.length && filled < n; i++) {
      const chunk = this.#chunks[i];
      if (chunk === undefined) break;
      filled += chunk.copy(out, filled, offset, Math.min(chunk.length, offset + n - filled));
      offset = 0;
    }
    return out;
  }

  #take(n: number): Buffer {
    const parts: Buffer[] = [];
    let missing = n;
    while (missing > 0) {
      const chunk = this.#chunks[this.#first];
      if (chunk === undefined) break;
      const available = chunk.length - this.#offset;
      const used = Math.min(available, missing);
      parts.push(chunk.subarray(this.#offset, this.#offset + used));
      missing -= used;
      if (used === available) {
        this.#first += 1;
        this.#offset = 0;
      } else {
        this.#offset += used;
      }
    }
    this.#compact();
    const taken = n - missing;
    this.#buffered -= taken;
    this.#consumed += taken;
    const [only] = parts;
    return parts.length === 1 && only !== undefined ? only : Buffer.concat(parts, taken);
  }

  /** Drops spent chunks once they are at least half the list, so shifting stays amortised O(1). */
  #compact(): void {
    if (this.#first === this.#chunks.length) {
      this.#chunks = [];
      this.#first = 0;
    } else if (this.#first >= 32 && this.#first * 2 >= this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#first);
      this.#first = 0;
    }
  }
}

/** Parses a buffer holding whole packets only. */
export function parsePktLines(buf: Buffer): PktLine[] {
  const reader = new PktLineReader();
  reader.push(buf);
  const packets: PktLine[] = [];
  for (let pkt = reader.next(); pkt !== undefined; pkt = reader.next()) packets.push(pkt);
  if (reader.buffered > 0) {
    throw new ProtocolError(`truncated pkt-line: ${reader.buffered} bytes left after the last whole packet`);
  }
  return packets;
}

/** Every packet of a complete body, or null when it is malformed or ends inside a packet. */
export function completePackets(body: Buffer): PktLine[] | null {
  const reader = new PktLineReader();
  const packets: PktLine[] = [];
  try {
    reader.push(body);
    for (let pkt = reader.next(); pkt !== undefined; pkt = reader.next()) packets.push(pkt);
  } catch {
    return null;
  }
  return reader.buffered === 0 ? packets : null;
}

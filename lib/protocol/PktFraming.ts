/**
 * Follows the pkt-line framing of git's output as it passes (gitprotocol-common(5), "pkt-line
 * Format"), so that when git stops midway narwal knows what it can still add that the client reads
 * as a message: an `ERR` packet between packets outside the pack, which git dies on as `remote
 * error: ...`, and a band 3 packet inside the sideband-multiplexed pack (after v2's `packfile`
 * section header, or once the pack's sideband packets have begun), which git prints and fails on
 * (gitprotocol-v2(5), "fetch"; gitprotocol-pack(5), "Packfile Data").
 */
import { completePackets, encodePktLine, encodeSideband, parseLength } from './pktLine.js';

/** The payload of the v2 section header after which every packet is a sideband one. */
const PACKFILE_HEADER = 'packfile';

export class PktFraming {
  /** The header being read, and how many of its 4 bytes have passed. */
  readonly #header = Buffer.alloc(4);
  #headerBytes = 0;
  /** Payload bytes of the current packet still to come. */
  #left = 0;
  /** The first payload bytes of the current packet (enough to know `packfile` or a band). */
  #start = '';
  /** Whether the last whole packet was a flush. */
  #flushed = false;
  #sideband = false;
  /** The current packet's band once its first payload byte has passed (-1: not a pack packet). */
  #band = 0;
  #lost = false;

  /** Takes the next bytes of the stream. */
  observe(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.#lost) {
      if (this.#left > 0) {
        const take = Math.min(this.#left, chunk.length - at);
        if (this.#start.length < PACKFILE_HEADER.length + 1)
          this.#start += chunk.toString('latin1', at, at + Math.min(take, PACKFILE_HEADER.length + 1));
        if (this.#band === 0) this.#bandOf(chunk[at] as number);
        at += take;
        this.#left -= take;
        if (this.#left === 0) this.#endPacket();
        continue;
      }
      this.#header[this.#headerBytes++] = chunk[at] as number;
      at++;
      if (this.#headerBytes < 4) continue;
      this.#headerBytes = 0;
      let length: number;
      try {
        length = parseLength(this.#header);
      } catch {
        this.#lost = true;
        return;
      }
      this.#flushed = length === 0;
      if (length > 4) {
        this.#left = length - 4;
        this.#start = '';
        this.#band = 0;
      }
    }
  }

  /** Whether the stream ended on a flush packet: git's answer, or its round, was whole. */
  get whole(): boolean {
    return !this.#lost && this.#headerBytes === 0 && this.#left === 0 && this.#flushed;
  }

  /**
   * What to add after the bytes seen so that the client reads `message` as the reason its answer
   * ends: the rest of a pack packet cut short (zeros, which the failure makes moot) and a band 3
   * packet inside the pack, or an `ERR` packet outside it; null when that cannot be done (a header
   * cut short, a packet cut short outside the pack, or framing that was not git's).
   */
  failure(message: string): Buffer | null {
    if (this.#lost || this.#headerBytes > 0) return null;
    const rest = this.#left === 0 ? Buffer.alloc(0) : this.#band === 1 ? Buffer.alloc(this.#left) : null;
    if (rest === null) return null;
    const tail = this.#sideband ? encodeSideband(3, `${message}\n`) : [encodePktLine(`ERR ${message}\n`)];
    return Buffer.concat([rest, ...tail]);
  }

  /**
   * The first payload byte of a packet: a band inside the pack. Before it, a packet is a line of
   * text (ACK, NAK, shallow, a section header); v0 has no section header before the pack, whose
   * packets are the only ones to start with a band byte.
   */
  #bandOf(first: number): void {
    if (this.#sideband || (first >= 1 && first <= 3)) {
      this.#sideband = true;
      this.#band = first;
    } else this.#band = -1;
  }

  #endPacket(): void {
    const text = this.#start.endsWith('\n') ? this.#start.slice(0, -1) : this.#start;
    if (text === PACKFILE_HEADER) this.#sideband = true;
  }
}

/**
 * The message of the last `ERR` or band 3 packet of `bytes` (whole packets only), as a failure
 * (PktFraming.failure) or git itself wrote it; undefined when there is none.
 */
export function failureMessageIn(bytes: Buffer): string | undefined {
  let message: string | undefined;
  for (const packet of completePackets(bytes) ?? []) {
    if (packet.kind !== 'data') continue;
    const { payload } = packet;
    if (payload.toString('latin1', 0, 4) === 'ERR ') message = payload.toString('utf8', 4);
    else if (payload[0] === 3) message = payload.toString('utf8', 1);
  }
  return message?.trimEnd();
}

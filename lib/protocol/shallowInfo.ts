/**
 * The lines upload-pack writes before the pack of a repeatable fetch (repeatableFetch.ts), read
 * off the start of its answer so that the same answer can be given again without git.
 *
 * Protocol v2 (gitprotocol-v2(5), "fetch" output; upload-pack.c, upload_pack_v2 and
 * send_shallow_info): with no haves and `done` there are no acknowledgments; a `shallow-info`
 * section (`shallow-info` LF, then `shallow <oid>` / `unshallow <oid>` lines, then a delim-pkt)
 * comes when the request asked for a shallow history, then `packfile` LF and the pack on the
 * sideband. git writes the shallow lines without their LF; they are kept byte for byte.
 *
 * Protocol v0/v1 (gitprotocol-pack(5), "Packfile Negotiation"; upload-pack.c, receive_needs):
 * the `shallow <oid>` / `unshallow <oid>` lines and a flush-pkt when the request deepened, then
 * `NAK` LF (no haves were acknowledged) and the pack on the sideband.
 */
import { PktLineReader } from './pktLine.js';

/** What git writes directly before the pack, by protocol version. */
export const PACK_HEADER = { v2: 'packfile\n', v0: 'NAK\n' } as const;

/** More lines than a few shallow boundaries of many wants would need: such an answer is not kept. */
const MAX_LINES_BYTES = 1024 * 1024;

const SHALLOW_LINE = /^(shallow|unshallow) [0-9a-f]{40}\n?$/;

export type LinesBeforePack =
  /** git's bytes before the pack header (possibly none), exactly as it sent them. */
  | { readonly kind: 'lines'; readonly bytes: Buffer }
  /** Not enough of the answer yet to tell. */
  | { readonly kind: 'more' }
  /** The answer is not the plain one of a repeatable fetch (an error, say): nothing to keep. */
  | { readonly kind: 'other' };

/**
 * The lines before the pack header in the first bytes of upload-pack's answer to a repeatable
 * fetch of `version`: `more` until the header has arrived, `other` when the answer is anything but
 * the shallow lines (if any) and the header.
 */
export function linesBeforePack(start: Buffer, version: 'v2' | 'v0'): LinesBeforePack {
  const reader = new PktLineReader();
  reader.push(start);
  // v2: `shallow-info`, lines, delim. v0: lines, flush. Either may be absent entirely.
  let state: 'start' | 'lines' | 'ended' = 'start';
  for (;;) {
    const before = reader.consumed;
    let packet: ReturnType<PktLineReader['next']>;
    try {
      packet = reader.next();
    } catch {
      return { kind: 'other' };
    }
    if (packet === undefined) {
      return start.length > MAX_LINES_BYTES ? { kind: 'other' } : { kind: 'more' };
    }
    const text = packet.kind === 'data' ? packet.payload.toString('latin1') : '';
    if (packet.kind === 'data' && text === PACK_HEADER[version] && state !== 'lines') {
      return { kind: 'lines', bytes: Buffer.from(start.subarray(0, before)) };
    }
    if (version === 'v2') {
      if (state === 'start' && text === 'shallow-info\n') state = 'lines';
      else if (state === 'lines' && packet.kind === 'data' && SHALLOW_LINE.test(text)) state = 'lines';
      else if (state === 'lines' && packet.kind === 'delim') state = 'ended';
      else return { kind: 'other' };
    } else if (state !== 'ended' && packet.kind === 'data' && SHALLOW_LINE.test(text)) state = 'lines';
    else if (state !== 'ended' && packet.kind === 'flush') state = 'ended';
    else return { kind: 'other' };
  }
}

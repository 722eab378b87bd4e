/**
 * Protocol v2's `packfile-uris` (gitprotocol-v2(5), "fetch"; git's
 * Documentation/technical/packfile-uri.txt): the server says it can send parts of a pack as URIs
 * by listing `packfile-uris` among the `fetch` capability's features; a client that accepts some
 * URI protocols names them in its request (`packfile-uris https,http`), and the answer may then
 * carry a `packfile-uris` section directly before the `packfile` section: one `<pack-hash> <uri>`
 * line per pack, then a delim-pkt. The client downloads each URI, indexes it and checks that
 * index-pack names the pack by `<pack-hash>` (the pack's trailing checksum), and dies if it does
 * not, or if a download fails: there is no fallback, so a URI must work when it is sent.
 */
import { completePackets, DELIM_PKT, encodePktLine, FLUSH_PKT } from './pktLine.js';

/** The word in the `fetch` capability that offers packfile URIs. */
export const PACKFILE_URIS = 'packfile-uris';

/** One part of a pack the client fetches itself: the pack's trailing checksum and where it is. */
export interface PackfileUri {
  readonly hash: string;
  readonly uri: string;
}

/**
 * A v2 capability advertisement (as upload-pack writes it) that also offers `packfile-uris` in
 * its `fetch` line; anything else, or one that offers it already, is returned as it was.
 */
export function offerPackfileUris(advertisement: Buffer): Buffer {
  const packets = completePackets(advertisement);
  if (packets === null || packets[packets.length - 1]?.kind !== 'flush') return advertisement;
  let changed = false;
  const out: Buffer[] = [];
  for (const packet of packets) {
    if (packet.kind === 'flush') out.push(FLUSH_PKT);
    else if (packet.kind !== 'data') return advertisement;
    else {
      const line = packet.payload.toString('utf8').replace(/\n$/, '');
      const features = line === 'fetch' ? [] : line.startsWith('fetch=') ? line.slice(6).split(' ') : null;
      if (features === null || features.includes(PACKFILE_URIS)) out.push(encodePktLine(packet.payload));
      else {
        out.push(encodePktLine(`fetch=${[...features, PACKFILE_URIS].join(' ')}\n`));
        changed = true;
      }
    }
  }
  return changed ? Buffer.concat(out) : advertisement;
}

/** The `packfile-uris` section of a fetch answer, up to and with its delim-pkt. */
export function packfileUrisSection(uris: readonly PackfileUri[]): Buffer {
  return Buffer.concat([
    encodePktLine(`${PACKFILE_URIS}\n`),
    ...uris.map((u) => encodePktLine(`${u.hash} ${u.uri}\n`)),
    DELIM_PKT,
  ]);
}

/** Whether a client that accepts `protocols` (its `packfile-uris` argument) may be sent `uri`. */
export function acceptsUri(protocols: readonly string[], uri: string): boolean {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase();
  return scheme !== undefined && protocols.includes(scheme);
}

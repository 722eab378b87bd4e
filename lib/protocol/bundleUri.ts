/**
 * Protocol v2's `bundle-uri` command (gitprotocol-v2(5), "bundle-uri"; git's
 * Documentation/technical/bundle-uri.txt): a server that lists `bundle-uri` among its
 * capabilities answers `command=bundle-uri` with a bundle list, one `key=value` line per packet
 * (`bundle.version=1`, `bundle.mode=all`, `bundle.<id>.uri=<uri>`) and a flush-pkt. A client
 * (git 2.40 and newer with `transfer.bundleURI`) downloads the bundles, unbundles them, and then
 * fetches only what they lack, offering their refs as haves. A bundle (gitformat-bundle(5)) is a
 * header naming its refs, a blank line, and a pack.
 */
import { completePackets, encodePktLine, FLUSH_PKT } from './pktLine.js';

export const BUNDLE_URI = 'bundle-uri';

/** A v2 capability advertisement that also lists `bundle-uri` (last, where git puts it). */
export function offerBundleUri(advertisement: Buffer): Buffer {
  const packets = completePackets(advertisement);
  if (packets === null || packets.length < 2 || packets[packets.length - 1]?.kind !== 'flush')
    return advertisement;
  const listed = packets.some(
    (p) => p.kind === 'data' && p.payload.toString('utf8').replace(/\n$/, '').split('=')[0] === BUNDLE_URI,
  );
  if (listed) return advertisement;
  return Buffer.concat([
    advertisement.subarray(0, advertisement.length - FLUSH_PKT.length),
    encodePktLine(`${BUNDLE_URI}\n`),
    FLUSH_PKT,
  ]);
}

/** The answer to `command=bundle-uri`: every bundle is needed (`all`); an empty list is valid. */
export function bundleList(bundles: readonly { readonly id: string; readonly uri: string }[]): Buffer {
  return Buffer.concat([
    encodePktLine('bundle.version=1\n'),
    encodePktLine('bundle.mode=all\n'),
    ...bundles.map((b) => encodePktLine(`bundle.${b.id}.uri=${b.uri}\n`)),
    FLUSH_PKT,
  ]);
}

/** The header of a v2 bundle with no prerequisites: `refs` (name, oid) are complete in its pack. */
export function bundleHeader(refs: Iterable<readonly [string, string]>): Buffer {
  const lines = ['# v2 git bundle\n'];
  for (const [name, oid] of refs) lines.push(`${oid} ${name}\n`);
  lines.push('\n');
  return Buffer.from(lines.join(''), 'utf8');
}

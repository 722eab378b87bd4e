/**
 * receive-pack's ref advertisement (protocol v0, and v1 with its `version 1` line), written from
 * the log's refs instead of by `git receive-pack --advertise-refs` on a cache generation: the same
 * bytes git 2.39 sends for narwal's receive-pack configuration, without a git process, a lease
 * or a generation on the push's path. The POST still runs the real receive-pack on the generation
 * of the index it reads, which has every object these refs name.
 */
import { encodePktLine, FLUSH_PKT } from './pktLine.js';
import { type RefValue, ZERO_OID } from './refValue.js';

/** What git's receive-pack advertises with receive.advertisePushOptions=true, before its agent. */
const CAPABILITIES = [
  'report-status',
  'report-status-v2',
  'delete-refs',
  'side-band-64k',
  'quiet',
  'atomic',
  'ofs-delta',
  'push-options',
  'object-format=sha1',
];

export interface AdvertisementOptions {
  /** git's `agent=` value, e.g. `git/2.39.5`. */
  readonly agent: string;
  /** The client asked for protocol version 1 (Git-Protocol: version=1). */
  readonly v1: boolean;
}

/** The advertisement body (without the smart-HTTP `# service=` preamble). */
export function receivePackAdvertisement(
  refs: ReadonlyMap<string, RefValue>,
  options: AdvertisementOptions,
): Buffer {
  const capabilities = [...CAPABILITIES, `agent=${options.agent}`].join(' ');
  const names = [...refs.keys()].sort(byteOrder);
  const lines: Buffer[] = options.v1 ? [encodePktLine('version 1\n')] : [];
  if (names.length === 0) lines.push(encodePktLine(`${ZERO_OID} capabilities^{}\0${capabilities}\n`));
  names.forEach((name, i) => {
    const oid = refs.get(name)?.oid;
    lines.push(encodePktLine(i === 0 ? `${oid} ${name}\0${capabilities}\n` : `${oid} ${name}\n`));
  });
  lines.push(FLUSH_PKT);
  return Buffer.concat(lines);
}

/** git sorts refs by the bytes of their names. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

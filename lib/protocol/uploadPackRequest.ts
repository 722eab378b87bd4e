/**
 * What an upload-pack request asks for, and whether the start of git's answer is known before
 * git runs, so that progress can be reported on the sideband while the repository is prepared.
 *
 * Protocol v2 (gitprotocol-v2(5), "fetch"): a request is `command=<name>`, capabilities, a
 * delim-pkt, arguments, a flush-pkt. "If the client sent 'done' [...] the server will not send
 * an acknowledgments section"; shallow-info comes only with deepen requests, packfile-uris only
 * when configured (narwal never configures it), and wanted-refs (`<oid> <ref>` per `want-ref`,
 * in request order, then a delim-pkt: upload-pack.c, send_wanted_ref_info) only with want-ref.
 * So a fetch with `done`, no `have`, no deepen or shallow lines, no `sideband-all` and no
 * `no-progress` is answered by its wanted-refs, `packfile`, then side-band-64k packets.
 *
 * Protocol v0/v1 (gitprotocol-pack(5), "Packfile Negotiation"): after `done`, upload-pack
 * answers `NAK` when the client sent no `have` (upload-pack.c, get_common_commits), shallow
 * updates come first only with deepen or shallow lines, and the pack follows on the sideband
 * when the client asked for side-band or side-band-64k.
 */
import { completePackets, DELIM_PKT, encodePktLine } from './pktLine.js';

export interface UploadPackRequest {
  /** `fetch` for v0/v1; the v2 command otherwise (`ls-refs`, `fetch`, `object-info`...). */
  readonly command: string;
  /** Whether git's answer starts with known lines and then the sideband. */
  readonly predictable: boolean;
  /** The refs of v2 `want-ref` lines, in request order. */
  readonly wantRefs: readonly string[];
}

const NONE = { predictable: false, wantRefs: [] } as const;

/** Classifies a complete request body; a body that does not parse yields command '' and no prediction. */
export function classifyUploadPackRequest(body: Buffer, v2: boolean): UploadPackRequest {
  const lines = dataLines(body);
  if (lines === null) return { command: '', ...NONE };
  return v2 ? classifyV2(lines) : classifyV0(lines);
}

/**
 * The bytes git's answer to a predictable request starts with; null when a wanted ref is unknown
 * (git then answers with an error, which only git should phrase).
 */
export function predictedPrefix(
  request: UploadPackRequest,
  v2: boolean,
  resolve: (ref: string) => string | undefined,
): Buffer | null {
  if (!request.predictable) return null;
  if (!v2) return encodePktLine('NAK\n');
  const packets: Buffer[] = [];
  if (request.wantRefs.length > 0) {
    packets.push(encodePktLine('wanted-refs\n'));
    for (const ref of request.wantRefs) {
      const oid = resolve(ref);
      if (oid === undefined) return null;
      packets.push(encodePktLine(`${oid} ${ref}\n`));
    }
    packets.push(DELIM_PKT);
  }
  packets.push(encodePktLine('packfile\n'));
  return Buffer.concat(packets);
}

function classifyV2(lines: readonly (string | null)[]): UploadPackRequest {
  const first = lines[0];
  const command = typeof first === 'string' && first.startsWith('command=') ? first.slice(8) : '';
  if (command !== 'fetch') return { command, ...NONE };
  const delim = lines.indexOf(null);
  const args = delim < 0 ? [] : lines.slice(delim + 1).filter((l): l is string => l !== null);
  const blocked = args.some(
    (a) =>
      a.startsWith('have ') ||
      a.startsWith('deepen') ||
      a.startsWith('shallow ') ||
      a === 'sideband-all' ||
      a === 'no-progress' ||
      a.startsWith('packfile-uris'),
  );
  const wantRefs = args.filter((a) => a.startsWith('want-ref ')).map((a) => a.slice('want-ref '.length));
  return { command, predictable: !blocked && args.includes('done'), wantRefs };
}

function classifyV0(lines: readonly (string | null)[]): UploadPackRequest {
  const data = lines.filter((l): l is string => l !== null);
  const first = data[0] ?? '';
  const capabilities = first.startsWith('want ') ? first.split(' ').slice(2) : [];
  const sideband = capabilities.includes('side-band-64k') || capabilities.includes('side-band');
  const blocked =
    capabilities.includes('no-progress') ||
    data.some((l) => l.startsWith('have ') || l.startsWith('shallow ') || l.startsWith('deepen'));
  const predictable = sideband && !blocked && first.startsWith('want ') && data.includes('done');
  return { command: 'fetch', predictable, wantRefs: [] };
}
/** Data lines without their LF; a delim-pkt as null; flush and response-end dropped. */
function dataLines(body: Buffer): (string | null)[] | null {
  const packets = completePackets(body);
  if (packets === null) return null;
  const lines: (string | null)[] = [];
  for (const pkt of packets) {
    if (pkt.kind === 'data') lines.push(pkt.payload.toString('utf8').replace(/\n$/, ''));
    else if (pkt.kind === 'delim') lines.push(null);
  }
  return lines;
}

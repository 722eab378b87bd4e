/**
 * Recognises a full clone: a fetch whose pack depends only on what it wants. Such a request has
 * `want <oid>` lines and `done`, and nothing that makes git's answer depend on the client's
 * state or shape it otherwise: no `have`, no shallow or deepen lines, no filter, no `want-ref`.
 * upload-pack then runs `git pack-objects --revs` on exactly those wants, with
 * `--delta-base-offset` for `ofs-delta` and `--include-tag` for `include-tag` (upload-pack.c,
 * create_pack_file); `thin-pack` changes nothing without haves, and progress (or `no-progress`)
 * only concerns band 2.
 * So two full clones of one generation with the same key get the same pack.
 *
 * Only lines and capabilities listed here qualify; anything else (a newer argument this code
 * does not know) makes the request an ordinary fetch, which git answers itself.
 */
import { createHash } from 'node:crypto';
import { completePackets } from './pktLine.js';

export interface FullClone {
  /** Names the pack: the wanted objects and the options that change the pack's bytes. */
  readonly key: string;
  /** The answer's first bytes before the pack: `NAK` (v0/v1) or the `packfile` header (v2). */
  readonly preamble: string;
  /** The largest data part of one sideband packet the client accepts. */
  readonly sidebandData: number;
}

const OID = /^[0-9a-f]{40}$/;
/** v2 arguments, besides `want <oid>`, that leave the pack as the wants alone make it. */
const V2_ARGUMENTS = new Set(['done', 'thin-pack', 'ofs-delta', 'include-tag', 'no-progress']);
/** v2 capability lines before the delim-pkt that change nothing about the pack. */
const V2_CAPABILITY = /^(agent|session-id)=|^object-format=sha1$/;
/** v0 capabilities (on the first want line) that change nothing about the pack or its framing. */
const V0_CAPABILITIES = new Set([
  'multi_ack',
  'multi_ack_detailed',
  'no-done',
  'side-band',
  'side-band-64k',
  'thin-pack',
  'ofs-delta',
  'include-tag',
  'no-progress',
  'shallow',
  'deepen-since',
  'deepen-not',
  'deepen-relative',
  'filter',
  'allow-tip-sha1-in-want',
  'allow-reachable-sha1-in-want',
  'object-format=sha1',
]);

/** The full clone a complete request body asks for, or null for any other request. */
export function fullCloneOf(body: Buffer, v2: boolean): FullClone | null {
  const packets = packetsOf(body);
  if (packets === null) return null;
  return v2 ? fullCloneV2(packets) : fullCloneV0(packets);
}

function fullCloneV2(packets: readonly Packet[]): FullClone | null {
  if (packets[0] !== 'command=fetch') return null;
  const delim = packets.indexOf(DELIM);
  const flush = packets.indexOf(FLUSH);
  if (delim < 0 || flush !== packets.length - 1) return null;
  for (const capability of packets.slice(1, delim)) {
    if (typeof capability !== 'string' || !V2_CAPABILITY.test(capability)) return null;
  }
  const wants: string[] = [];
  const options = new Set<string>();
  for (const argument of packets.slice(delim + 1, flush)) {
    if (typeof argument !== 'string') return null;
    if (argument.startsWith('want ')) {
      const oid = argument.slice(5);
      if (!OID.test(oid)) return null;
      wants.push(oid);
    } else if (V2_ARGUMENTS.has(argument)) options.add(argument);
    else return null;
  }
  if (!options.has('done') || wants.length === 0) return null;
  return {
    key: keyOf(wants, options.has('ofs-delta'), options.has('include-tag')),
    preamble: 'packfile\n',
    sidebandData: 65515,
  };
}

function fullCloneV0(packets: readonly Packet[]): FullClone | null {
  // want lines (the first with capabilities), a flush-pkt, then `done`.
  const flush = packets.indexOf(FLUSH);
  if (flush < 1 || packets.length !== flush + 2 || packets[flush + 1] !== 'done') return null;
  const wants: string[] = [];
  let capabilities: string[] = [];
  for (const [i, line] of packets.slice(0, flush).entries()) {
    if (typeof line !== 'string') return null;
    const words = line.split(' ');
    if (words[0] !== 'want' || !OID.test(words[1] ?? '')) return null;
    if (i === 0) capabilities = words.slice(2);
    else if (words.length !== 2) return null;
    wants.push(words[1] as string);
  }
  const known = capabilities.every((c) => V0_CAPABILITIES.has(c) || /^(agent|session-id)=/.test(c));
  const sidebandData = capabilities.includes('side-band-64k')
    ? 65515
    : capabilities.includes('side-band')
      ? 995
      : 0;
  if (!known || sidebandData === 0) return null;
  return {
    key: keyOf(wants, capabilities.includes('ofs-delta'), capabilities.includes('include-tag')),
    preamble: 'NAK\n',
    sidebandData,
  };
}

function keyOf(wants: readonly string[], ofsDelta: boolean, includeTag: boolean): string {
  const hash = createHash('sha256');
  hash.update(`narwal full clone 1\nofs-delta=${ofsDelta}\ninclude-tag=${includeTag}\n`);
  for (const oid of [...new Set(wants)].sort()) hash.update(`${oid}\n`);
  return hash.digest('hex');
}

const DELIM = Symbol('delim');
const FLUSH = Symbol('flush');
type Packet = string | typeof DELIM | typeof FLUSH;

/** Every packet of a complete body: data lines without their LF, delim and flush as markers. */
function packetsOf(body: Buffer): Packet[] | null {
  const packets = completePackets(body);
  if (packets === null || packets.some((p) => p.kind === 'response-end')) return null;
  return packets.map((p) =>
    p.kind === 'data' ? p.payload.toString('utf8').replace(/\n$/, '') : p.kind === 'delim' ? DELIM : FLUSH,
  );
}

/**
 * Recognises a repeatable fetch: one whose answer depends only on the repository's state and on
 * the request, not on what the client already has. Such a request has wants and `done` and no
 * `have`; it may ask for a shallow history (`deepen`, `deepen-since`, `deepen-not`,
 * `deepen-relative`, the client's own `shallow` lines) and a filter. Given one generation (an
 * immutable state), git answers two such requests with the same key the same way: the same
 * shallow boundary (upload-pack.c, send_shallow_list: a function of the wants, the depth options
 * and the client's shallow commits) and an equivalent pack (pack-objects on the same wants, with
 * `--delta-base-offset` for `ofs-delta`, `--include-tag` for `include-tag`, `--filter` for a
 * filter and `--shallow` for the boundary). `thin-pack` changes nothing without haves; progress
 * or `no-progress` only concerns band 2.
 * gitprotocol-v2(5), "fetch"; gitprotocol-pack(5), "Packfile Negotiation".
 *
 * The wants keep their order (git walks them in the order asked, and the shallow lines follow it);
 * a repeated want counts once, as upload-pack keeps only its first. The client's own shallow
 * lines are a set. Only lines and capabilities listed here qualify; anything else (a newer
 * argument this code does not know, `want-ref`, `sideband-all`) makes the request an ordinary
 * fetch, which git answers itself.
 */
import { createHash } from 'node:crypto';
import { completePackets } from './pktLine.js';

export interface RepeatableFetch {
  /** Names the answer: its shallow boundary and its pack. */
  readonly key: string;
  /** The framing of the answer: protocol v2's sections, or v0/v1's lines. */
  readonly version: 'v2' | 'v0';
  /** The largest data part of one sideband packet the client accepts. */
  readonly sidebandData: number;
  /** The answer starts with a shallow boundary that git computes (the request asks for one). */
  readonly shallow: boolean;
  /** A full clone: every object the wants reach, no boundary, no filter. */
  readonly full: boolean;
  /** v2 `packfile-uris`: the URI protocols the client accepts for parts of the pack, if any. */
  readonly uriProtocols: readonly string[];
  /** The wants, each once, in the order asked. */
  readonly wants: readonly string[];
  /** The client accepts deltas against a base by offset (`ofs-delta`). */
  readonly ofsDelta: boolean;
  /** The client asks for the annotated tags of the objects it gets (`include-tag`). */
  readonly includeTag: boolean;
}

const OID = /^[0-9a-f]{40}$/;
/** v2 arguments without a value, besides `want <oid>`, that are part of a repeatable fetch. */
const V2_FLAGS = new Set(['done', 'thin-pack', 'ofs-delta', 'include-tag', 'no-progress', 'deepen-relative']);
/** v2 capability lines before the delim-pkt that change nothing about the answer. */
const V2_CAPABILITY = /^(agent|session-id)=|^object-format=sha1$/;
/** v0 capabilities (on the first want line) that change nothing about the answer but its framing. */
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

interface Shape {
  wants: string[];
  shallows: Set<string>;
  deepen: string | undefined;
  deepenSince: string | undefined;
  deepenNot: string[];
  deepenRelative: boolean;
  filter: string | undefined;
  ofsDelta: boolean;
  includeTag: boolean;
}

/** The repeatable fetch a complete request body asks for, or null for any other request. */
export function repeatableFetchOf(body: Buffer, v2: boolean): RepeatableFetch | null {
  const packets = packetsOf(body);
  if (packets === null) return null;
  return v2 ? fromV2(packets) : fromV0(packets);
}

function emptyShape(): Shape {
  return {
    wants: [],
    shallows: new Set(),
    deepen: undefined,
    deepenSince: undefined,
    deepenNot: [],
    deepenRelative: false,
    filter: undefined,
    ofsDelta: false,
    includeTag: false,
  };
}

function fromV2(packets: readonly Packet[]): RepeatableFetch | null {
  if (packets[0] !== 'command=fetch') return null;
  const delim = packets.indexOf(DELIM);
  const flush = packets.indexOf(FLUSH);
  if (delim < 0 || flush !== packets.length - 1) return null;
  for (const capability of packets.slice(1, delim)) {
    if (typeof capability !== 'string' || !V2_CAPABILITY.test(capability)) return null;
  }
  const shape = emptyShape();
  let done = false;
  let uriProtocols: string[] = [];
  for (const argument of packets.slice(delim + 1, flush)) {
    if (typeof argument !== 'string') return null;
    const space = argument.indexOf(' ');
    const word = space < 0 ? argument : argument.slice(0, space);
    const value = space < 0 ? '' : argument.slice(space + 1);
    if (space < 0 && V2_FLAGS.has(word)) {
      if (word === 'done') done = true;
      else if (word === 'ofs-delta') shape.ofsDelta = true;
      else if (word === 'include-tag') shape.includeTag = true;
      else if (word === 'deepen-relative') shape.deepenRelative = true;
      continue;
    }
    if (word === 'packfile-uris') {
      // At most one such line (gitprotocol-v2(5)); its protocols, comma-separated.
      if (uriProtocols.length > 0 || value === '') return null;
      uriProtocols = value.split(',');
      continue;
    }
    if (!acceptValue(shape, word, value)) return null;
  }
  if (!done || !valid(shape)) return null;
  return result(shape, 'v2', 65515, uriProtocols);
}

function fromV0(packets: readonly Packet[]): RepeatableFetch | null {
  // want lines (the first with capabilities), then shallow/deepen/filter lines, a flush-pkt, `done`.
  const flush = packets.indexOf(FLUSH);
  if (flush < 1 || packets.length !== flush + 2 || packets[flush + 1] !== 'done') return null;
  const shape = emptyShape();
  let capabilities: string[] = [];
  for (const [i, line] of packets.slice(0, flush).entries()) {
    if (typeof line !== 'string') return null;
    const words = line.split(' ');
    if (words[0] === 'want') {
      if (!OID.test(words[1] ?? '') || (i > 0 && words.length !== 2)) return null;
      if (i === 0) capabilities = words.slice(2);
      if (shape.wants.length !== i) return null; // wants come first
      shape.wants.push(words[1] as string);
      continue;
    }
    const space = line.indexOf(' ');
    if (space < 0 || !acceptValue(shape, line.slice(0, space), line.slice(space + 1))) return null;
  }
  const known = capabilities.every((c) => V0_CAPABILITIES.has(c) || /^(agent|session-id)=/.test(c));
  const sidebandData = capabilities.includes('side-band-64k')
    ? 65515
    : capabilities.includes('side-band')
      ? 995
      : 0;
  if (!known || sidebandData === 0 || !valid(shape)) return null;
  shape.ofsDelta = capabilities.includes('ofs-delta');
  shape.includeTag = capabilities.includes('include-tag');
  // In v0 a relative deepen is a capability of the request, not a line of its own.
  shape.deepenRelative = capabilities.includes('deepen-relative');
  return result(shape, 'v0', sidebandData, []);
}

/** One `<word> <value>` line of a request: false for anything a repeatable fetch cannot have. */
function acceptValue(shape: Shape, word: string, value: string): boolean {
  switch (word) {
    case 'want':
      if (!OID.test(value)) return false;
      shape.wants.push(value);
      return true;
    case 'shallow':
      if (!OID.test(value)) return false;
      shape.shallows.add(value);
      return true;
    case 'deepen':
      if (!/^[1-9]\d{0,9}$/.test(value) || shape.deepen !== undefined) return false;
      shape.deepen = value;
      return true;
    case 'deepen-since':
      if (!/^\d{1,20}$/.test(value) || shape.deepenSince !== undefined) return false;
      shape.deepenSince = value;
      return true;
    case 'deepen-not':
      if (value === '' || /\s/.test(value)) return false;
      shape.deepenNot.push(value);
      return true;
    case 'filter':
      if (!/^[\x21-\x7e]+$/.test(value) || shape.filter !== undefined) return false;
      shape.filter = value;
      return true;
    default:
      return false;
  }
}

/** What git itself would refuse, and a request with nothing to fetch, are left to git. */
function valid(shape: Shape): boolean {
  if (shape.wants.length === 0) return false;
  // upload-pack.c: "deepen and deepen-since (or deepen-not) cannot be used together".
  if (shape.deepen !== undefined && (shape.deepenSince !== undefined || shape.deepenNot.length > 0))
    return false;
  return true;
}

function result(
  shape: Shape,
  version: 'v2' | 'v0',
  sidebandData: number,
  uriProtocols: readonly string[],
): RepeatableFetch {
  const shallow =
    shape.deepen !== undefined ||
    shape.deepenSince !== undefined ||
    shape.deepenNot.length > 0 ||
    shape.shallows.size > 0;
  const hash = createHash('sha256');
  const wants = [...new Set(shape.wants)];
  // A full clone keeps the key it had before shallow and filtered fetches were recognised too.
  if (!shallow && shape.filter === undefined && !shape.deepenRelative) {
    hash.update(`narwal full clone 1\nofs-delta=${shape.ofsDelta}\ninclude-tag=${shape.includeTag}\n`);
    for (const oid of [...wants].sort()) hash.update(`${oid}\n`);
  } else {
    hash.update(
      JSON.stringify({
        shape: 'narwal repeatable fetch 1',
        wants,
        shallows: [...shape.shallows].sort(),
        deepen: shape.deepen ?? null,
        deepenSince: shape.deepenSince ?? null,
        deepenNot: shape.deepenNot,
        deepenRelative: shape.deepenRelative,
        filter: shape.filter ?? null,
        ofsDelta: shape.ofsDelta,
        includeTag: shape.includeTag,
      }),
    );
  }
  return {
    key: hash.digest('hex'),
    version,
    sidebandData,
    shallow,
    full: !shallow && shape.filter === undefined && !shape.deepenRelative,
    uriProtocols,
    wants,
    ofsDelta: shape.ofsDelta,
    includeTag: shape.includeTag,
  };
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

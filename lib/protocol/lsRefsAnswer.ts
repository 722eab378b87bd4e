/**
 * The answer to a protocol v2 `ls-refs` (gitprotocol-v2(5)), written from a state's refs as git
 * 2.39's upload-pack writes it from a generation (ls-refs.c), without starting git. A generation's
 * refs are all in a `fully-peeled` packed-refs written from the same map (cache/packedRefs.ts), so
 * git's answer is a function of the map, HEAD and the request:
 *
 * - HEAD first, when a prefix matches `HEAD` (or none is given): `<oid> HEAD`, or `unborn HEAD`
 *   when its branch does not exist and the client sent both `unborn` and `symrefs`; then every
 *   ref one of the prefixes starts, in byte order of their names (`ref-prefix` lines; 65,536 or
 *   more of them count as none, as git's TOO_MANY_PREFIXES);
 * - `symref-target:<ref>` after HEAD with `symrefs` (no other ref of a generation is symbolic);
 * - `peeled:<oid>` after an annotated tag with `peel`, from packed-refs' `^` line.
 *
 * Anything this does not know to be written alike - a capability other than `agent`,
 * `object-format=sha1` and `server-option`, an argument git would refuse, a malformed request,
 * HEAD on an annotated tag with `peel` (git reads the object for that one) - answers null, and
 * git answers instead.
 */

import { completePackets, encodePktLine, FLUSH_PKT } from './pktLine.js';
import { compareNames } from './refName.js';
import type { RefValue } from './refValue.js';

/** ls-refs.c: more prefixes than this and git lists every ref. */
const TOO_MANY_PREFIXES = 65536;

interface LsRefsArguments {
  readonly peel: boolean;
  readonly symrefs: boolean;
  readonly unborn: boolean;
  readonly prefixes: readonly Buffer[];
}

/** git's answer to `request` about `refs` with HEAD naming `head`, or null when git must answer. */
export function lsRefsAnswer(
  request: Buffer,
  refs: ReadonlyMap<string, RefValue>,
  head: string,
): Buffer | null {
  const args = lsRefsArguments(request);
  if (args === null || !head.startsWith('refs/')) return null;
  const matches = (name: string) => {
    if (args.prefixes.length === 0) return true;
    const bytes = Buffer.from(name);
    return args.prefixes.some((p) => bytes.length >= p.length && bytes.subarray(0, p.length).equals(p));
  };
  const lines: string[] = [];
  const headValue = refs.get(head);
  if (matches('HEAD') && (headValue !== undefined || (args.unborn && args.symrefs))) {
    // git peels HEAD by reading its object; only a branch on a tag object would show it.
    if (args.peel && headValue?.peeled !== undefined) return null;
    lines.push(
      `${headValue ? headValue.oid : 'unborn'} HEAD${args.symrefs ? ` symref-target:${head}` : ''}\n`,
    );
  }
  for (const name of [...refs.keys()].filter(matches).sort(compareNames)) {
    const value = refs.get(name) as RefValue;
    lines.push(`${value.oid} ${name}${args.peel && value.peeled ? ` peeled:${value.peeled}` : ''}\n`);
  }
  try {
    return Buffer.concat([...lines.map((line) => encodePktLine(line)), FLUSH_PKT]);
  } catch {
    // A line too long for a packet: git's own answer (or its error) is the one to give.
    return null;
  }
}

/** The arguments of a well-formed ls-refs request narwal answers itself, else null. */
function lsRefsArguments(request: Buffer): LsRefsArguments | null {
  const packets = completePackets(request);
  if (packets === null) return null;
  const last = packets.at(-1);
  if (
    last?.kind !== 'flush' ||
    packets.slice(0, -1).some((p) => p.kind === 'flush' || p.kind === 'response-end')
  )
    return null;
  const line = (i: number) => {
    const p = packets[i];
    if (p?.kind !== 'data') return null;
    // git's packet reader drops one trailing LF (PACKET_READ_CHOMP_NEWLINE).
    return p.payload.at(-1) === 0x0a ? p.payload.subarray(0, -1) : p.payload;
  };
  if (line(0)?.toString('latin1') !== 'command=ls-refs') return null;
  let i = 1;
  for (; packets[i]?.kind === 'data'; i++) {
    const capability = (line(i) as Buffer).toString('latin1');
    if (
      !(capability.startsWith('agent=') || capability.startsWith('server-option=')) &&
      capability !== 'object-format=sha1'
    )
      return null;
  }
  let peel = false;
  let symrefs = false;
  let unborn = false;
  const prefixes: Buffer[] = [];
  if (packets[i]?.kind === 'delim') {
    for (i++; packets[i]?.kind === 'data'; i++) {
      const arg = line(i) as Buffer;
      const text = arg.toString('latin1');
      if (text === 'peel') peel = true;
      else if (text === 'symrefs') symrefs = true;
      else if (text === 'unborn') unborn = true;
      else if (text.startsWith('ref-prefix ')) {
        if (prefixes.length < TOO_MANY_PREFIXES) prefixes.push(arg.subarray('ref-prefix '.length));
      } else return null;
    }
  }
  if (i !== packets.length - 1) return null;
  return { peel, symrefs, unborn, prefixes: prefixes.length >= TOO_MANY_PREFIXES ? [] : prefixes };
}

/**
 * fast-check arbitraries for hostile git request bodies: real captured bodies, mutated the ways a
 * broken or malicious client would (truncations, flipped bytes, lying pkt-line lengths, invalid
 * hex, a missing flush, NUL and space games in capability lists, invalid ref names and object
 * ids, a ref named twice, spliced requests), and pkt-line streams built from scratch.
 */
import fc from 'fast-check';

const ZERO = '0'.repeat(40);

/** The packets of a pkt-line stream, as raw slices, up to the first thing that is not a packet. */
export function splitPackets(body: Buffer): { packets: Buffer[]; rest: Buffer } {
  const packets: Buffer[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const header = body.subarray(at, at + 4).toString('latin1');
    if (!/^[0-9a-f]{4}$/.test(header)) break;
    const length = Number.parseInt(header, 16);
    const size = Math.max(length, 4);
    if (at + size > body.length) break;
    packets.push(body.subarray(at, at + size));
    at += size;
    // A receive-pack head ends at the flush before the pack; a PACK signature ends the stream.
    if (body.subarray(at, at + 4).toString('latin1') === 'PACK') break;
  }
  return { packets, rest: body.subarray(at) };
}

function pkt(payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}

const hexHeader = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16).padStart(4, '0'));
const oddHeader = fc.oneof(
  hexHeader,
  fc.constantFrom(
    'ffff',
    'fff1',
    'FFF0',
    '0003',
    '0001',
    '0002',
    '000',
    'zz12',
    '00 4',
    '-001',
    '0x10',
    '\0\0\0\0',
  ),
  fc.string({ unit: 'binary-ascii', minLength: 4, maxLength: 4 }),
);

/** Object ids that are not, or not quite, object ids. */
export const badOid = fc.oneof(
  fc.constantFrom(
    'F'.repeat(40),
    'g'.repeat(40),
    '0'.repeat(39),
    '0'.repeat(41),
    '0'.repeat(63),
    'a'.repeat(64),
    '',
    ' ',
    `${'0'.repeat(39)}\0`,
    `-${'0'.repeat(39)}`,
  ),
  fc.string({ unit: 'binary-ascii', minLength: 38, maxLength: 66 }),
);

/** Ref names git refuses (each breaks one rule of git check-ref-format), and some it takes. */
export const oddRefName = fc.oneof(
  fc.constantFrom(
    'refs/heads/bad..name',
    'refs/heads/.hidden',
    'refs/heads/x.lock',
    'refs/heads/a b',
    'refs/heads/a~1',
    'refs/heads/a^',
    'refs/heads/a:b',
    'refs/heads/a?',
    'refs/heads/a*',
    'refs/heads/a[',
    'refs/heads/a\\b',
    'refs/heads/a@{1}',
    'refs/heads//double',
    'refs/heads/trailing/',
    'refs/heads/dot.',
    'refs/heads/\x01ctl',
    'refs/heads/\x7f',
    '@',
    'HEAD',
    'main',
    'refs/main',
    'refs/',
    '/refs/heads/x',
    '',
    '../../etc/passwd',
    'refs/heads/../../../x',
    'refs/heads/\xff\xfe',
    `refs/heads/${'x'.repeat(2000)}`,
  ),
  fc.string({ unit: 'binary', maxLength: 80 }).map((s) => `refs/heads/${s}`),
);

type Mutation = (body: Buffer) => Buffer;

const at = (n: number, body: Buffer) => (body.length === 0 ? 0 : n % (body.length + 1));

const byteMutation: fc.Arbitrary<Mutation> = fc.oneof(
  // Truncations: anywhere, and just short of the end.
  fc.nat().map((n) => (b: Buffer) => b.subarray(0, at(n, b))),
  fc.integer({ min: 1, max: 64 }).map((n) => (b: Buffer) => b.subarray(0, Math.max(0, b.length - n))),
  // Flipped bytes.
  fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })).map(([n, x]) => (b: Buffer) => {
    if (b.length === 0) return b;
    const copy = Buffer.from(b);
    const i = n % copy.length;
    copy[i] = (copy[i] ?? 0) ^ x;
    return copy;
  }),
  // NUL, space, LF, high bytes inserted anywhere (capability lists, ref names, oids).
  fc
    .tuple(
      fc.nat(),
      fc.array(fc.constantFrom(0x00, 0x20, 0x0a, 0xff, 0x80, 0x7f), { minLength: 1, maxLength: 4 }),
    )
    .map(([n, bytes]) => (b: Buffer) => {
      const i = at(n, b);
      return Buffer.concat([b.subarray(0, i), Buffer.from(bytes), b.subarray(i)]);
    }),
  // A slice repeated or dropped.
  fc.tuple(fc.nat(), fc.nat({ max: 200 })).map(([n, len]) => (b: Buffer) => {
    const i = at(n, b);
    return Buffer.concat([b.subarray(0, i + len), b.subarray(i)]);
  }),
  fc.tuple(fc.nat(), fc.nat({ max: 200 })).map(([n, len]) => (b: Buffer) => {
    const i = at(n, b);
    return Buffer.concat([b.subarray(0, i), b.subarray(i + len)]);
  }),
);

const packetMutation: fc.Arbitrary<Mutation> = fc.oneof(
  // A lying or malformed length on one packet.
  fc.tuple(fc.nat(), oddHeader).map(([n, header]) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    if (packets.length === 0) return Buffer.concat([Buffer.from(header, 'latin1'), b]);
    const i = n % packets.length;
    const target = packets[i] ?? Buffer.alloc(4);
    packets[i] = Buffer.concat([Buffer.from(header, 'latin1'), target.subarray(4)]);
    return Buffer.concat([...packets, rest]);
  }),
  // Missing flush (or any packet dropped).
  fc.nat().map((n) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    const flushes = packets.flatMap((p, i) => (p.toString('latin1') === '0000' ? [i] : []));
    const drop =
      flushes.length > 0 ? flushes[n % flushes.length] : packets.length > 0 ? n % packets.length : -1;
    return Buffer.concat([...packets.filter((_, i) => i !== drop), rest]);
  }),
  // A huge packet: the maximum, or a length that announces more than follows.
  fc.tuple(fc.nat(), fc.integer({ min: 65000, max: 65516 })).map(([n, size]) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    packets.splice(n % (packets.length + 1), 0, pkt(Buffer.alloc(size, 0x61)));
    return Buffer.concat([...packets, rest]);
  }),
  // Capability games on the first command line: many, duplicated, empty, NUL-separated.
  fc
    .tuple(
      fc.nat(),
      fc.oneof(
        fc.constantFrom(
          '',
          ' ',
          '\0',
          '\0\0',
          '  report-status  ',
          'object-format=sha256',
          'object-format=md5',
        ),
        fc.constantFrom('push-options', 'atomic', 'side-band-64k', 'quiet', 'report-status-v2', 'agent=x'),
        fc.string({ unit: 'binary-ascii', maxLength: 40 }),
      ),
      fc.integer({ min: 1, max: 400 }),
    )
    .map(([n, capability, times]) => (b: Buffer) => {
      const { packets, rest } = splitPackets(b);
      const data = packets.flatMap((p, i) => (p.length > 4 ? [i] : []));
      if (data.length === 0) return b;
      const i = data[n % data.length] ?? 0;
      const payload = (packets[i] ?? Buffer.alloc(4)).subarray(4);
      const extra = Buffer.from(` ${capability}`.repeat(times), 'latin1').subarray(0, 60000);
      const joined = payload.includes(0) ? [payload, extra] : [payload, Buffer.from('\0'), extra];
      packets[i] = pkt(Buffer.concat(joined).subarray(0, 65516));
      return Buffer.concat([...packets, rest]);
    }),
  // A flood of distinct capabilities over several command lines (each line near the maximum).
  fc.tuple(fc.integer({ min: 1, max: 6 }), fc.nat()).map(([lines, start]) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    let n = start;
    const flood = Array.from({ length: lines }, () => {
      let caps = '';
      while (caps.length < 65_000) caps += ` c${(n++).toString(36)}`;
      return pkt(`${ZERO} ${'2'.repeat(40)} refs/heads/flood\0${caps}`);
    });
    return Buffer.concat([packets[0] ?? Buffer.alloc(0), ...flood, ...packets.slice(1), rest]);
  }),
  // An invalid object id or ref name in a command line.
  fc
    .tuple(fc.nat(), fc.nat({ max: 2 }), fc.oneof(badOid, oddRefName))
    .map(([n, field, value]) => (b: Buffer) => {
      const { packets, rest } = splitPackets(b);
      const data = packets.flatMap((p, i) => (p.length > 4 ? [i] : []));
      if (data.length === 0) return b;
      const i = data[n % data.length] ?? 0;
      const payload = (packets[i] ?? Buffer.alloc(4)).subarray(4).toString('latin1');
      const nul = payload.indexOf('\0');
      const command = nul < 0 ? payload : payload.slice(0, nul);
      const parts = command.split(' ');
      parts[Math.min(field, parts.length - 1)] = value;
      packets[i] = pkt(
        Buffer.from(parts.join(' ') + (nul < 0 ? '' : payload.slice(nul)), 'latin1').subarray(0, 65516),
      );
      return Buffer.concat([...packets, rest]);
    }),
  // One command line repeated after the others, for the same ref, with the same or another new id
  // (git's CLI never sends this; a crafted client may).
  fc.tuple(fc.nat(), fc.boolean()).map(([n, sameNew]) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    const flush = packets.findIndex((p) => p.toString('latin1') === '0000');
    const commands = packets.slice(0, flush < 0 ? packets.length : flush).filter((p) => p.length > 4);
    const chosen = commands[n % Math.max(1, commands.length)];
    if (chosen === undefined) return b;
    const payload = chosen.subarray(4).toString('latin1');
    const command = payload.split('\0')[0] ?? '';
    const [oldOid = ZERO, newOid = ZERO, ...ref] = command.replace(/\n$/, '').split(' ');
    const again = pkt(`${sameNew ? oldOid : newOid} ${sameNew ? newOid : '3'.repeat(40)} ${ref.join(' ')}\n`);
    const at = flush < 0 ? packets.length : flush;
    return Buffer.concat([...packets.slice(0, at), again, ...packets.slice(at), rest]);
  }),
  // Many commands (each a valid-looking update of a distinct ref).
  fc.integer({ min: 1, max: 3000 }).map((count) => (b: Buffer) => {
    const { packets, rest } = splitPackets(b);
    const extra = Array.from({ length: count }, (_, i) =>
      pkt(`${ZERO} ${'1'.repeat(40)} refs/heads/f${i}\n`),
    );
    return Buffer.concat([packets[0] ?? Buffer.alloc(0), ...extra, ...packets.slice(1), rest]);
  }),
);

/** One to four mutations of one of the seeds; sometimes two seeds spliced first. */
export function mutatedBody(seeds: readonly Buffer[]): fc.Arbitrary<Buffer> {
  const seed = fc.constantFrom(...seeds);
  const base = fc.oneof(
    { weight: 4, arbitrary: seed },
    {
      weight: 1,
      arbitrary: fc
        .tuple(seed, seed, fc.nat())
        .map(([a, b, n]) => Buffer.concat([a.subarray(0, at(n, a)), b])),
    },
  );
  const mutation = fc.oneof(byteMutation, packetMutation);
  return fc
    .tuple(base, fc.array(mutation, { minLength: 1, maxLength: 4 }))
    .map(([body, mutations]) => mutations.reduce((b, m) => m(b), body));
}

/** pkt-line streams from scratch: valid and invalid headers, random payloads, specials. */
export const randomPktStream: fc.Arbitrary<Buffer> = fc
  .array(
    fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((p) => pkt(Buffer.from(p))),
      fc.constantFrom('0000', '0001', '0002', '0004').map((s) => Buffer.from(s)),
      oddHeader.map((h) => Buffer.from(h, 'latin1')),
      fc.uint8Array({ maxLength: 40 }).map((p) => Buffer.from(p)),
    ),
    { maxLength: 30 },
  )
  .map((parts) => Buffer.concat(parts));

/** Any bytes at all. */
export const randomBytes: fc.Arbitrary<Buffer> = fc
  .uint8Array({ maxLength: 2048 })
  .map((b) => Buffer.from(b));

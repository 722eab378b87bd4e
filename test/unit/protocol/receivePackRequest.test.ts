import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../../lib/protocol/ProtocolError.js';
import {
  DuplicateRef,
  parseReceivePackHead,
  type ReceivePackHead,
  type ReceivePackHeadLimits,
  ReceivePackHeadParser,
} from '../../../lib/protocol/receivePackRequest.js';

const bytes = (text: string) => Buffer.from(text, 'latin1');
const ZERO = '0'.repeat(40);
const NEW = '17746a638b056989141afc462a0f52062cd2fcc3';

/**
 * `git push -o foo=bar -o x <url> HEAD:refs/heads/main HEAD:refs/heads/other`, git 2.39.5 over
 * smart HTTP against a server with receive.advertisePushOptions: the POST body, byte for byte.
 */
const capturedPush = Buffer.from(
  '3030626330303030303030303030303030303030303030303030303030303030303030303030303030303030203137373436' +
    '613633386230353639383931343161666334363261306635323036326364326663633320726566732f68656164732f6d6169' +
    '6e00207265706f72742d7374617475732d763220736964652d62616e642d36346b20717569657420707573682d6f7074696f' +
    '6e73206f626a6563742d666f726d61743d73686131206167656e743d6769742f322e33392e35303036363030303030303030' +
    '3030303030303030303030303030303030303030303030303030303030303030203137373436613633386230353639383931' +
    '343161666334363261306635323036326364326663633320726566732f68656164732f6f746865723030303030303062666f' +
    '6f3d6261723030303578303030305041434b00000002000000039707789c7dca3b0ec3200c00d09d5378ef62d3f0b15455bd' +
    '8ac1aec2409022f7fecd09f2e6e7a719e8372529da2db1e286da4b25ee647123ac9173928ad69483fc7c5f2708bce4d3de40' +
    '8573247c7286075e425f730e77bb29611cc3c31fd0651fc1ad01789c33343030333151486370ddd9bccf6cbb0d7bc79d397b' +
    'b6e7ec6ef853bd211c0098eb0cbd33789ccbc8e40200021700dc7162b62146635a7b322b2630d111ebed22a9ad31',
  'hex',
);

const capturedHead: ReceivePackHead = {
  commands: [
    { oldOid: ZERO, newOid: NEW, ref: 'refs/heads/main' },
    { oldOid: ZERO, newOid: NEW, ref: 'refs/heads/other' },
  ],
  capabilities: [
    'report-status-v2',
    'side-band-64k',
    'quiet',
    'push-options',
    'object-format=sha1',
    'agent=git/2.39.5',
  ],
  shallow: [],
  pushOptions: ['foo=bar', 'x'],
  headBytes: 314,
};

/** `git push --atomic <url> :refs/heads/other`: a deletion only, so no packfile follows. */
const capturedDelete = bytes(
  `00b7${NEW} ${ZERO} refs/heads/other\0 report-status-v2 side-band-64k quiet atomic object-format=sha1 agent=git/2.39.50000`,
);

const limits: ReceivePackHeadLimits = { maxHeadBytes: 1 << 20, maxCommands: 100 };

async function runParser(
  chunks: Buffer[],
  options: ReceivePackHeadLimits = limits,
): Promise<{ out: Buffer; heads: ReceivePackHead[]; error: unknown }> {
  const parser = new ReceivePackHeadParser(options);
  const heads: ReceivePackHead[] = [];
  parser.on('head', (head: ReceivePackHead) => heads.push(head));
  const out: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      out.push(chunk);
      callback();
    },
  });
  const error = await pipeline(Readable.from(chunks, { objectMode: false }), parser, sink).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { out: Buffer.concat(out), heads, error };
}

describe('parseReceivePackHead', () => {
  it('parses a body captured from git push, push options included', () => {
    const { head, rest } = parseReceivePackHead(capturedPush);
    expect(head).toEqual(capturedHead);
    expect(rest.subarray(0, 4)).toEqual(bytes('PACK'));
    expect(rest.length).toBe(capturedPush.length - 314);
  });

  it('parses a deletion with no packfile', () => {
    const { head, rest } = parseReceivePackHead(capturedDelete);
    expect(head.commands).toEqual([{ oldOid: NEW, newOid: ZERO, ref: 'refs/heads/other' }]);
    expect(head.capabilities).toContain('atomic');
    expect(head.pushOptions).toEqual([]);
    expect(head.headBytes).toBe(capturedDelete.length);
    expect(rest.length).toBe(0);
  });

  it('treats the 4-byte probe and an empty body as no commands', () => {
    const empty = { commands: [], capabilities: [], shallow: [], pushOptions: [] };
    expect(parseReceivePackHead(bytes('0000')).head).toEqual({ ...empty, headBytes: 4 });
    expect(parseReceivePackHead(Buffer.alloc(0)).head).toEqual({ ...empty, headBytes: 0 });
  });

  it('reads shallow lines, tolerates LF after each line and takes the ref verbatim', () => {
    const body = bytes(
      `0035shallow ${NEW}\n` +
        `0073${ZERO} ${NEW} refs/heads/a b\0report-status\n` +
        `0063${NEW} ${ZERO} refs/heads/c\n` +
        '0000PACK',
    );
    const { head, rest } = parseReceivePackHead(body);
    expect(head.shallow).toEqual([NEW]);
    expect(head.commands).toEqual([
      { oldOid: ZERO, newOid: NEW, ref: 'refs/heads/a b' },
      { oldOid: NEW, newOid: ZERO, ref: 'refs/heads/c' },
    ]);
    expect(head.capabilities).toEqual(['report-status']);
    expect(rest).toEqual(bytes('PACK'));
  });

  it('accepts 64-hex object ids when every id in the request is that long', () => {
    const oid = 'ab'.repeat(32);
    const zero = '0'.repeat(64);
    const body = bytes(`00b9${zero} ${oid} refs/heads/main\0report-status object-format=sha256\n0000`);
    expect(parseReceivePackHead(body).head.commands).toEqual([
      { oldOid: zero, newOid: oid, ref: 'refs/heads/main' },
    ]);
  });

  it('does not read push options the server never advertised', () => {
    const { head, rest } = parseReceivePackHead(capturedPush, { pushOptionsAdvertised: false });
    expect(head.pushOptions).toEqual([]);
    expect(head.headBytes).toBe(0x122 + 4);
    expect(rest.subarray(0, 4)).toEqual(bytes('000b'));
  });

  it.each([
    ['a short object id', `0057${ZERO.slice(1)} ${NEW} r\n0000`, 'bad object id'],
    ['an upper-case object id', `0063${ZERO} ${NEW.toUpperCase()} refs/heads/x\n0000`, 'bad object id'],
    ['a missing ref', `0056${ZERO} ${NEW}\n0000`, 'expected old/new/ref'],
    ['no separator', `0056${ZERO}${NEW}x\n0000`, 'expected old/new/ref'],
    ['a bad shallow id', '0010shallow xyz\n0000', 'bad object id'],
    ['mixed hash lengths', `007b${ZERO} ${'1'.repeat(64)} refs/heads/x\n0000`, 'different hash algorithms'],
    [
      'a wrong object-format',
      `0078${ZERO} ${NEW} refs/heads/x\0object-format=sha256\n0000`,
      'different hash',
    ],
    ['an unknown object-format', `0075${ZERO} ${NEW} refs/heads/x\0object-format=md5\n0000`, 'unsupported'],
    ['a signed push', '001cpush-cert\0report-status\n0000', 'signed pushes are not supported'],
    ['a delim-pkt', '0001', 'unexpected delim-pkt'],
    ['a bad pkt-line length', '00zz', "length '00zz' is not hexadecimal"],
    ['a truncated body', capturedPush.subarray(0, 300).toString('latin1'), 'truncated receive-pack request'],
  ])('refuses %s', (_what, body, message) => {
    expect(() => parseReceivePackHead(bytes(body))).toThrow(ProtocolError);
    expect(() => parseReceivePackHead(bytes(body))).toThrow(message);
  });

  it('enforces the limits', () => {
    expect(() => parseReceivePackHead(capturedPush, { maxCommands: 1 })).toThrow(
      'too many ref updates in one push (the limit is 1)',
    );
    expect(parseReceivePackHead(capturedPush, { maxCommands: 2 }).head.commands).toHaveLength(2);
    expect(() => parseReceivePackHead(capturedPush, { maxHeadBytes: 313 })).toThrow(
      'receive-pack request head exceeds 313 bytes',
    );
    expect(parseReceivePackHead(capturedPush, { maxHeadBytes: 314 }).head.headBytes).toBe(314);
  });
});

describe('a push naming one ref twice', () => {
  const OTHER = '8d3c1e8a2f1b0c9d7e6f5a4b3c2d1e0f9a8b7c6d';
  const line = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, '0')}${text}`;
  const twice = [
    ['created twice', `${ZERO} ${NEW} refs/heads/x`, `${ZERO} ${OTHER} refs/heads/x`],
    ['a chained update', `${ZERO} ${NEW} refs/heads/x`, `${NEW} ${OTHER} refs/heads/x`],
    ['the same command again', `${ZERO} ${NEW} refs/heads/x`, `${ZERO} ${NEW} refs/heads/x`],
  ] as const;

  it.each(twice)('is refused whole (%s), parsed or streamed', async (_what, first, second) => {
    const body = bytes(`${line(`${first}\0report-status atomic`)}${line(`${second}\n`)}0000PACK`);
    expect(() => parseReceivePackHead(body)).toThrow(DuplicateRef);
    expect(() => parseReceivePackHead(body)).toThrow(
      'the push names refs/heads/x more than once; each ref may be updated once per push, so nothing was changed',
    );
    const streamed = await runParser([...body].map((b) => Buffer.of(b)));
    expect(streamed.error).toBeInstanceOf(DuplicateRef);
    expect(streamed.heads).toEqual([]);
    // git never sees a complete command list.
    expect(streamed.out.length).toBeLessThan(body.indexOf('0000PACK'));
  });

  it('tells refs apart byte for byte', () => {
    const body = bytes(
      `${line(`${ZERO} ${NEW} refs/heads/x\0report-status`)}${line(`${ZERO} ${NEW} refs/heads/X`)}${line(`${ZERO} ${NEW} refs/heads/x/y`)}0000`,
    );
    expect(parseReceivePackHead(body).head.commands.map((c) => c.ref)).toEqual([
      'refs/heads/x',
      'refs/heads/X',
      'refs/heads/x/y',
    ]);
  });
});

describe('ReceivePackHeadParser', () => {
  it('passes every byte through and emits the head once, wherever the body is split', async () => {
    for (let cut = 0; cut <= capturedPush.length; cut++) {
      const { out, heads, error } = await runParser([
        capturedPush.subarray(0, cut),
        capturedPush.subarray(cut),
      ]);
      expect(error).toBeUndefined();
      expect(out.equals(capturedPush)).toBe(true);
      expect(heads).toEqual([capturedHead]);
    }
  });

  it('copes with one byte at a time', async () => {
    const chunks = [...capturedPush].map((byte) => Buffer.of(byte));
    const { out, heads, error } = await runParser(chunks);
    expect(error).toBeUndefined();
    expect(out.equals(capturedPush)).toBe(true);
    expect(heads).toEqual([capturedHead]);
  });

  it('emits the head before passing on the bytes that complete it', async () => {
    const parser = new ReceivePackHeadParser(limits);
    const events: string[] = [];
    parser.on('head', () => events.push('head'));
    parser.on('data', (chunk: Buffer) => events.push(`data:${chunk.length}`));
    parser.write(capturedPush.subarray(0, 100));
    parser.write(capturedPush.subarray(100));
    parser.end();
    await new Promise((resolve) => parser.on('end', resolve));
    expect(events).toEqual(['data:100', 'head', `data:${capturedPush.length - 100}`]);
    expect(parser.head).toEqual(capturedHead);
  });

  it('answers the probe and the empty body with an empty head', async () => {
    const probe = await runParser([bytes('0000')]);
    expect(probe.heads).toEqual([
      { commands: [], capabilities: [], shallow: [], pushOptions: [], headBytes: 4 },
    ]);
    expect(probe.out).toEqual(bytes('0000'));
    const empty = await runParser([]);
    expect(empty.error).toBeUndefined();
    expect(empty.heads).toEqual([
      { commands: [], capabilities: [], shallow: [], pushOptions: [], headBytes: 0 },
    ]);
  });

  it('passes a deletion-only body through', async () => {
    const { out, heads } = await runParser([capturedDelete]);
    expect(out).toEqual(capturedDelete);
    expect(heads[0]?.commands).toHaveLength(1);
  });

  it('fails on a body cut anywhere inside the head', async () => {
    for (let cut = 1; cut < 314; cut += 7) {
      const { heads, error } = await runParser([capturedPush.subarray(0, cut)]);
      expect(heads).toEqual([]);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).message).toMatch(/^truncated receive-pack request/);
    }
  });

  it('fails on a malformed head, on too many commands and on an oversized head', async () => {
    const bad = await runParser([bytes('00zz')]);
    expect(bad.error).toBeInstanceOf(ProtocolError);

    const many = await runParser([capturedPush], { ...limits, maxCommands: 1 });
    expect((many.error as Error).message).toBe('too many ref updates in one push (the limit is 1)');
    expect(many.heads).toEqual([]);

    const long = await runParser(
      [...capturedPush.subarray(0, 200)].map((b) => Buffer.of(b)),
      { ...limits, maxHeadBytes: 150 },
    );
    expect((long.error as Error).message).toBe('receive-pack request head exceeds 150 bytes');
    expect(long.out.length).toBeLessThanOrEqual(150);
  });

  it('fails on a signed push', async () => {
    const { error } = await runParser([bytes('001cpush-cert\0report-status\n')]);
    expect((error as Error).message).toBe('signed pushes are not supported (push-cert)');
  });
});

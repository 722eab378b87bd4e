/**
 * Property-based fuzzing of the parsers that read what clients send: the pkt-line reader, the
 * receive-pack command parser, the upload-pack request classifier, ref names and repository
 * names. Inputs start from request bodies real git sent (recorded in the setup) and are mutated;
 * others are built from scratch. Properties: nothing but the typed error ever escapes, memory
 * stays bounded by the configured limits, and what is accepted round-trips.
 * Figures (cases, crashes, max time and RSS per case) are printed at the end.
 */
import { execFile } from 'node:child_process';
import { join, posix } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProtocolError } from '../../../lib/protocol/ProtocolError.js';
import {
  encodePktLine,
  MAX_PKT_LENGTH,
  MAX_PKT_PAYLOAD,
  type PktLine,
  PktLineReader,
  parsePktLines,
} from '../../../lib/protocol/pktLine.js';
import {
  parseReceivePackHead,
  type ReceivePackHead,
  ReceivePackHeadParser,
} from '../../../lib/protocol/receivePackRequest.js';
import { pushRefNameProblem, refNameProblem } from '../../../lib/protocol/refName.js';
import { classifyUploadPackRequest, predictedPrefix } from '../../../lib/protocol/uploadPackRequest.js';
import { InvalidRepoName, parseRepoName } from '../../../lib/repoName.js';
import { type CapturedRequest, captureGitRequests } from '../../helpers/captureGitRequests.js';
import { FuzzFigures, fuzzParams, fuzzTimeout } from '../../helpers/fuzz.js';
import { makeHome } from '../../helpers/gitClient.js';
import { mutatedBody, oddRefName, randomBytes, randomPktStream } from '../../helpers/mutateGitBody.js';
import { startInProcess } from '../../helpers/narwalServer.js';

const figures = new FuzzFigures();
const isProtocolError = (error: unknown) => error instanceof ProtocolError;
let captured: CapturedRequest[] = [];

beforeAll(async () => {
  const server = await startInProcess();
  try {
    captured = (await captureGitRequests(server.authUrl, 'fuzz/seed', await makeHome())).requests;
  } finally {
    await server.stop();
  }
});

afterAll(() => {
  console.log(figures.summary('protocol fuzz'));
});

const seeds = (service: CapturedRequest['service'], v2?: boolean) =>
  captured
    .filter((r) => r.service === service && (v2 === undefined || (r.gitProtocol === 'version=2') === v2))
    .map((r) => r.body);

/** Splits `input` at the given sizes (cycled), as a network would, into at most about 2000 chunks. */
function chunks(input: Buffer, sizes: readonly number[]): Buffer[] {
  const out: Buffer[] = [];
  const floor = Math.ceil(input.length / 2000);
  for (let at = 0, i = 0; at < input.length; i++) {
    const size = sizes.length === 0 ? input.length : Math.max(floor, sizes[i % sizes.length] ?? 1);
    out.push(input.subarray(at, at + size));
    at += size;
  }
  return out;
}

/** Network-like splits: mostly a few KiB, sometimes single bytes (byte-by-byte for short inputs). */
const chunkSizes = fc.array(fc.oneof(fc.integer({ min: 1, max: 7 }), fc.integer({ min: 8, max: 16_384 })), {
  maxLength: 8,
});

/** Buffer equality without a deep, element-wise comparison (fast on 64 KiB packets). */
function sameBytes(actual: Buffer | undefined, expected: Buffer): void {
  if (actual === undefined || !actual.equals(expected)) {
    expect.fail(
      `bytes differ: ${actual?.toString('latin1').slice(0, 200)} != ${expected.toString('latin1').slice(0, 200)}`,
    );
  }
}

function encodePacket(pkt: PktLine): Buffer {
  if (pkt.kind === 'data') return encodePktLine(pkt.payload);
  return Buffer.from(pkt.kind === 'flush' ? '0000' : pkt.kind === 'delim' ? '0001' : '0002');
}

describe('the captured requests', () => {
  it('cover pushes and fetches in protocol v0 and v2', () => {
    expect(seeds('git-receive-pack').length).toBeGreaterThanOrEqual(4);
    expect(seeds('git-upload-pack', false).length).toBeGreaterThanOrEqual(2);
    expect(seeds('git-upload-pack', true).length).toBeGreaterThanOrEqual(3);
    for (const request of captured) expect(() => parsePktLines(splitHead(request.body))).not.toThrow();
  });
});

/** The pkt-line part of a body: a push's head (its pack cut off), or all of a fetch. */
function splitHead(body: Buffer): Buffer {
  const at = body.indexOf('PACK');
  return at < 0 ? body : body.subarray(0, at);
}

describe('the pkt-line reader', () => {
  it(
    'throws only ProtocolError, agrees with itself however input is split, and round-trips',
    () => {
      const input = fc.oneof(
        randomBytes,
        randomPktStream,
        fc.constant(null).chain(() => mutatedBody(captured.map((r) => splitHead(r.body)))),
      );
      fc.assert(
        fc.property(input, chunkSizes, (bytes, sizes) => {
          const whole = figures.measure('pkt-line reader', () => parsePktLines(bytes), isProtocolError);
          const reader = new PktLineReader();
          const streamed: PktLine[] = [];
          let failed = false;
          for (const chunk of chunks(bytes, sizes)) {
            reader.push(chunk);
            try {
              for (let pkt = reader.next(); pkt !== undefined; pkt = reader.next()) streamed.push(pkt);
            } catch (error) {
              expect(error).toBeInstanceOf(ProtocolError);
              failed = true;
              break;
            }
            // A reader that is drained after every chunk never holds more than one packet's worth.
            if (reader.buffered >= MAX_PKT_LENGTH) expect.fail(`reader holds ${reader.buffered} bytes`);
          }
          if (whole === undefined) {
            expect(failed || reader.buffered > 0).toBe(true);
            return;
          }
          expect(failed).toBe(false);
          expect(reader.buffered).toBe(0);
          sameBytes(Buffer.concat(streamed.map(encodePacket)), Buffer.concat(whole.map(encodePacket)));
          expect(streamed.map((p) => p.kind)).toEqual(whole.map((p) => p.kind));
          // Re-encoding gives the input back (the length's hex digits may have been upper case).
          const encoded = Buffer.concat(whole.map(encodePacket));
          const expected = Buffer.from(bytes);
          for (let at = 0, i = 0; i < whole.length; i++) {
            expected.write(
              expected
                .subarray(at, at + 4)
                .toString('latin1')
                .toLowerCase(),
              at,
              'latin1',
            );
            at += encodePacket(whole[i] as PktLine).length;
          }
          sameBytes(encoded, expected);
        }),
        fuzzParams(1000),
      );
    },
    fuzzTimeout(120_000),
  );
});

const LIMITS = { maxHeadBytes: 256 * 1024, maxCommands: 1000 };
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The head as a client would send it: shallow lines, commands (capabilities spread over them in
 * order, as they may have come), push options. Null when a line no longer fits in a pkt-line (a
 * ref with invalid UTF-8 grows when decoded: the parser does not check ref names, git does).
 */
function encodeHead(head: ReceivePackHead): Buffer | null {
  const line = (text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    return bytes.length < MAX_PKT_PAYLOAD ? encodePktLine(Buffer.concat([bytes, Buffer.from('\n')])) : null;
  };
  const lines: (Buffer | null)[] = head.shallow.map((oid) => line(`shallow ${oid}`));
  const pending = [...head.capabilities];
  for (const c of head.commands) {
    const parts = [`${c.oldOid} ${c.newOid} ${c.ref}`];
    let used = Buffer.byteLength(parts[0] ?? '');
    for (let next = pending[0]; next !== undefined; next = pending[0]) {
      const size = Buffer.byteLength(next) + 1;
      if (used + size >= MAX_PKT_PAYLOAD) break;
      parts.push(parts.length === 1 ? `\0${next}` : ` ${next}`);
      used += size;
      pending.shift();
    }
    lines.push(line(parts.join('')));
  }
  lines.push(Buffer.from('0000'));
  if (head.capabilities.includes('push-options'))
    lines.push(...head.pushOptions.map(line), Buffer.from('0000'));
  if (pending.length > 0 || lines.includes(null)) return null;
  return Buffer.concat(lines as Buffer[]);
}

const comparable = ({ headBytes: _, ...rest }: ReceivePackHead) => rest;

async function streamHead(bytes: Buffer, sizes: readonly number[]) {
  const parser = new ReceivePackHeadParser(LIMITS);
  const passed: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      passed.push(chunk);
      done();
    },
  });
  let head: ReceivePackHead | undefined;
  parser.once('head', (h: ReceivePackHead) => {
    head = h;
  });
  try {
    await pipeline(Readable.from(chunks(bytes, sizes)), parser, sink);
    return { head, passed: Buffer.concat(passed) };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { error };
  }
}

describe('the receive-pack command parser', () => {
  it(
    'throws only ProtocolError, keeps its limits, agrees when streamed, and round-trips',
    async () => {
      const input = fc.oneof(
        { weight: 6, arbitrary: fc.constant(null).chain(() => mutatedBody(seeds('git-receive-pack'))) },
        { weight: 1, arbitrary: randomPktStream },
        { weight: 1, arbitrary: randomBytes },
      );
      await fc.assert(
        fc.asyncProperty(input, chunkSizes, async (bytes, sizes) => {
          const parsed = figures.measure(
            'receive-pack commands',
            () => parseReceivePackHead(bytes, LIMITS),
            isProtocolError,
          );
          const streamed = await streamHead(bytes, sizes);
          if (parsed === undefined) {
            expect(streamed.error).toBeInstanceOf(ProtocolError);
            return;
          }
          const { head, rest } = parsed;
          expect(head.headBytes).toBeLessThanOrEqual(Math.min(bytes.length, LIMITS.maxHeadBytes));
          sameBytes(rest, bytes.subarray(head.headBytes));
          expect(head.commands.length).toBeLessThanOrEqual(LIMITS.maxCommands);
          const oids = [...head.shallow, ...head.commands.flatMap((c) => [c.oldOid, c.newOid])];
          for (const oid of oids) expect(oid).toMatch(OID);
          expect(new Set(oids.map((o) => o.length)).size).toBeLessThanOrEqual(1);
          expect(new Set(head.capabilities).size).toBe(head.capabilities.length);
          // No accepted push names a ref twice (its commands are decided and reported by ref).
          expect(new Set(head.commands.map((c) => c.ref)).size).toBe(head.commands.length);
          // The streaming parser passes every byte through and sees the same head.
          expect(streamed.error).toBeUndefined();
          sameBytes(streamed.passed, bytes);
          expect(streamed.head).toEqual(head);
          // What was accepted, written out again, reads back the same.
          const again = bytes.length > 0 ? encodeHead(head) : null;
          if (again !== null)
            expect(comparable(parseReceivePackHead(again, LIMITS).head)).toEqual(comparable(head));
        }),
        fuzzParams(400),
      );
    },
    fuzzTimeout(120_000),
  );
});

describe('the upload-pack request classifier', () => {
  it(
    'never throws, and predicts only for requests git answers predictably',
    () => {
      const input = fc.tuple(
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(null).chain(() => mutatedBody(seeds('git-upload-pack'))) },
          { weight: 1, arbitrary: randomPktStream },
          { weight: 1, arbitrary: randomBytes },
        ),
        fc.boolean(),
      );
      fc.assert(
        fc.property(input, ([bytes, v2]) => {
          const kind = figures.measure(
            'upload-pack classifier',
            () => classifyUploadPackRequest(bytes, v2),
            () => false,
          );
          if (kind === undefined) return;
          expect(typeof kind.command).toBe('string');
          const prefix = predictedPrefix(kind, v2, () => '1'.repeat(40));
          if (!kind.predictable) {
            expect(prefix).toBeNull();
            return;
          }
          // Predictable means: whole packets, a `done`, no `have`, and (v2) a fetch command.
          const lines = parsePktLines(bytes).flatMap((p) =>
            p.kind === 'data' ? [p.payload.toString('utf8')] : [],
          );
          expect(lines.some((l) => l.replace(/\n$/, '') === 'done')).toBe(true);
          expect(lines.some((l) => l.startsWith('have '))).toBe(false);
          if (v2) expect(kind.command).toBe('fetch');
          expect(prefix).not.toBeNull();
          expect(() => parsePktLines(prefix ?? Buffer.alloc(0))).not.toThrow();
        }),
        fuzzParams(1500),
      );
    },
    fuzzTimeout(120_000),
  );
});

/** No lone surrogates (String.prototype.isWellFormed is newer than this project's lib target). */
const isWellFormed = (text: string) => !/\p{Surrogate}/u.test(text);

/** `git check-ref-format [--allow-onelevel] <name>`: true when git accepts the name. */
function gitAccepts(name: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('git', ['check-ref-format', name], { env: { PATH: process.env.PATH ?? '' } }, (error) =>
      resolve(error === null),
    );
  });
}

const refAlphabet = fc.constantFrom(
  'a',
  'b',
  'z',
  '-',
  '.',
  '/',
  '@',
  '{',
  '}',
  '~',
  '^',
  ':',
  ' ',
  '\\',
  '*',
  '?',
  '[',
  'l',
  'o',
  'c',
  'k',
  '\x01',
  '\x7f',
  'é',
  '\u{1f600}',
);
const nearRefName = fc.string({ unit: refAlphabet, maxLength: 24 });

describe('ref name validation', () => {
  it(
    'never throws, and agrees with git check-ref-format',
    async () => {
      const name = fc.oneof(
        { weight: 4, arbitrary: nearRefName },
        { weight: 2, arbitrary: nearRefName.map((n) => `refs/heads/${n}`) },
        { weight: 1, arbitrary: oddRefName },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
      );
      await fc.assert(
        fc.asyncProperty(name, async (ref) => {
          const problem = figures.measure(
            'ref names',
            () => refNameProblem(ref),
            () => false,
          );
          const pushProblem = figures.measure(
            'ref names',
            () => pushRefNameProblem(ref),
            () => false,
          );
          expect(problem === undefined || typeof problem === 'string').toBe(true);
          expect(pushProblem === undefined || typeof pushProblem === 'string').toBe(true);
          if (pushProblem === undefined) {
            expect(ref.startsWith('refs/')).toBe(true);
            expect(problem).toBeUndefined();
          }
          if (problem === undefined) expect(Buffer.from(ref, 'utf8').toString('utf8')).toBe(ref);
          // argv cannot carry a NUL, and a lone surrogate has no UTF-8 form to hand to git.
          if (ref.includes('\0') || !isWellFormed(ref)) return;
          expect(problem === undefined).toBe(await gitAccepts(ref));
        }),
        fuzzParams(300),
      );
    },
    fuzzTimeout(120_000),
  );
});

describe('repository names', () => {
  it(
    'refuses with InvalidRepoName only, and accepts only names that stay in their place',
    () => {
      const part = fc.constantFrom(
        'a',
        'Z',
        '9',
        '.',
        '..',
        '/',
        '-',
        '_',
        '.git',
        '.lock',
        '%2e',
        '%2f',
        '\\',
        '\0',
        ' ',
        '~',
        'é',
        ':',
        '?',
        '#',
      );
      const name = fc.oneof(
        fc.string({ unit: part, maxLength: 12 }),
        fc.string({ unit: 'binary', maxLength: 120 }),
      );
      fc.assert(
        fc.property(name, (raw) => {
          const parsed = figures.measure(
            'repository names',
            () => parseRepoName(raw),
            (e) => e instanceof InvalidRepoName,
          );
          if (parsed === undefined) return;
          expect(parsed).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/);
          expect(parsed.split('/').every((s) => s !== '.' && s !== '..' && !s.includes('..'))).toBe(true);
          expect(posix.normalize(parsed)).toBe(parsed);
          expect(join('/store/repos', parsed).startsWith('/store/repos/')).toBe(true);
          expect(parseRepoName(parsed)).toBe(parsed);
          expect(parseRepoName(`${parsed}.git`)).toBe(parsed);
        }),
        fuzzParams(2000),
      );
    },
    fuzzTimeout(60_000),
  );
});

describe('the fuzz run', () => {
  it('crashed nothing', () => {
    expect(figures.crashes()).toBe(0);
  });
});

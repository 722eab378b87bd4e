/**
 * Hostile HTTP against a real server (in process, embedded store): mutated git request bodies,
 * truncated packs, lying Content-Length, chunked bodies without an end, slow-loris headers and
 * bodies, odd paths, methods, headers and encodings. Every case must get a clear 4xx (text/plain,
 * a message git prints) or a git-level error within a bounded time; the server must answer the
 * next request; and nothing is written: every key in the store and the repository's index etag
 * are compared before and after each case. A push the mutations left valid may land; then
 * exactly the refs it reported `ok` may change.
 * Figures (cases, crashes, max latency per case, max RSS) are printed at the end.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import { jsonLogger } from '../../lib/log.js';
import { ObjectPresenceStore } from '../../lib/presence/ObjectPresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import type { GetOptions } from '../../lib/store/ObjectStore.js';
import { indexKey } from '../../lib/wal/keys.js';
import { type CapturedRequest, captureGitRequests } from '../helpers/captureGitRequests.js';
import { eventually } from '../helpers/eventually.js';
import { FuzzFigures, fuzzParams, fuzzTimeout } from '../helpers/fuzz.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { mutatedBody, oddRefName } from '../helpers/mutateGitBody.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';
import { gitReport, type RawRequest, type RawResponse, rawRequest } from '../helpers/rawHttp.js';

const REPO = 'fuzz/target';
const BODY_IDLE_MS = 1_000;
const HEADERS_TIMEOUT_MS = 1_500;
const GIT_CHILDREN = 4;
/** Every case must be answered (or closed) within this; slow cases stall for about 2 s. */
const CASE_DEADLINE_MS = 15_000;
const AUTH = `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}`;

let server: RunningNarwal & { app: App };
let home: string;
/** A private repository next to the target, and a token that may read only the target. */
const VAULT = 'vault/secret';
let vaultHead = '';
let targetReader = '';
let captured: CapturedRequest[] = [];
const figures = new FuzzFigures();

beforeAll(async () => {
  server = await startInProcess({
    env: {
      NARWAL_MAX_PUSH_BYTES: String(4 * 1024 ** 2),
      NARWAL_MAX_FETCH_REQUEST_BYTES: String(1024 ** 2),
      NARWAL_BODY_IDLE_MS: String(BODY_IDLE_MS),
      NARWAL_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      NARWAL_REQUEST_TIMEOUT_MS: '20000',
      NARWAL_GIT_CHILDREN: String(GIT_CHILDREN),
      // One token may take every slot here: the share of one client is probed on a server of its own.
      NARWAL_GIT_SHARE: String(GIT_CHILDREN),
      NARWAL_GIT_QUEUE_MS: '0',
    },
  });
  home = await makeHome();
  const session = await captureGitRequests(server.authUrl, REPO, home);
  captured = session.requests;
  // The captured branch creation must not replay successfully: the branch exists again, elsewhere.
  const work = `${home}/recreate`;
  await gitOk(['clone', '-q', `${server.authUrl}/${REPO}.git`, work], { home });
  await gitOk(['push', '-q', `${server.authUrl}/${REPO}.git`, 'HEAD:refs/heads/feature'], {
    cwd: work,
    home,
  });
  const vault = await workRepo(home, 2, 'vault');
  vaultHead = (await gitOk(['rev-parse', 'HEAD'], { cwd: vault, home })).trim();
  await gitOk(['push', '-q', `${server.authUrl}/${VAULT}.git`, 'main'], { cwd: vault, home });
  targetReader = (
    await server.app.tokens.create({ name: 'target-reader', grants: [{ scope: 'read', pattern: REPO }] })
  ).token;
  await server.app.idle();
}, 120_000);

afterAll(async () => {
  console.log(figures.summary('hostile HTTP fuzz'));
  await server?.stop();
});

interface Snapshot {
  keys: string[];
  indexEtag: string;
  vaultEtag: string;
  refs: Map<string, string>;
}

async function listKeys(): Promise<string[]> {
  const keys: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await server.app.store.list('', after ? { startAfter: after } : {});
    keys.push(...page.keys);
    if (page.next === undefined) return keys;
    after = page.next;
  }
}

async function advertisedRefs(): Promise<Map<string, string>> {
  const out = await gitOk(['ls-remote', `${server.authUrl}/${REPO}.git`], { home });
  return new Map(
    out
      .trim()
      .split('\n')
      .map((l) => l.split('\t'))
      .map(([oid, ref]) => [ref ?? '', oid ?? '']),
  );
}

async function snapshot(): Promise<Snapshot> {
  await server.app.idle();
  const [keys, head, vault, refs] = await Promise.all([
    listKeys(),
    server.app.store.head(indexKey(REPO)),
    server.app.store.head(indexKey(VAULT)),
    advertisedRefs(),
  ]);
  return { keys, indexEtag: head.etag, vaultEtag: vault.etag, refs };
}

const seeds = (service: CapturedRequest['service']) => captured.filter((r) => r.service === service);

function head(method: string, path: string, headers: Record<string, string>): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return lines.join('\r\n');
}

const gitHeaders = (service: string, body: Buffer | null, v2: boolean): Record<string, string> => ({
  Authorization: AUTH,
  'Content-Type': `application/x-${service}-request`,
  ...(body ? { 'Content-Length': String(body.length) } : {}),
  ...(v2 ? { 'Git-Protocol': 'version=2' } : {}),
});

interface HostileCase {
  readonly kind: string;
  readonly request: Omit<RawRequest, 'deadlineMs'>;
  /** Who sends it, when not the admin: its answer must hold no object id it may not read. */
  readonly as?: 'anonymous' | 'target-reader';
}

const servicePath = (service: string) => `/${REPO}.git/${service}`;

function post(kind: string, service: string, body: Buffer, v2: boolean): HostileCase {
  return {
    kind,
    request: { head: head('POST', servicePath(service), gitHeaders(service, body, v2)), body: [body] },
  };
}

/** A seed of `service` and whether it was protocol v2. */
const seedOf = (service: CapturedRequest['service']) =>
  fc.constant(null).chain(() => fc.constantFrom(...seeds(service)));

const mutatedPost = (service: CapturedRequest['service']) =>
  fc
    .tuple(
      fc.constant(null).chain(() => mutatedBody(seeds(service).map((s) => s.body))),
      fc.boolean(),
    )
    .map(([body, v2]) => post(`${service} body`, service, body, v2));

const truncatedPack = fc
  .tuple(seedOf('git-receive-pack'), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean())
  .filter(([seed]) => seed.body.indexOf('PACK') > 0)
  .map(([seed, n, x, cut]) => {
    const start = seed.body.indexOf('PACK');
    const span = seed.body.length - start;
    const at = start + (n % span);
    let body: Buffer;
    if (cut) body = seed.body.subarray(0, at);
    else {
      body = Buffer.from(seed.body);
      body[at] = (body[at] ?? 0) ^ x;
    }
    return post('truncated or corrupt pack', 'git-receive-pack', body, false);
  });

/** Declares more than it sends, or sends chunks without the last one, and then waits. */
const unterminated = fc
  .tuple(
    fc.constantFrom<CapturedRequest['service']>('git-upload-pack', 'git-receive-pack'),
    fc.nat(),
    fc.integer({ min: 1, max: 1_000_000 }),
    fc.boolean(),
  )
  .chain(([service, n, extra, chunked]) =>
    seedOf(service).map((seed) => {
      const body = seed.body.subarray(0, n % (seed.body.length + 1));
      const v2 = seed.gitProtocol === 'version=2';
      if (!chunked) {
        const headers = { ...gitHeaders(service, null, v2), 'Content-Length': String(body.length + extra) };
        return {
          kind: 'Content-Length larger than sent',
          request: { head: head('POST', servicePath(service), headers), body: [body] },
        };
      }
      const headers = { ...gitHeaders(service, null, v2), 'Transfer-Encoding': 'chunked' };
      const chunk = Buffer.concat([
        Buffer.from(`${body.length.toString(16)}\r\n`),
        body,
        Buffer.from('\r\n'),
      ]);
      return {
        kind: 'chunked without its end',
        request: { head: head('POST', servicePath(service), headers), body: body.length > 0 ? [chunk] : [] },
      };
    }),
  );

/** Trickles the head or the start of the body a byte at a time, then stops sending. */
const slowLoris = fc.tuple(fc.boolean(), seedOf('git-receive-pack')).map(([headers, seed]): HostileCase => {
  if (headers) {
    return {
      kind: 'slow-loris headers',
      request: {
        head: head('GET', `/${REPO}.git/info/refs?service=git-upload-pack`, {
          Authorization: AUTH,
          'X-Pad': 'x'.repeat(20),
        }),
        trickleMs: 25,
      },
    };
  }
  const headersText = head(
    'POST',
    servicePath('git-receive-pack'),
    gitHeaders('git-receive-pack', seed.body, false),
  );
  return {
    kind: 'slow-loris body',
    request: { head: headersText, body: [seed.body.subarray(0, 30)], trickleMs: 40 },
  };
});

const pathPart = fc.constantFrom(
  'fuzz',
  'target',
  'target.git',
  'fuzz/target.git',
  'new',
  'new.git',
  '..',
  '.',
  '%2e%2e',
  '%2E.',
  '%2f',
  '%5c',
  '%00',
  '%c0%ae%c0%ae',
  '%252e%252e',
  '%e2%80%ae',
  'é',
  '%ff',
  '%',
  '%zz',
  '//',
  '\\',
  ';',
  '@',
  '~',
  'a'.repeat(300),
  '.git',
  'x.lock',
  '-x',
  '_',
);
const suffix = fc.constantFrom(
  '/info/refs',
  '/git-upload-pack',
  '/git-receive-pack',
  '/HEAD',
  '/objects/info/packs',
  '',
  '/',
);
const query = fc.constantFrom(
  '',
  '?service=git-upload-pack',
  '?service=git-receive-pack',
  '?service=git-upload-archive',
  '?service=',
  '?service=git-upload-pack&service=git-receive-pack',
  '?%zz',
);
const method = fc.constantFrom(
  'GET',
  'POST',
  'HEAD',
  'PUT',
  'DELETE',
  'OPTIONS',
  'PATCH',
  'CONNECT',
  'TRACE',
  'PROPFIND',
  'G_T',
);

const oddPath = fc
  .tuple(
    method,
    fc.array(pathPart, { minLength: 1, maxLength: 4 }),
    suffix,
    query,
    fc.boolean(),
    fc.constantFrom(
      '',
      'application/x-git-receive-pack-request',
      'application/x-git-upload-pack-request',
      'text/plain',
    ),
  )
  .map(([verb, parts, end, q, auth, type]): HostileCase => {
    const body = verb === 'POST' || verb === 'PUT' ? Buffer.from('0000') : null;
    const headers: Record<string, string> = {
      ...(auth ? { Authorization: AUTH } : {}),
      ...(type ? { 'Content-Type': type } : {}),
      ...(body ? { 'Content-Length': String(body.length) } : {}),
    };
    return {
      kind: 'odd path, method or type',
      request: {
        head: head(verb, `/${parts.join('/')}${end}${q}`, headers),
        ...(body ? { body: [body] } : {}),
      },
    };
  });

const headerAbuse = fc
  .tuple(
    fc.constantFrom(
      'huge header',
      'many headers',
      'bad header name',
      'conflicting lengths',
      'length and chunked',
      'bad length',
      'absurd length',
      'unknown encoding',
      'bad gzip',
      'gzip bomb',
      'NUL in header',
    ),
    fc.integer({ min: 17, max: 200 }),
    fc.constantFrom<CapturedRequest['service']>('git-upload-pack', 'git-receive-pack'),
  )
  .chain(([kind, kib, service]) =>
    seedOf(service).map((seed): HostileCase => {
      const base = gitHeaders(service, seed.body, seed.gitProtocol === 'version=2');
      const path = servicePath(service);
      const withHeaders = (headers: Record<string, string>, extra = '', body: Buffer[] = [seed.body]) => ({
        kind: `header abuse: ${kind}`,
        request: { head: head('POST', path, headers) + extra, body },
      });
      switch (kind) {
        case 'huge header':
          return withHeaders({ ...base, 'X-Huge': 'x'.repeat(kib * 1024) });
        case 'many headers':
          return withHeaders(base, Array.from({ length: kib * 30 }, (_, i) => `\r\nX-${i}: y`).join(''));
        case 'bad header name':
          return withHeaders(base, '\r\nBad Header: x');
        case 'conflicting lengths':
          return withHeaders(base, `\r\nContent-Length: ${seed.body.length + 1}`);
        case 'length and chunked':
          return withHeaders({ ...base, 'Transfer-Encoding': 'chunked' });
        case 'bad length':
          return withHeaders({ ...base, 'Content-Length': '-1' });
        case 'absurd length':
          return withHeaders({ ...base, 'Content-Length': '99999999999999' }, '', [
            seed.body.subarray(0, 100),
          ]);
        case 'unknown encoding':
          return withHeaders({ ...base, 'Content-Encoding': 'br' });
        case 'bad gzip': {
          const gz = gzipSync(seed.body).subarray(0, 10 + (kib % 20));
          const garbage = Buffer.concat([gz, Buffer.from('not gzip at all')]);
          return withHeaders(
            { ...base, 'Content-Encoding': 'gzip', 'Content-Length': String(garbage.length) },
            '',
            [garbage],
          );
        }
        case 'gzip bomb': {
          const bomb = gzipSync(Buffer.alloc(8 * 1024 ** 2, 0x30));
          return withHeaders(
            { ...base, 'Content-Encoding': 'gzip', 'Content-Length': String(bomb.length) },
            '',
            [bomb],
          );
        }
        default:
          return withHeaders(base, '\r\nX-Nul: a\0b');
      }
    }),
  );

/** A push of a valid-looking head whose ref name is invalid (with the seed's real pack). */
const invalidRef = fc.tuple(seedOf('git-receive-pack'), oddRefName).map(([seed, ref]) => {
  const at = seed.body.indexOf('PACK');
  const pack = at < 0 ? Buffer.alloc(0) : seed.body.subarray(at);
  const line = Buffer.from(
    `${'0'.repeat(40)} ${'1'.repeat(40)} ${ref}\0report-status side-band-64k`,
    'latin1',
  ).subarray(0, 65000);
  const pkt = Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0')), line]);
  return post('invalid ref name', 'git-receive-pack', Buffer.concat([pkt, Buffer.from('0000'), pack]), false);
});

/**
 * Dot segments, encoded dots and slashes, doubled slashes and names of the private repository
 * against the JSON API and the monitor pages, by anonymous clients and by a token of the target.
 * Only the admin reads (GET/HEAD), so no case can change anything by being allowed to.
 */
const apiPart = fc.constantFrom(
  'fuzz',
  'target',
  'target.git',
  'vault',
  'secret',
  '..',
  '.',
  '',
  '%2e%2e',
  '%2E.',
  '%2f',
  '%2F',
  '%5c',
  '%00',
  '%252e%252e',
  'vault%2fsecret',
  '..%2fvault',
  '%2e%2e%2fvault',
  'fuzz%2f..%2fvault',
  'api',
  'v1',
  'repos',
  '-',
  '%2d',
  'entries',
  'tokens',
  'target-reader',
);
const apiPrefix = fc.constantFrom(
  '/api/v1/repos/',
  '/api/v1/',
  '/api/v1/repos/fuzz/target/',
  '/api/v1/repos/fuzz/target/-/',
  '/api/v1/repos/fuzz/target/-/entries/',
  '/api%2fv1/repos/',
  '//api/v1/repos/',
  '/',
  '/fuzz/target/',
  '/fuzz/target/-/',
  '/fuzz/target/-/entry/',
);
const apiSuffix = fc.constantFrom(
  '',
  '/',
  '.git',
  '/-/log',
  '/-/log?before=99&limit=2',
  '/-/entries/1',
  '/-/refs',
  '/-/refs?at=1',
  '/-/who?ref=refs/heads/main',
  '/-/who?ref=..%2f..%2fHEAD',
  '/-/diff?from=0&to=1',
  '/-/rewind',
  '/-/rewind?to=0',
  '/-/entry/1',
  '/-/protection',
  '/-/protection?pattern=..%2f*',
);
const apiTraversal = fc
  .tuple(
    apiPrefix,
    // Real names now and then, so that some cases are served and the rest are near misses.
    fc.oneof(
      fc.constantFrom(
        ['fuzz', 'target'],
        ['vault', 'secret'],
        ['fuzz', 'target', '..', '..', 'vault', 'secret'],
      ),
      fc.array(apiPart, { minLength: 1, maxLength: 4 }),
    ),
    apiSuffix,
    fc.constantFrom('GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE'),
    fc.constantFrom<'anonymous' | 'target-reader' | 'admin'>('anonymous', 'target-reader', 'admin'),
    fc.boolean(),
  )
  .map(([prefix, parts, suffix, verb, who, html]): HostileCase => {
    const as = who === 'admin' && verb !== 'GET' && verb !== 'HEAD' ? 'target-reader' : who;
    const body = verb === 'POST' || verb === 'PUT' ? Buffer.from('{"to":0,"dryRun":false,"rules":[]}') : null;
    const headers: Record<string, string> = {
      ...(as === 'admin' ? { Authorization: AUTH } : {}),
      ...(as === 'target-reader'
        ? { Authorization: `Basic ${Buffer.from(`x:${targetReader}`).toString('base64')}` }
        : {}),
      ...(html ? { Accept: 'text/html' } : {}),
      ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(body.length) } : {}),
    };
    return {
      kind: 'traversal in API and monitor paths',
      request: {
        head: head(verb, `${prefix}${parts.join('/')}${suffix}`, headers),
        ...(body ? { body: [body] } : {}),
      },
      ...(as === 'admin' ? {} : { as }),
    };
  });

const hostileCase: fc.Arbitrary<HostileCase> = fc.oneof(
  { weight: 6, arbitrary: mutatedPost('git-receive-pack') },
  { weight: 5, arbitrary: mutatedPost('git-upload-pack') },
  { weight: 2, arbitrary: truncatedPack },
  { weight: 2, arbitrary: invalidRef },
  { weight: 2, arbitrary: unterminated },
  { weight: 1, arbitrary: slowLoris },
  { weight: 4, arbitrary: oddPath },
  { weight: 3, arbitrary: headerAbuse },
  { weight: 4, arbitrary: apiTraversal },
);

/** Runs `work` while sampling this process's RSS (the server runs in it). */
async function sampled<T>(work: () => Promise<T>): Promise<{ value: T; rss: number }> {
  let rss = process.memoryUsage.rss();
  const timer = setInterval(() => {
    rss = Math.max(rss, process.memoryUsage.rss());
  }, 10);
  try {
    return { value: await work(), rss };
  } finally {
    clearInterval(timer);
  }
}

/** What a case's answer was; throws (failing the property) on anything a client must not see. */
function judge(c: HostileCase, response: RawResponse): 'refused' | 'git-error' | 'answered' | 'accepted' {
  const context = `${c.kind}: ${response.status} ${response.body.toString('latin1').slice(0, 300)}`;
  expect(response.timedOut, `${c.kind}: no answer within ${CASE_DEADLINE_MS} ms`).toBe(false);
  expect(response.status, `${c.kind}: the connection closed without an answer`).not.toBe(0);
  expect(response.status, context).toBeLessThan(500);
  if (response.status >= 400) {
    // The JSON API answers {"error": message}; a browser (Accept: text/html) outside git's paths
    // gets an error page with the message; everything else the message as text.
    const line = c.request.head.split('\r\n')[0] ?? '';
    const api = / \/api\//.test(line);
    const page =
      !api &&
      /^accept:.*text\/html/im.test(c.request.head) &&
      !/\/(info\/refs|git-upload-pack|git-receive-pack)(\?| )/.test(line);
    expect(response.headers['content-type'], context).toMatch(
      api ? /^application\/json/ : page ? /^text\/html/ : /^text\/plain/,
    );
    // A HEAD answer carries the headers of the message, not its body.
    if (!c.request.head.startsWith('HEAD ')) {
      const body = response.body.toString('utf8');
      if (page) expect(body, context).toMatch(/<div class="box error">[^<\s]/);
      else {
        const message = api ? (JSON.parse(body) as { error: string }).error : body;
        expect(message, context).toMatch(/^narwal: \S/);
      }
    }
    return 'refused';
  }
  const report = gitReport(response.body);
  if (report.report.some((l) => l.startsWith('ok '))) return 'accepted';
  if (
    report.errors.length > 0 ||
    report.report.some((l) => l.startsWith('ng ') || /^unpack (?!ok)/.test(l))
  ) {
    return 'git-error';
  }
  return 'answered';
}

/** Runs `cases` against the server, each checked by `judge`, for leaks, liveness and writes. */
async function runHostile(cases: fc.Arbitrary<HostileCase>, runs: number): Promise<Map<string, number>> {
  const outcomes = new Map<string, number>();
  let before = await snapshot();
  await fc.assert(
    fc.asyncProperty(cases, async (c) => {
      const { value: response, rss } = await sampled(() =>
        rawRequest(server.url, { ...c.request, deadlineMs: CASE_DEADLINE_MS }),
      );
      let outcome: ReturnType<typeof judge>;
      try {
        outcome = judge(c, response);
        // No object id of a repository the sender may not read, whatever the path said.
        const hidden =
          c.as === undefined ? [] : [vaultHead, ...(c.as === 'anonymous' ? before.refs.values() : [])];
        const answer = response.body.toString('latin1');
        for (const oid of hidden) expect(answer.includes(oid), `${c.kind}: leaked ${oid}`).toBe(false);
        figures.record(c.kind, response.ms, { rssBytes: rss });
      } catch (error) {
        figures.record(c.kind, response.ms, { crashed: true, rssBytes: rss });
        throw error;
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      // The server still answers.
      const health = await rawRequest(server.url, {
        head: head('GET', '/healthz', {}),
        deadlineMs: 5_000,
      });
      expect(health.status, `after ${c.kind}`).toBe(200);
      const after = await snapshot();
      expect(after.vaultEtag, `${VAULT} after ${c.kind}`).toBe(before.vaultEtag);
      if (outcome === 'accepted') {
        // Only what the push reported ok changed.
        const ok = new Set(
          gitReport(response.body)
            .report.filter((l) => l.startsWith('ok '))
            .map((l) => l.slice(3)),
        );
        for (const ref of new Set([...before.refs.keys(), ...after.refs.keys()])) {
          if (!ok.has(ref)) expect(after.refs.get(ref), `${ref} after ${c.kind}`).toBe(before.refs.get(ref));
        }
      } else {
        expect(after.indexEtag, `index after ${c.kind}`).toBe(before.indexEtag);
        expect(after.keys, `store after ${c.kind}`).toEqual(before.keys);
      }
      before = after;
    }),
    fuzzParams(runs),
  );
  return outcomes;
}

const printOutcomes = (what: string, outcomes: Map<string, number>) =>
  console.log(`${what} outcomes: ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(', ')}`);

describe('hostile HTTP', () => {
  it(
    'answers every hostile request with a clear 4xx or git-level error, stays up, and writes nothing',
    async () => {
      figures.begin();
      printOutcomes('hostile HTTP', await runHostile(hostileCase, 150));
    },
    fuzzTimeout(400_000),
  );

  it(
    'never lets a path into the API or the monitor reach a repository the sender may not read',
    async () => {
      const outcomes = await runHostile(apiTraversal, 200);
      printOutcomes('API and monitor traversal', outcomes);
      // The cases reach the routes (some are served) rather than all failing at the parser.
      expect(outcomes.get('answered') ?? 0).toBeGreaterThan(0);
    },
    fuzzTimeout(300_000),
  );
});

function pkt(line: string): Buffer {
  return Buffer.concat([
    Buffer.from((Buffer.byteLength(line) + 4).toString(16).padStart(4, '0')),
    Buffer.from(line),
  ]);
}

/** A pack of the objects `revs` name (as `git pack-objects --revs` reads them), as a push sends it. */
async function packOf(dir: string, revs: readonly string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['pack-objects', '--stdout', '--revs', '-q'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, GIT_CONFIG_NOSYSTEM: '1' },
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`git pack-objects exited ${code}`)),
    );
    child.stdin.end(`${revs.join('\n')}\n`);
  });
}

async function leases(dataDir = server.dataDir): Promise<number> {
  const presence = new ObjectPresenceStore({ store: new FsObjectStore(`${dataDir}/cache/presence`) });
  return (await presence.list(`repo#${REPO}`, 'lease#')).length;
}

describe('hostile HTTP, case by case', () => {
  it('cuts off stalled uploads: their git slots and leases come back after the idle bound', async () => {
    const before = await snapshot();
    const fetch = seeds('git-upload-pack').find((s) => s.gitProtocol !== 'version=2');
    const push = seeds('git-receive-pack')[0];
    if (!fetch || !push) throw new Error('no captured requests');
    const stall = (service: string, body: Buffer) =>
      rawRequest(server.url, {
        head: head('POST', servicePath(service), {
          ...gitHeaders(service, null, false),
          'Content-Length': String(body.length),
        }),
        body: [body.subarray(0, 40)],
        deadlineMs: CASE_DEADLINE_MS,
      });
    const stalled = [
      stall('git-upload-pack', fetch.body),
      stall('git-upload-pack', fetch.body),
      ...Array.from({ length: GIT_CHILDREN }, () => stall('git-receive-pack', push.body)),
    ];
    // A fetch request is read whole before anything is leased or started for it, so the stalled
    // fetches hold nothing. The stalled pushes, streamed into git, hold every git slot (and the
    // node's read lease on the generation they push onto, which they share)...
    const running = () => server.app.gitBudget.running;
    expect(await eventually(async () => running() >= GIT_CHILDREN, { withinMs: 3_000 })).toBe(true);
    expect(running()).toBe(GIT_CHILDREN);
    expect(await leases()).toBe(1);
    const busy = await rawRequest(server.url, {
      head: head('GET', `/${REPO}.git/info/refs?service=git-upload-pack`, { Authorization: AUTH }),
      deadlineMs: 5_000,
    });
    expect(busy.status).toBe(503);
    // ...until the idle bound cuts them off with a message git prints.
    for (const response of await Promise.all(stalled)) {
      expect(response.status).toBe(408);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      expect(response.body.toString()).toMatch(/^narwal: the (fetch request|push) stalled/);
      expect(response.ms).toBeLessThan(BODY_IDLE_MS + 4_000);
    }
    expect(await eventually(async () => running() === 0)).toBe(true);
    // Nobody holds the lease any more: it goes once the node lets go of what it keeps for later.
    await server.app.idle();
    expect(await leases()).toBe(0);
    const after = await gitOk(['ls-remote', `${server.authUrl}/${REPO}.git`], { home });
    expect(after).toContain('refs/heads/main');
    const now = await snapshot();
    expect(now.keys).toEqual(before.keys);
    expect(now.indexEtag).toBe(before.indexEtag);
  });

  it('answers headers that never end with 408, and oversized headers with 431, in text', async () => {
    const slow = await rawRequest(server.url, {
      head: head('GET', '/healthz', { 'X-Pad': 'x'.repeat(200) }),
      trickleMs: 20,
      deadlineMs: CASE_DEADLINE_MS,
    });
    expect(slow.status).toBe(408);
    expect(slow.body.toString()).toMatch(/^narwal: the request did not arrive in time/);
    expect(slow.ms).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    const huge = await rawRequest(server.url, {
      head: head('GET', '/healthz', { 'X-Huge': 'x'.repeat(64 * 1024) }),
      deadlineMs: CASE_DEADLINE_MS,
    });
    expect(huge.status).toBe(431);
    expect(huge.headers['content-type']).toMatch(/^text\/plain/);
    expect(huge.body.toString()).toMatch(/^narwal: the request headers are larger than this server accepts/);
  });

  it('refuses a body that is not the gzip it claims with 400, for fetches and pushes', async () => {
    const before = await snapshot();
    for (const service of ['git-upload-pack', 'git-receive-pack']) {
      const body = Buffer.concat([gzipSync(Buffer.from('0000')).subarray(0, 12), Buffer.from('garbage')]);
      const response = await rawRequest(server.url, {
        head: head('POST', servicePath(service), {
          ...gitHeaders(service, body, false),
          'Content-Encoding': 'gzip',
        }),
        body: [body],
        deadlineMs: CASE_DEADLINE_MS,
      });
      expect(response.status).toBe(400);
      expect(response.body.toString()).toMatch(/is not valid gzip data/);
    }
    expect((await snapshot()).keys).toEqual(before.keys);
  });

  it('parses a megabyte of distinct capabilities in bounded time and writes nothing', async () => {
    const before = await snapshot();
    const lines: Buffer[] = [];
    for (let line = 0, n = 0; line < 16; line++) {
      let caps = '';
      while (caps.length < 65_000) caps += ` c${(n++).toString(36)}`;
      lines.push(pkt(`${'0'.repeat(40)} ${'2'.repeat(40)} refs/heads/flood${line}\0report-status${caps}`));
    }
    const body = Buffer.concat([...lines, Buffer.from('0000')]);
    const response = await rawRequest(server.url, {
      head: head('POST', servicePath('git-receive-pack'), gitHeaders('git-receive-pack', body, false)),
      body: [body],
      deadlineMs: CASE_DEADLINE_MS,
    });
    expect(response.status).toBeGreaterThan(0);
    expect(response.status).toBeLessThan(500);
    expect(response.ms).toBeLessThan(10_000);
    const after = await snapshot();
    expect(after.keys).toEqual(before.keys);
    expect(after.indexEtag).toBe(before.indexEtag);
  });

  it('refuses a push that names one ref twice, whole, with a clear message, and writes nothing', async () => {
    const work = `${home}/duplicate-ref`;
    await gitOk(['clone', '-q', `${server.authUrl}/${REPO}.git`, work], { home });
    const b = await commitFile(work, home, 'dup-b.txt', 'b\n');
    const c = await commitFile(work, home, 'dup-c.txt', 'c\n');
    const main = (await gitOk(['rev-parse', 'origin/main'], { cwd: work, home })).trim();
    const pack = await packOf(work, [c, `^${main}`]);
    const zero = '0'.repeat(40);
    const ref = 'refs/heads/duplicate';
    // Stock receive-pack (git 2.39) applies such commands one by one without --atomic (the second
    // create fails, a chained update lands) and fails both with it; narwal refuses the whole push.
    const shapes = [
      { kind: 'the same ref created twice', lines: [`${zero} ${b} ${ref}`, `${zero} ${c} ${ref}`] },
      { kind: 'a chained update', lines: [`${zero} ${b} ${ref}`, `${b} ${c} ${ref}`] },
      { kind: 'main moved twice', lines: [`${main} ${b} refs/heads/main`, `${main} ${c} refs/heads/main`] },
    ];
    for (const atomic of [false, true]) {
      for (const shape of shapes) {
        const before = await snapshot();
        const [first = '', ...others] = shape.lines;
        const caps = `report-status side-band-64k${atomic ? ' atomic' : ''}`;
        const body = Buffer.concat([
          pkt(`${first}\0${caps}`),
          ...others.map((line) => pkt(line)),
          Buffer.from('0000'),
          pack,
        ]);
        const response = await rawRequest(server.url, {
          head: head('POST', servicePath('git-receive-pack'), gitHeaders('git-receive-pack', body, false)),
          body: [body],
          deadlineMs: CASE_DEADLINE_MS,
        });
        const context = `${shape.kind}${atomic ? ', atomic' : ''}: ${response.status} ${response.body.toString()}`;
        expect(response.status, context).toBe(400);
        expect(response.headers['content-type'], context).toMatch(/^text\/plain/);
        expect(response.body.toString(), context).toMatch(
          /^narwal: .* names refs\/heads\/\S+ more than once/,
        );
        const after = await snapshot();
        expect(after.keys, context).toEqual(before.keys);
        expect(after.indexEtag, context).toBe(before.indexEtag);
        expect(after.refs, context).toEqual(before.refs);
      }
    }
  });

  it('lands an atomic push whole or not at all, even when git refuses one of its refs before narwal decides', async () => {
    const work = `${home}/atomic-partial`;
    await gitOk(['clone', '-q', `${server.authUrl}/${REPO}.git`, work], { home });
    const good = await commitFile(work, home, 'atomic-good.txt', 'good\n');
    const main = (await gitOk(['rev-parse', 'origin/main'], { cwd: work, home })).trim();
    const pack = await packOf(work, [good, `^${main}`]);
    const zero = '0'.repeat(40);
    // The second ref names a commit the pack does not carry: git's connectivity check refuses it
    // ("missing necessary objects") and hands only the first to narwal. Stock receive-pack (git
    // 2.39) then updates the first anyway, --atomic or not.
    const missing = '1234567890123456789012345678901234567890';
    const before = await snapshot();
    const body = Buffer.concat([
      pkt(`${zero} ${good} refs/heads/atomic-good\0report-status side-band-64k atomic`),
      pkt(`${zero} ${missing} refs/heads/atomic-missing`),
      Buffer.from('0000'),
      pack,
    ]);
    const response = await rawRequest(server.url, {
      head: head('POST', servicePath('git-receive-pack'), gitHeaders('git-receive-pack', body, false)),
      body: [body],
      deadlineMs: CASE_DEADLINE_MS,
    });
    const { report } = gitReport(response.body);
    const context = `${response.status} ${JSON.stringify(report)}`;
    expect(report, context).toContainEqual(
      expect.stringMatching(/^ng refs\/heads\/atomic-missing missing necessary objects/),
    );
    expect(report, context).toContainEqual(expect.stringMatching(/^ng refs\/heads\/atomic-good .*atomic/));
    expect(
      report.filter((line) => line.startsWith('ok ')),
      context,
    ).toEqual([]);
    const after = await snapshot();
    expect(after.indexEtag, context).toBe(before.indexEtag);
    expect(after.refs, context).toEqual(before.refs);
  });

  it('takes a rewind through the JSON API in JSON only, and never from another site', async () => {
    const send = (headers: Record<string, string>, body: string) =>
      rawRequest(server.url, {
        head: head('POST', `/api/v1/repos/${REPO}/-/rewind`, {
          Authorization: AUTH,
          'Content-Length': String(Buffer.byteLength(body)),
          ...headers,
        }),
        body: [Buffer.from(body)],
        deadlineMs: CASE_DEADLINE_MS,
      });
    const cases: [string, Record<string, string>, string, number, RegExp][] = [
      // A cross-site form can send this content type without a preflight.
      [
        'a form',
        { 'Content-Type': 'application/x-www-form-urlencoded' },
        'to=1',
        415,
        /send application\/json/,
      ],
      [
        'a form, same site',
        { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://127.0.0.1' },
        'to=1',
        415,
        /send application\/json/,
      ],
      ['text/plain', { 'Content-Type': 'text/plain' }, '{"to":1}', 415, /send application\/json/],
      // A sandboxed frame's form, or a page with a no-referrer policy, says Origin: null.
      ['Origin: null', { 'Content-Type': 'application/json', Origin: 'null' }, '{"to":1}', 403, /cross-site/],
      [
        'Origin: null, form',
        { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'null' },
        'to=1',
        403,
        /cross-site/,
      ],
    ];
    for (const [kind, headers, body, status, message] of cases) {
      const before = await snapshot();
      const response = await send(headers, body);
      const text = response.body.toString();
      expect(response.status, `${kind}: ${text}`).toBe(status);
      expect(response.headers['content-type'], kind).toMatch(/^application\/json/);
      expect((JSON.parse(text) as { error: string }).error, kind).toMatch(message);
      const after = await snapshot();
      expect(after.indexEtag, kind).toBe(before.indexEtag);
      expect(after.keys, kind).toEqual(before.keys);
    }
  });

  it('refuses every state-changing request from another site, before doing anything', async () => {
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));
    const routes: [string, string, string, Buffer][] = [
      [
        'PUT',
        `/api/v1/repos/${REPO}/-/protection`,
        'application/json',
        json({ rule: { pattern: 'refs/heads/main', denyForce: true } }),
      ],
      ['DELETE', `/api/v1/repos/${REPO}/-/protection`, '', Buffer.alloc(0)],
      ['DELETE', `/api/v1/repos/${REPO}/-/protection?pattern=refs/heads/main`, '', Buffer.alloc(0)],
      ['POST', `/api/v1/repos/${REPO}/-/rewind`, 'application/json', json({ to: 1 })],
      [
        'POST',
        '/api/v1/tokens',
        'application/json',
        json({ name: 'csrf', grants: [{ scope: 'admin', pattern: '**' }] }),
      ],
      ['DELETE', '/api/v1/tokens/target-reader', '', Buffer.alloc(0)],
      ['POST', `/${REPO}/-/rewind`, 'application/x-www-form-urlencoded', Buffer.from('to=1&expect=1')],
      [
        'POST',
        servicePath('git-receive-pack'),
        'application/x-git-receive-pack-request',
        seeds('git-receive-pack')[0]?.body ?? Buffer.alloc(0),
      ],
    ];
    const sites: Record<string, string>[] = [
      { Origin: 'https://evil.example' },
      { Origin: 'null' },
      { Origin: 'http://127.0.0.1.evil.example' },
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site', Origin: 'http://127.0.0.1' },
    ];
    for (const [verb, path, type, body] of routes) {
      for (const site of sites) {
        const kind = `${verb} ${path} with ${JSON.stringify(site)}`;
        const before = await snapshot();
        const response = await rawRequest(server.url, {
          head: head(verb, path, {
            Authorization: AUTH,
            ...(type ? { 'Content-Type': type } : {}),
            'Content-Length': String(body.length),
            ...site,
          }),
          body: [body],
          deadlineMs: CASE_DEADLINE_MS,
        });
        expect(response.status, `${kind}: ${response.body.toString()}`).toBe(403);
        expect(response.body.toString(), kind).toMatch(/narwal: cross-site requests cannot change anything/);
        const after = await snapshot();
        expect(after.indexEtag, kind).toBe(before.indexEtag);
        expect(after.keys, kind).toEqual(before.keys);
      }
    }
    // The same guard lets this host's own pages through: the rules as they are, set again, change nothing.
    const same = json({ rules: [] });
    const own = await rawRequest(server.url, {
      head: head('PUT', `/api/v1/repos/${REPO}/-/protection`, {
        Authorization: AUTH,
        'Content-Type': 'application/json',
        'Content-Length': String(same.length),
        Origin: 'http://127.0.0.1',
        'Sec-Fetch-Site': 'same-origin',
      }),
      body: [same],
      deadlineMs: CASE_DEADLINE_MS,
    });
    expect(own.status, own.body.toString()).toBe(200);
    expect(JSON.parse(own.body.toString())).toMatchObject({ repo: REPO, rules: [], entry: null });
  });

  it('costs an unknown token id what a wrong secret costs: one store read per cache life', async () => {
    const reads: string[] = [];
    class CountingStore extends FsObjectStore {
      override get(key: string, options?: GetOptions) {
        if (key.startsWith('auth/tokens/')) reads.push(key);
        return super.get(key, options);
      }
    }
    const dataDir = await tempDataDir();
    const local = await startInProcess({ dataDir, store: new CountingStore(join(dataDir, 'store')) });
    try {
      const { token, info } = await local.app.tokens.create({
        name: 'probe',
        grants: [{ scope: 'read', pattern: REPO }],
      });
      const wrongSecret = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
      const unknownId = token.replace(
        info.id,
        info.id.replace(/^./, (c) => (c === 'f' ? 'e' : 'f')),
      );
      for (let i = 0; i < 10; i++) {
        for (const presented of [wrongSecret, unknownId]) {
          const response = await rawRequest(local.url, {
            head: head('GET', '/api/v1/repos', {
              Authorization: `Basic ${Buffer.from(`x:${presented}`).toString('base64')}`,
            }),
            deadlineMs: CASE_DEADLINE_MS,
          });
          expect(response.status).toBe(401);
          expect(response.body.toString()).toContain('invalid credentials');
        }
      }
      expect(reads.filter((key) => key.includes(info.id))).toHaveLength(1);
      expect(reads.filter((key) => !key.includes(info.id))).toHaveLength(1);
    } finally {
      await local.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('cuts off a push body trickled under the idle bound but below the minimum rate, freeing its slot', async () => {
    const local = await startInProcess({
      env: {
        NARWAL_GIT_CHILDREN: '2',
        NARWAL_GIT_SHARE: '2',
        NARWAL_GIT_QUEUE_MS: '0',
        NARWAL_BODY_IDLE_MS: '500',
        NARWAL_BODY_MIN_RATE: '1000',
      },
    });
    try {
      const work = await workRepo(home, 1, 'trickle');
      await gitOk(['push', '-q', `${local.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
      await local.app.idle();
      const body = Buffer.concat([
        pkt(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/trickle\0report-status`),
        Buffer.from('0000PACK'),
        Buffer.alloc(200, 0x78),
      ]);
      // As many as the node has git slots: a byte every 50 ms never trips the 500 ms idle bound.
      const trickles = [1, 2].map(() =>
        rawRequest(local.url, {
          head: head('POST', servicePath('git-receive-pack'), gitHeaders('git-receive-pack', body, false)),
          body: [body],
          trickleMs: 50,
          trickleBodyOnly: true,
          deadlineMs: CASE_DEADLINE_MS,
        }),
      );
      for (const response of await Promise.all(trickles)) {
        expect(response.timedOut).toBe(false);
        expect(response.status, response.body.toString()).toBe(408);
        expect(response.headers['content-type']).toMatch(/^text\/plain/);
        expect(response.body.toString()).toMatch(
          /^narwal: the push arrived too slowly: less than 1000 bytes\/s over 0.5 s; retry/,
        );
      }
      // Their git slots and leases came back: the next push is served.
      expect(await eventually(async () => local.app.gitBudget.running === 0)).toBe(true);
      await local.app.idle();
      expect(await leases(local.dataDir)).toBe(0);
      await gitOk(['push', '-q', `${local.authUrl}/${REPO}.git`, 'main:refs/heads/after'], {
        cwd: work,
        home,
      });
    } finally {
      await local.stop();
    }
  });

  it('lets one token hold only its share of the git slots, so other clients are still served', async () => {
    const local = await startInProcess({
      env: { NARWAL_GIT_CHILDREN: '4', NARWAL_GIT_QUEUE_MS: '0', NARWAL_BODY_IDLE_MS: '60000' },
    });
    const release = new AbortController();
    try {
      const work = await workRepo(home, 1, 'share');
      await gitOk(['push', '-q', `${local.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
      await local.app.idle();
      const other = await local.app.tokens.create({
        name: 'other',
        grants: [{ scope: 'write', pattern: REPO }],
      });
      const body = pkt(`${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/held\0report-status`);
      const push = (extra: Partial<RawRequest>) =>
        rawRequest(local.url, {
          head: head('POST', servicePath('git-receive-pack'), {
            ...gitHeaders('git-receive-pack', null, false),
            'Content-Length': String(body.length + 1000),
          }),
          body: [body],
          deadlineMs: CASE_DEADLINE_MS,
          ...extra,
        });
      // The admin token holds three git processes (the default share of four) with bodies it never ends.
      const held = [1, 2, 3].map(() => push({ signal: release.signal }));
      expect(await eventually(async () => local.app.gitBudget.running === 3)).toBe(true);
      const fourth = await push({});
      expect(fourth.status, fourth.body.toString()).toBe(503);
      expect(fourth.headers['retry-after']).toBe('1');
      expect(fourth.body.toString()).toMatch(
        /^narwal: busy: this client already runs 3 git processes on this server; retry when one has finished/,
      );
      // Another token still gets the slot left.
      const otherUrl = local.url.replace('://', `://x:${other.token}@`);
      await gitOk(['push', '-q', `${otherUrl}/${REPO}.git`, 'main:refs/heads/other'], { cwd: work, home });
      release.abort();
      await Promise.all(held);
      expect(await eventually(async () => local.app.gitBudget.running === 0)).toBe(true);
      await local.app.idle();
      expect(await leases(local.dataDir)).toBe(0);
      await gitOk(['push', '-q', `${local.authUrl}/${REPO}.git`, 'main:refs/heads/again'], {
        cwd: work,
        home,
      });
    } finally {
      release.abort();
      await local.stop();
    }
  });

  it('logs no token that a path carries percent-encoded, however it is encoded', async () => {
    const lines: string[] = [];
    const local = await startInProcess({
      logger: jsonLogger({ write: (line) => lines.push(line), secrets: [ADMIN_TOKEN] }),
    });
    try {
      const { token } = await local.app.tokens.create({
        name: 'probe',
        grants: [{ scope: 'read', pattern: '**' }],
      });
      const secret = token.slice(21);
      const every = (text: string) =>
        [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
      const paths = [
        `/${every(token)}/info/refs?service=git-upload-pack`,
        `/team/%6E${token.slice(1)}.git/info/refs?service=git-upload-pack`,
        `/${token.replaceAll('_', '%5f')}`,
        `/${every(token).replaceAll('%', '%25')}/git-upload-pack`,
        `/api/v1/repos/${every(token)}/-/log`,
        `/team/${every(ADMIN_TOKEN)}.git/info/refs?service=git-upload-pack`,
      ];
      for (const path of paths) {
        const response = await rawRequest(local.url, {
          head: head('GET', path, { Authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }),
          deadlineMs: CASE_DEADLINE_MS,
        });
        expect(response.status, path).toBeGreaterThanOrEqual(400);
      }
      const logged = lines.join('');
      expect(logged).toContain('"message":"request"');
      let decoded = logged;
      for (let round = 0; round < 3; round++)
        decoded = decoded.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
          Buffer.from(run.replaceAll('%', ''), 'hex').toString('latin1'),
        );
      for (const text of [secret, ADMIN_TOKEN]) expect(decoded).not.toContain(text);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    } finally {
      await local.stop();
    }
  });

  it('tells every cache not to keep what it answers behind credentials', async () => {
    const reader = `Basic ${Buffer.from(`x:${targetReader}`).toString('base64')}`;
    const fetchBody = seeds('git-upload-pack').find((r) => r.gitProtocol !== 'version=2')?.body;
    const requests: [string, Record<string, string>, Buffer?][] = [
      ['GET /api/v1/repos', { Authorization: AUTH }],
      [`GET /api/v1/repos/${REPO}`, { Authorization: AUTH }],
      [`GET /api/v1/repos/${REPO}/-/log`, { Authorization: reader }],
      [`GET /api/v1/repos/${REPO}/-/protection`, { Authorization: AUTH }],
      [`GET /api/v1/repos/${VAULT}`, { Authorization: reader }],
      [`GET /${REPO}`, { Authorization: AUTH, Accept: 'text/html' }],
      [`GET /${REPO}/-/entry/1`, { Authorization: reader, Accept: 'text/html' }],
      ['GET /', { Authorization: AUTH, Accept: 'text/html' }],
      [`GET /${VAULT}`, { Authorization: reader, Accept: 'text/html' }],
      [`GET /${REPO}.git/info/refs?service=git-upload-pack`, { Authorization: AUTH }],
      [`GET /${REPO}.git/info/refs?service=git-receive-pack`, { Authorization: AUTH }],
      [
        `POST ${servicePath('git-upload-pack')}`,
        { ...gitHeaders('git-upload-pack', fetchBody ?? null, false) },
        fetchBody,
      ],
    ];
    for (const [line, headers, body] of requests) {
      const [verb = 'GET', path = '/'] = line.split(' ');
      const response = await rawRequest(server.url, {
        head: head(verb, path, headers),
        ...(body ? { body: [body] } : {}),
        deadlineMs: CASE_DEADLINE_MS,
      });
      const policy = response.headers['cache-control'] ?? '';
      expect(response.status, line).toBeLessThan(500);
      expect(policy, `${line} (${response.status})`).toMatch(/\bprivate\b/);
      expect(policy, `${line} (${response.status})`).toMatch(/\bno-store\b/);
      expect(policy, line).not.toMatch(/public|must-revalidate|s-maxage/);
    }
  });

  it('names only its own address in clone URLs and links, whatever Host a client sends', async () => {
    const port = new URL(server.url).port;
    const ask = (path: string, host: string, extra: Record<string, string> = {}) =>
      rawRequest(server.url, {
        head: [
          `GET ${path} HTTP/1.1`,
          `Host: ${host}`,
          'Connection: close',
          `Authorization: ${AUTH}`,
          ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`),
        ].join('\r\n'),
        deadlineMs: CASE_DEADLINE_MS,
      });
    for (const host of ['evil.example', 'evil.example:8080', '127.0.0.1.evil.example', `localhost:${port}`]) {
      const answers = [
        await ask('/', host),
        await ask(`/api/v1/repos/${REPO}`, host),
        await ask(`/${REPO}`, host, { Accept: 'text/html' }),
        await ask('/', host, { Accept: 'text/html' }),
      ];
      for (const [i, answer] of answers.entries()) {
        const text = answer.body.toString();
        expect(answer.status, text).toBe(200);
        expect(text, host).not.toContain(host);
        // The repository list shows a URL only when it is empty.
        if (i < 3) expect(text, host).toContain(`http://127.0.0.1:${port}`);
      }
      const api = JSON.parse(answers[1]?.body.toString() ?? '{}') as { cloneUrl: string };
      expect(api.cloneUrl).toBe(`http://127.0.0.1:${port}/${REPO}.git`);
    }
  });

  it('names a host of NARWAL_ALLOWED_HOSTS when the client used it, and its own address otherwise', async () => {
    const local = await startInProcess({
      env: { NARWAL_ALLOWED_HOSTS: 'git.example.test, Mirror.example.test:8443' },
    });
    try {
      const port = new URL(local.url).port;
      const cloneUrl = async (host: string) => {
        const answer = await rawRequest(local.url, {
          head: [`GET / HTTP/1.1`, `Host: ${host}`, 'Connection: close'].join('\r\n'),
          deadlineMs: CASE_DEADLINE_MS,
        });
        return /git clone (\S+)\/OWNER\/NAME\.git/.exec(answer.body.toString())?.[1];
      };
      expect(await cloneUrl('git.example.test')).toBe('http://git.example.test');
      expect(await cloneUrl('GIT.example.test')).toBe('http://git.example.test');
      expect(await cloneUrl('mirror.example.test:8443')).toBe('http://mirror.example.test:8443');
      expect(await cloneUrl('mirror.example.test')).toBe(`http://127.0.0.1:${port}`);
      expect(await cloneUrl('git.example.test:80')).toBe(`http://127.0.0.1:${port}`);
      expect(await cloneUrl('evil.example')).toBe(`http://127.0.0.1:${port}`);
    } finally {
      await local.stop();
    }
  });

  it('will not send webhooks to the instance metadata service, loopback or private ranges', () => {
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://localhost:9/x',
      'http://[::1]/x',
      'http://10.0.0.8/x',
    ];
    for (const url of urls) {
      expect(() =>
        loadConfig({ NARWAL_WEBHOOK_URL: url, NARWAL_WEBHOOK_SECRET: 'a-webhook-secret-of-some-length' }),
      ).toThrow(/^NARWAL_WEBHOOK_URL points at a loopback, link-local or private address/);
    }
  });

  it('bounds the fetch requests held in memory, in all and per client', async () => {
    const KIB = 1024;
    const local = await startInProcess({
      env: {
        NARWAL_MAX_FETCH_REQUEST_BYTES: String(64 * KIB),
        NARWAL_FETCH_MEMORY_BYTES: String(100 * KIB),
        NARWAL_FETCH_MEMORY_SHARE_BYTES: String(60 * KIB),
        NARWAL_BODY_IDLE_MS: '60000',
      },
    });
    const release = new AbortController();
    try {
      const work = await workRepo(home, 1, 'fetch-memory');
      await gitOk(['push', '-q', `${local.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
      await local.app.idle();
      const tokens = await Promise.all(
        ['b', 'c'].map((name) =>
          local.app.tokens.create({ name, grants: [{ scope: 'read', pattern: REPO }] }),
        ),
      );
      const as = (token: string) => `Basic ${Buffer.from(`x:${token}`).toString('base64')}`;
      // A fetch request that declares 60 KiB, sends 40 KiB and then holds on.
      const held = (authorization: string, signal?: AbortSignal) =>
        rawRequest(local.url, {
          head: head('POST', servicePath('git-upload-pack'), {
            ...gitHeaders('git-upload-pack', null, false),
            Authorization: authorization,
            'Content-Length': String(60 * KIB),
          }),
          body: [Buffer.alloc(40 * KIB, 0x30)],
          deadlineMs: CASE_DEADLINE_MS,
          ...(signal ? { signal } : {}),
        });
      // A fetch's POST refused on narwal's side is answered in the protocol, which git prints
      // (errorResponse.ts, asUploadPackError): an ERR packet.
      const busy = (response: RawResponse) => {
        expect(response.status, response.body.toString()).toBe(200);
        expect(response.headers['content-type']).toBe('application/x-git-upload-pack-result');
        expect(response.headers['retry-after']).toBe('1');
        const body = response.body.toString();
        expect(Number.parseInt(body.slice(0, 4), 16)).toBe(response.body.length);
        expect(body.slice(4, 8)).toBe('ERR ');
        return body.slice(8);
      };
      const holding = (bytes: number) => eventually(async () => local.app.requestMemory.held >= bytes);
      const first = held(AUTH, release.signal);
      expect(await holding(40 * KIB)).toBe(true);
      // The same client's second one would hold 80 KiB: over its share of 60.
      expect(busy(await held(AUTH))).toMatch(/^narwal: busy: this client's fetch requests already hold/);
      const second = held(as(tokens[0]?.token ?? ''), release.signal);
      expect(await holding(80 * KIB)).toBe(true);
      // Another client's would make 120 KiB in all: over the node's 100.
      expect(busy(await held(as(tokens[1]?.token ?? '')))).toMatch(
        /^narwal: busy: too many fetch requests are being read at once/,
      );
      expect(local.app.requestMemory.held).toBe(80 * KIB);
      release.abort();
      await Promise.all([first, second]);
      // Once they are gone their memory is free again: a real fetch is served.
      expect(await eventually(async () => local.app.requestMemory.held === 0)).toBe(true);
      const clone = join(await mkdtemp(join(tmpdir(), 'narwal-fetch-memory-')), 'c');
      await gitOk(
        ['clone', '-q', `${local.url.replace('://', `://x:${tokens[1]?.token}@`)}/${REPO}.git`, clone],
        { home },
      );
    } finally {
      release.abort();
      await local.stop();
    }
  });

  it('creates no repository for a push that is refused', async () => {
    const keys = await listKeys();
    for (const body of [
      Buffer.from('zz12garbage'),
      pkt(`${'0'.repeat(40)} ${'3'.repeat(40)} refs/heads/x\0report-status`),
    ]) {
      const response = await rawRequest(server.url, {
        head: head(
          'POST',
          '/fuzz/never-created.git/git-receive-pack',
          gitHeaders('git-receive-pack', body, false),
        ),
        body: [body],
        deadlineMs: CASE_DEADLINE_MS,
      });
      expect(response.status).toBeLessThan(500);
      expect(
        response.status === 200 ? gitReport(response.body).report.some((l) => l.startsWith('ok ')) : false,
      ).toBe(false);
    }
    expect(await listKeys()).toEqual(keys);
    // Nor anything in the shared cache (a push to a new repository is received in scratch).
    expect(existsSync(join(server.dataDir, 'cache', 'repos', 'fuzz', 'never-created.git'))).toBe(false);
    // And the target, created by its first push, has one incarnation in the cache: its own.
    expect(await readdir(join(server.dataDir, 'cache', 'repos', `${REPO}.git`))).toHaveLength(1);
    const ls = await git(['ls-remote', `${server.authUrl}/fuzz/never-created.git`], { home });
    expect(ls.code).not.toBe(0);
  });
});

/**
 * `npm run bench:refs [-- --pushes 100 --refs 100 --latency 0]`: issue 4's refs growth. Every
 * push makes one commit and creates `refs` new branches at it, against narwal and against stock
 * `git http-backend`, in the same run. git's push protocol advertises every ref, so some growth
 * is inherent to both; what narwal adds per push (store reads, writes, bytes) must stay flat.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { parseArgs, promisify } from 'node:util';
import { createApp } from '../lib/app.js';
import { loadConfig } from '../lib/config.js';
import { createNodeServer } from '../lib/http/nodeServer.js';
import { silentLogger } from '../lib/log.js';
import { createObjectStore } from '../lib/store/createObjectStore.js';
import type {
  GetOptions,
  ObjectStore,
  PutBody,
  PutOptions,
  PutStreamOptions,
} from '../lib/store/ObjectStore.js';
import { PROJECT_ROOT } from './fixtures.js';
import { startPeer } from './peer.js';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    pushes: { type: 'string', default: '100' },
    refs: { type: 'string', default: '100' },
    latency: { type: 'string', default: '0' },
  },
});
const pushes = Number(values.pushes);
const refsPerPush = Number(values.refs);
const latency = Number(values.latency);
const TOKEN = 'refs-growth-bench-token';

/** Counts what the server asks of the store, per push. */
class StoreWork implements ObjectStore {
  reads = 0;
  writes = 0;
  bytesWritten = 0;
  constructor(readonly inner: ObjectStore) {}
  get(key: string, options?: GetOptions) {
    this.reads++;
    return this.inner.get(key, options);
  }
  getStream(key: string) {
    this.reads++;
    return this.inner.getStream(key);
  }
  head(key: string) {
    this.reads++;
    return this.inner.head(key);
  }
  stat(key: string) {
    this.reads++;
    return this.inner.stat(key);
  }
  putStream(key: string, body: Readable, options: PutStreamOptions) {
    this.writes++;
    this.bytesWritten += options.size;
    return this.inner.putStream(key, body, options);
  }
  put(key: string, body: PutBody, options?: PutOptions) {
    this.writes++;
    this.bytesWritten += Buffer.isBuffer(body)
      ? body.length
      : typeof body === 'string'
        ? Buffer.byteLength(body)
        : body.size;
    return this.inner.put(key, body, options);
  }
  list(prefix: string, options?: { startAfter?: string; limit?: number }) {
    this.reads++;
    return this.inner.list(prefix, options);
  }
  delete(key: string) {
    this.writes++;
    return this.inner.delete(key);
  }
  renew(key: string) {
    this.writes++;
    return this.inner.renew(key);
  }
  take(): { reads: number; writes: number; bytes: number } {
    const out = { reads: this.reads, writes: this.writes, bytes: this.bytesWritten };
    this.reads = 0;
    this.writes = 0;
    this.bytesWritten = 0;
    return out;
  }
}

const root = await mkdtemp(join(tmpdir(), 'narwal-refs-bench-'));
const home = join(root, 'home');
await mkdir(home);
const gitEnv = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};
const git = (args: string[], cwd?: string) =>
  run('git', args, { cwd, env: gitEnv, maxBuffer: 64 * 1024 * 1024 }).then((r) => r.stdout);

interface PushTime {
  readonly ms: number;
  readonly store?: { reads: number; writes: number; bytes: number };
}

async function series(
  url: string,
  label: string,
  work?: StoreWork,
  idle?: () => Promise<void>,
): Promise<PushTime[]> {
  const dir = join(root, `work-${label}`);
  await git(['init', '-q', '-b', 'main', dir]);
  const times: PushTime[] = [];
  for (let p = 0; p < pushes; p++) {
    await writeFile(join(dir, 'f.txt'), `${label} ${p}\n`);
    await git(['add', 'f.txt'], dir);
    await git(['commit', '-q', '-m', `push ${p}`], dir);
    const specs = Array.from({ length: refsPerPush }, (_, r) => `HEAD:refs/heads/g${p}/r${r}`);
    if (p === 0) specs.push('HEAD:refs/heads/main');
    await idle?.();
    work?.take();
    const started = performance.now();
    await git(['push', '-q', url, ...specs], dir);
    const ms = performance.now() - started;
    times.push({ ms, ...(work ? { store: work.take() } : {}) });
    if ((p + 1) % 20 === 0) process.stderr.write(`  ${label}: ${p + 1} pushes\n`);
  }
  return times;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const growth = (xs: readonly number[]) => mean(xs.slice(-10)) / mean(xs.slice(0, 10));

try {
  const peerRoot = join(root, 'peer');
  await mkdir(peerRoot);
  await git(['init', '-q', '--bare', join(peerRoot, 'growth.git')]);
  const peer = await startPeer({ root: peerRoot, auth: { user: 'x', password: TOKEN } });
  const peerTimes = await series(`${peer.url.replace('://', `://x:${TOKEN}@`)}/growth.git`, 'peer').finally(
    () => peer.stop(),
  );

  const dataDir = join(root, 'narwal');
  const config = loadConfig(
    { NARWAL_ADMIN_TOKEN: TOKEN, NARWAL_STORE_LATENCY_MS: String(latency) },
    { dataDir, port: 0 },
  );
  const work = new StoreWork(await createObjectStore(config));
  const app = await createApp(config, silentLogger, { store: work });
  const server: Server = createNodeServer(app.handler, silentLogger);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let narwalTimes: PushTime[];
  try {
    // Background work (prewarm, checkpoints) is waited for between pushes, so it counts for no push.
    narwalTimes = await series(`http://x:${TOKEN}@127.0.0.1:${port}/team/growth.git`, 'narwal', work, () =>
      app.idle(),
    );
  } finally {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
    await app.close();
  }

  const peerMs = peerTimes.map((t) => t.ms);
  const narwalMs = narwalTimes.map((t) => t.ms);
  const storeOf = (k: 'reads' | 'writes' | 'bytes') => narwalTimes.map((t) => t.store?.[k] ?? 0);
  const summary = {
    pushes,
    refsPerPush,
    latency,
    machine: `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores`,
    peerGrowth: growth(peerMs),
    narwalGrowth: growth(narwalMs),
    storeGrowth: {
      reads: growth(storeOf('reads')),
      writes: growth(storeOf('writes')),
      bytes: growth(storeOf('bytes')),
    },
    peerMs,
    narwalMs,
    narwalStore: narwalTimes.map((t) => t.store),
  };
  const f = (x: number) => x.toFixed(2);
  const lines = [
    `Refs growth: ${pushes} pushes x ${refsPerPush} new refs (${summary.machine}; narwal store latency ${latency} ms)`,
    '',
    '| | first 10 (mean) | last 10 (mean) | growth | target |',
    '|---|---:|---:|---:|---|',
    `| peer push (ms) | ${mean(peerMs.slice(0, 10)).toFixed(0)} | ${mean(peerMs.slice(-10)).toFixed(0)} | ${f(summary.peerGrowth)}x | |`,
    `| narwal push (ms) | ${mean(narwalMs.slice(0, 10)).toFixed(0)} | ${mean(narwalMs.slice(-10)).toFixed(0)} | ${f(summary.narwalGrowth)}x | <= peer's ${f(summary.peerGrowth)}x: ${summary.narwalGrowth <= summary.peerGrowth ? 'met' : 'MISSED'} |`,
    ...(['reads', 'writes', 'bytes'] as const).map(
      (k) =>
        `| narwal store ${k} per push | ${mean(storeOf(k).slice(0, 10)).toFixed(0)} | ${mean(storeOf(k).slice(-10)).toFixed(0)} | ${f(summary.storeGrowth[k])}x | <= 1.3x: ${summary.storeGrowth[k] <= 1.3 ? 'met' : 'MISSED'} |`,
    ),
    '',
    'Every push (ms), peer / narwal:',
    '',
    ...Array.from({ length: Math.ceil(pushes / 10) }, (_, row) =>
      peerMs
        .slice(row * 10, row * 10 + 10)
        .map((ms, i) => `${ms.toFixed(0)}/${(narwalMs[row * 10 + i] ?? 0).toFixed(0)}`)
        .join(' '),
    ),
  ].join('\n');
  console.log(`\n${lines}`);
  const out = join(PROJECT_ROOT, 'bench', 'results');
  await mkdir(out, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d{3}Z$/, 'Z');
  await writeFile(join(out, `${stamp}-refs.json`), `${JSON.stringify(summary, null, 2)}\n`);
  await writeFile(join(out, `${stamp}-refs.md`), `${lines}\n`);
} finally {
  await rm(root, { recursive: true, force: true });
}

/**
 * Cold probe (seed 000: `info/refs` after ~950 entries hung past 120 s and starved pushes):
 * `git ls-remote` against a repository with N log entries and an empty cache, with every store
 * operation delayed by NARWAL_STORE_LATENCY_MS (30 ms stands in for S3), then warm; and the rate
 * of a push loop before and while a cold rebuild of the same repository runs.
 *
 * The log is written directly through the publisher (fast), as real pushes would have written it:
 * one pack with the history, ref moves, a checkpoint as the automatic policy makes them (every
 * 100 entries by default, so at most 100 entries after the newest one), then entries each with a
 * pack of their own.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../lib/app.js';
import { loadConfig } from '../lib/config.js';
import { silentLogger } from '../lib/log.js';
import { packKey } from '../lib/wal/keys.js';
import { putImmutable } from '../lib/wal/putImmutable.js';
import { ZERO_OID } from '../lib/wal/types.js';
import { git, makeClientHome } from './gitClient.js';

interface Narwal {
  repoUrl(repo: string): string;
  stop(): Promise<void>;
}

/** `narwal serve` from the built CLI, with a store latency. */
async function startNarwal(dataDir: string, latencyMs: string, cacheDir?: string): Promise<Narwal> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, 'narwal.js'), 'serve', '--port', '0', '--data', dataDir],
    {
      env: {
        PATH: process.env.PATH,
        NARWAL_ADMIN_TOKEN: TOKEN,
        NARWAL_QUIET: '1',
        NARWAL_STORE_LATENCY_MS: latencyMs,
        ...(cacheDir ? { NARWAL_CACHE_DIR: cacheDir } : {}),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`narwal exited with ${code}`)));
  });
  child.once('exit', (code, signal) => console.error(`narwal ${url} exited: ${code ?? signal}`));
  return {
    repoUrl: (repo) => `${url.replace('://', `://admin:${TOKEN}@`)}/${repo}.git`,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const { values } = parseArgs({
  options: {
    entries: { type: 'string', default: '10000' },
    after: { type: 'string', default: '100' },
    latency: { type: 'string', default: '30' },
    probes: { type: 'string', default: '5' },
    'push-seconds': { type: 'string', default: '8' },
  },
});
const ENTRIES = Number(values.entries);
const AFTER = Number(values.after);
const LATENCY = values.latency ?? '30';
const TOKEN = 'bench-cold-token';
const REPO = 'bench/long-log';

function sh(cmd: string, cwd: string, input?: string): string {
  return execFileSync('sh', ['-c', cmd], {
    cwd,
    input,
    maxBuffer: 1 << 28,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  }).toString();
}

async function buildLog(work: string, dataDir: string): Promise<void> {
  // A history of ENTRIES commits, made in one go by fast-import.
  sh('git init -q -b main .', work);
  let stream = '';
  for (let i = 1; i <= ENTRIES; i++) {
    const message = `entry ${i}\n`;
    stream += `commit refs/heads/main\nmark :${i}\ncommitter B <b@x> ${1700000000 + i} +0000\ndata ${message.length}\n${message}`;
    if (i > 1) stream += `from :${i - 1}\n`;
    stream += `M 644 inline f${i % 50}.txt\ndata ${String(i).length + 1}\n${i}\n\n`;
  }
  sh('git fast-import --quiet', work, stream);
  const commits = sh('git rev-list --reverse main', work).trim().split('\n');
  const app = await createApp(
    loadConfig({ NARWAL_ADMIN_TOKEN: TOKEN, NARWAL_QUIET: '1' }, { dataDir, port: 0 }),
    silentLogger,
  );
  try {
    await app.wal.createRepo(REPO, { public: false });
    const who = { token: 'bench' };
    const base = ENTRIES - AFTER;
    // Entry 1: the history up to the checkpoint as one pack (as a first push would send it).
    const packName = sh(
      'git pack-objects -q --revs .git/objects/pack/bench',
      work,
      `${commits[base - 1]}\n`,
    ).trim();
    const packBase = join(work, '.git', 'objects', 'pack', `bench-${packName}`);
    const name = `pack-${packName}`;
    for (const ext of ['pack', 'idx'] as const) {
      const path = `${packBase}.${ext}`;
      await putImmutable(app.store, packKey(REPO, name, ext), { path, size: (await stat(path)).size });
    }
    let previous = ZERO_OID;
    const move = async (i: number, packs: string[]) => {
      const next = commits[i] ?? '';
      await app.publisher.publish({
        repo: REPO,
        commands: [{ ref: 'refs/heads/main', oldOid: previous, newOid: next }],
        atomic: false,
        who,
        packs,
      });
      previous = next;
    };
    await move(0, [name]);
    for (let i = 1; i < base; i++) await move(i, []);
    const checkpoint = await app.checkpointer.make(REPO);
    console.log(`checkpoint at entry ${checkpoint?.seq} (${checkpoint?.bytes} bytes)`);
    // The entries after the newest checkpoint, each with its own pack.
    for (let i = base; i < ENTRIES; i++) {
      const own = sh(
        `git pack-objects -q --revs .git/objects/pack/one`,
        work,
        `${commits[i]}\n^${commits[i - 1]}\n`,
      ).trim();
      const ownBase = join(work, '.git', 'objects', 'pack', `one-${own}`);
      const ownName = `pack-${own}`;
      for (const ext of ['pack', 'idx'] as const) {
        const path = `${ownBase}.${ext}`;
        await putImmutable(app.store, packKey(REPO, ownName, ext), { path, size: (await stat(path)).size });
      }
      await move(i, [ownName]);
    }
    const loaded = await app.wal.readIndexFully(REPO);
    console.log(
      `log: ${loaded?.index.seq} entries, checkpoint at ${loaded?.index.checkpoint?.seq}, index ${JSON.stringify(loaded?.index).length} bytes`,
    );
  } finally {
    await app.close();
  }
}

async function timeLsRemote(server: Narwal, home: string): Promise<number> {
  const out = await git(['ls-remote', server.repoUrl(REPO)], { home });
  if (out.code !== 0) throw new Error(`ls-remote failed: ${out.stderr}`);
  return out.ms;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function pushLoop(work: string, home: string, url: string, seconds: number, onTick?: () => void) {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < deadline) {
    sh(
      `echo ${n++} > loop.txt && git add loop.txt && git -c user.name=b -c user.email=b@x commit -q -m loop${n}`,
      work,
    );
    const out = await git(['push', '-q', url, 'HEAD:refs/heads/loop'], { home, cwd: work });
    if (out.code !== 0) throw new Error(`push failed: ${out.stderr}`);
    latencies.push(out.ms);
    onTick?.();
  }
  return latencies;
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'narwal-cold-'));
  const dataDir = join(root, 'data');
  const work = join(root, 'work');
  const home = await makeClientHome(root);
  const servers: Narwal[] = [];
  try {
    sh(`mkdir -p ${work}`, root);
    const t = performance.now();
    await buildLog(work, dataDir);
    console.log(`wrote the log in ${Math.round((performance.now() - t) / 1000)} s`);
    const server = await startNarwal(dataDir, LATENCY);
    servers.push(server);
    const cold: number[] = [];
    const warm: number[] = [];
    for (let p = 0; p < Number(values.probes); p++) {
      await rm(join(dataDir, 'cache', 'repos'), { recursive: true, force: true });
      cold.push(await timeLsRemote(server, home));
      warm.push(await timeLsRemote(server, home));
      warm.push(await timeLsRemote(server, home));
    }
    console.log(
      `\n| ls-remote, ${ENTRIES} entries, ${LATENCY} ms store latency | median | min | max |\n|---|---|---|---|`,
    );
    console.log(
      `| cold cache | ${Math.round(median(cold))} ms | ${Math.round(Math.min(...cold))} ms | ${Math.round(Math.max(...cold))} ms |`,
    );
    console.log(
      `| warm cache | ${Math.round(median(warm))} ms | ${Math.round(Math.min(...warm))} ms | ${Math.round(Math.max(...warm))} ms |`,
    );

    // Pushes on one node while another node, with a cache of its own (a fresh pool instance, or
    // an invocation in another zone), rebuilds the same repository from cold again and again.
    const clone = join(root, 'pusher');
    sh(`git clone -q ${server.repoUrl(REPO)} ${clone}`, root);
    const seconds = Number(values['push-seconds']);
    const baseline = await pushLoop(clone, home, server.repoUrl(REPO), seconds);
    const otherCache = join(root, 'other-cache');
    const other = await startNarwal(dataDir, LATENCY, otherCache);
    servers.push(other);
    const rebuilds: number[] = [];
    let stop = false;
    const rebuilder = (async () => {
      while (!stop) {
        await rm(join(otherCache, 'repos'), { recursive: true, force: true });
        rebuilds.push(await timeLsRemote(other, home));
      }
    })();
    const during = await pushLoop(clone, home, server.repoUrl(REPO), seconds);
    stop = true;
    await rebuilder;
    const rate = (xs: number[]) => (xs.length / seconds).toFixed(2);
    console.log(`\n| push loop (${LATENCY} ms store latency) | pushes/s | p50 | max |\n|---|---|---|---|`);
    console.log(
      `| alone | ${rate(baseline)} | ${Math.round(median(baseline))} ms | ${Math.round(Math.max(...baseline))} ms |`,
    );
    console.log(
      `| while another node rebuilds the cache from cold (${rebuilds.length} rebuilds, median ${Math.round(median(rebuilds))} ms) | ${rate(during)} | ${Math.round(median(during))} ms | ${Math.round(Math.max(...during))} ms |`,
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await rm(root, { recursive: true, force: true, maxRetries: 5 });
  }
}

await main();

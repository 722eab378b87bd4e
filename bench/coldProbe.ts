/**
 * Cold probe (seed 000: `info/refs` after ~950 entries hung past 120 s and starved pushes):
 * `git ls-remote` against a repository with N log entries and an empty cache, with every store
 * operation delayed by NARWAL_STORE_LATENCY_MS (30 ms stands in for S3), then warm; and the rate
 * of a push loop before and while a cold rebuild of the same repository runs.
 *
 * The log is written directly through the publisher with real packs (bench/packedLog.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { git, makeClientHome } from './gitClient.js';
import { buildLongLog } from './packedLog.js';

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
    const built = await buildLongLog({
      work,
      dataDir,
      token: TOKEN,
      repo: REPO,
      entries: ENTRIES,
      after: AFTER,
    });
    console.log(
      `log: ${built.entries} entries, checkpoint at ${built.checkpointSeq}, index ${built.indexBytes} bytes`,
    );
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

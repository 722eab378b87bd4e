/**
 * Contention at the reftable cliff (seed 002: a shared append point that partly fails between 50
 * and 100 concurrent writers) and the seed's two-node race (seed 000: two nodes pushed at 0.18x
 * the rate of one).
 *
 * 1. W simultaneous `git push`es to W distinct branches of one repository, through 1 and through 3
 *    `narwal serve` processes sharing one data directory: landed/attempted, lost (acknowledged but
 *    not in the log), p50/p99 latency and wall time.
 * 2. A fixed set of push loops for D seconds against one repository, all through one node, then
 *    split over two nodes: on distinct branches, and all on one branch (fetch, commit, push; a
 *    lost race is `fetch first` and the loop fetches again). Throughput is landed pushes per second;
 *    the ratio two nodes / one node must be at least 0.8.
 *
 *   npm run bench:contention                 # the full table
 *   npm run bench:contention -- --quick      # 50 writers only, 10 s loops
 * Options: --latency-ms N (store latency standing in for S3, default 10), --seconds N.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FsObjectStore } from '../lib/store/FsObjectStore.js';
import { Wal } from '../lib/wal/Wal.js';
import { git, gitOk, makeClientHome } from './gitClient.js';
import { type BenchServer, startNarwal } from './servers.js';

const TOKEN = 'contention-bench-token';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    'latency-ms': { type: 'string' },
    seconds: { type: 'string' },
    writers: { type: 'string' },
  },
});
const QUICK = values.quick ?? false;
const LATENCY = values['latency-ms'] ?? '10';
const LOOP_SECONDS = Number(values.seconds ?? (QUICK ? 10 : 20));
const WRITERS = (values.writers ?? (QUICK ? '50' : '50,100,150')).split(',').map(Number);
const LOOPS = 8;

interface Cluster {
  readonly nodes: BenchServer[];
  readonly wal: Wal;
  readonly dataDir: string;
  stop(): Promise<void>;
}

async function cluster(count: number): Promise<Cluster> {
  const dataDir = await mkdtemp(join(tmpdir(), 'narwal-contention-'));
  const nodes: BenchServer[] = [];
  for (let i = 0; i < count; i++)
    nodes.push(await startNarwal({ dataDir, token: TOKEN, env: { NARWAL_STORE_LATENCY_MS: LATENCY } }));
  return {
    nodes,
    dataDir,
    wal: new Wal(new FsObjectStore(join(dataDir, 'store'))),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

/** A local repository with main pushed to `url`, and `names` branches each one commit on top. */
async function workRepo(
  home: string,
  url: string,
  names: readonly string[],
): Promise<{ dir: string; oids: Map<string, string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-contention-work-'));
  const run = (args: string[]) => gitOk(args, { cwd: dir, home });
  await run(['init', '-q', '-b', 'main', '.']);
  await writeFile(join(dir, 'README'), 'contention\n');
  await run(['add', 'README']);
  await run(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'base']);
  await run(['push', '-q', url, 'main']);
  const tree = (await run(['rev-parse', 'main^{tree}'])).stdout.trim();
  const oids = new Map<string, string>();
  for (const name of names) {
    const oid = (
      await run(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit-tree', tree, '-p', 'main', '-m', name])
    ).stdout.trim();
    await run(['update-ref', `refs/heads/${name}`, oid]);
    oids.set(name, oid);
  }
  return { dir, oids };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

interface BurstRow {
  nodes: number;
  writers: number;
  landed: number;
  acknowledged: number;
  lost: number;
  p50: number;
  p99: number;
  wallMs: number;
  failures: string[];
}

async function burst(c: Cluster, home: string, writers: number): Promise<BurstRow> {
  const repo = `bench/burst-${c.nodes.length}-${writers}`;
  const names = Array.from({ length: writers }, (_, i) => `topic-${i}`);
  const { dir, oids } = await workRepo(home, c.nodes[0]?.repoUrl(`${repo}.git`) ?? '', names);
  const started = performance.now();
  const results = await Promise.all(
    names.map((name, i) =>
      git(['push', '-q', c.nodes[i % c.nodes.length]?.repoUrl(`${repo}.git`) ?? '', name], {
        cwd: dir,
        home,
      }),
    ),
  );
  const wallMs = performance.now() - started;
  const loaded = await c.wal.readIndexFully(repo);
  const refs = loaded ? await c.wal.allRefs(loaded.index) : new Map();
  let landed = 0;
  let lost = 0;
  names.forEach((name, i) => {
    const inLog = refs.get(`refs/heads/${name}`)?.oid === oids.get(name);
    if (inLog) landed++;
    if (results[i]?.code === 0 && !inLog) lost++;
  });
  const latencies = results.map((r) => r.ms).sort((a, b) => a - b);
  await rm(dir, { recursive: true, force: true });
  return {
    nodes: c.nodes.length,
    writers,
    landed,
    acknowledged: results.filter((r) => r.code === 0).length,
    lost,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    wallMs,
    failures: results.filter((r) => r.code !== 0).map((r) => r.stderr.trim().split('\n').pop() ?? ''),
  };
}

interface LoopResult {
  nodes: number;
  mode: 'distinct' | 'one branch';
  landed: number;
  refused: number;
  failed: number;
  perSecond: number;
  p50: number;
}

/** LOOPS push loops for LOOP_SECONDS, spread over the cluster's nodes. */
async function loops(c: Cluster, home: string, mode: LoopResult['mode']): Promise<LoopResult> {
  const repo = `bench/loop-${c.nodes.length}-${mode === 'distinct' ? 'distinct' : 'one'}`;
  const { dir } = await workRepo(home, c.nodes[0]?.repoUrl(`${repo}.git`) ?? '', []);
  const clones = await Promise.all(
    Array.from({ length: LOOPS }, async (_, i) => {
      const clone = join(
        dir,
        `..`,
        `${repo.replace('/', '_')}-loop-${i}-${Math.random().toString(36).slice(2)}`,
      );
      await gitOk(['clone', '-q', c.nodes[0]?.repoUrl(`${repo}.git`) ?? '', clone], { home });
      return clone;
    }),
  );
  let landed = 0;
  let refused = 0;
  let failed = 0;
  const latencies: number[] = [];
  const deadline = performance.now() + LOOP_SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    clones.map(async (clone, i) => {
      const url = c.nodes[i % c.nodes.length]?.repoUrl(`${repo}.git`) ?? '';
      const branch = mode === 'distinct' ? `loop-${i}` : 'main';
      const run = (args: string[]) => git(args, { cwd: clone, home });
      await run(['checkout', '-q', '-b', `work-${i}`]);
      for (let n = 0; performance.now() < deadline; n++) {
        if (mode === 'one branch') {
          await run(['fetch', '-q', url, 'main']);
          await run(['reset', '-q', '--hard', 'FETCH_HEAD']);
        }
        await writeFile(join(clone, `f-${i}-${n}`), `${n}\n`);
        await run(['add', '.']);
        await run(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', `${i} ${n}`]);
        const out = await run(['push', '-q', url, `HEAD:refs/heads/${branch}`]);
        if (performance.now() > deadline + 5000) break;
        latencies.push(out.ms);
        if (out.code === 0) landed++;
        else if (/fetch first|non-fast-forward|rejected/.test(out.stderr)) refused++;
        else failed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(clones.map((clone) => rm(clone, { recursive: true, force: true })));
  await rm(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return {
    nodes: c.nodes.length,
    mode,
    landed,
    refused,
    failed,
    perSecond: landed / seconds,
    p50: percentile(latencies, 50),
  };
}

const ms = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const home = await makeClientHome();
  const bursts: BurstRow[] = [];
  for (const nodes of [1, 3]) {
    const c = await cluster(nodes);
    try {
      for (const writers of WRITERS) {
        const row = await burst(c, home, writers);
        bursts.push(row);
        console.error(
          `burst: ${nodes} node(s), ${writers} writers: ${row.landed}/${writers} landed, ${row.lost} lost`,
        );
      }
    } finally {
      await c.stop();
    }
  }
  const races: LoopResult[] = [];
  for (const mode of ['distinct', 'one branch'] as const) {
    for (const nodes of [1, 2]) {
      const c = await cluster(nodes);
      try {
        const result = await loops(c, home, mode);
        races.push(result);
        console.error(`race: ${nodes} node(s), ${mode}: ${result.perSecond.toFixed(2)} pushes/s`);
      } finally {
        await c.stop();
      }
    }
  }
  await rm(home, { recursive: true, force: true });

  const lines = [
    `Store latency ${LATENCY} ms per operation; ${LOOPS} push loops for ${LOOP_SECONDS} s in the race.`,
    '',
    '| nodes | writers | landed/attempted | acknowledged | lost | p50 ms | p99 ms | wall ms |',
    '| ----- | ------- | ---------------- | ------------ | ---- | ------ | ------ | ------- |',
    ...bursts.map(
      (r) =>
        `| ${r.nodes} | ${r.writers} | ${r.landed}/${r.writers} | ${r.acknowledged} | ${r.lost} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.wallMs)} |`,
    ),
    '',
    '| race | nodes | landed pushes | refused (fetch first) | failed | pushes/s | p50 ms | ratio 2/1 |',
    '| ---- | ----- | ------------- | --------------------- | ------ | -------- | ------ | --------- |',
    ...races.map((r) => {
      const one = races.find((o) => o.mode === r.mode && o.nodes === 1);
      const ratio = r.nodes === 2 && one ? (r.perSecond / one.perSecond).toFixed(2) : '';
      return `| ${r.mode} | ${r.nodes} | ${r.landed} | ${r.refused} | ${r.failed} | ${r.perSecond.toFixed(2)} | ${ms(r.p50)} | ${ratio} |`;
    }),
  ];
  console.log(lines.join('\n'));
  const failures = bursts.flatMap((r) => r.failures);
  if (failures.length > 0) console.log(`\nfailed pushes:\n${[...new Set(failures)].join('\n')}`);
  const resultsDir = resolve(import.meta.dirname, '..', 'bench', 'results');
  await mkdir(resultsDir, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/:/g, '-')
    .replace(/\.\d+Z$/, 'Z');
  await writeFile(
    join(resultsDir, `${stamp}-contention.json`),
    `${JSON.stringify({ latencyMs: Number(LATENCY), loops: LOOPS, loopSeconds: LOOP_SECONDS, bursts, races }, null, 2)}\n`,
  );
  const ratios = (['distinct', 'one branch'] as const).map((mode) => {
    const one = races.find((r) => r.mode === mode && r.nodes === 1);
    const two = races.find((r) => r.mode === mode && r.nodes === 2);
    return one && two ? two.perSecond / one.perSecond : 0;
  });
  const lostAny = bursts.some((r) => r.lost > 0 || r.landed !== r.writers);
  if (lostAny || ratios.some((r) => r < 0.8)) {
    console.log(
      `\nFAIL: ${lostAny ? 'a burst lost or refused pushes; ' : ''}two-node/one-node ratios ${ratios.map((r) => r.toFixed(2)).join(', ')} (need >= 0.8)`,
    );
    process.exitCode = 1;
  }
}

await main();

/**
 * `npm run bench [-- --quick]`: narwal against stock `git http-backend` (the peer) on the same
 * machine in the same run, narwal with no store latency and with 30 ms on every store operation
 * (standing in for S3). Every measurement of seeds 000 and 002 (see benchResults.ts for the list),
 * written to bench/results/<stamp>.json and a Markdown report with SVG charts beside it.
 *
 * Options: --quick (about four and a half minutes; CI runs it), --only a,b (phases: sequential,
 * clones, ci, nodes, refs, writers, cold, profile, lfs, uris), --latency 30 (narwal's second
 * store latency), --client git|wire (clone storm clients; wire, the default, makes the v2
 * requests and discards the pack, which leaves the machine to the servers), --clones N (at
 * least, per storm), --storm-seconds S (and more until S seconds have passed), --rounds N (the
 * clone levels run N times over, interleaved, and are pooled), --levels 10,25,50, --pushes N,
 * --refs N, --writers 50,100,150, --entries N, --max-other F (rerun a storm when other work used
 * more than this share of the machine), --narwal-rev REV, --narwal-env NARWAL_K=V,... (extra
 * settings for every narwal server), --table (write the targets table into README.md and
 * docs/benchmarks.md; the default for a full run of every phase on the defaults).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchResults } from './benchResults.js';
import {
  type CiStormPlan,
  ciStorm,
  pushCiCommits,
  summarizeCi,
  waitForServerQuiet,
  warmUp,
} from './ciStorm.js';
import { cloneStorm } from './cloneStorm.js';
import { probeInfoRefs } from './coldInfoRefs.js';
import { concurrentWriters } from './concurrentWriters.js';
import { narwalCacheLayout, PROJECT_ROOT, packLayout, prepareFixture, REPO, sameRefs } from './fixtures.js';
import { gitOk, makeClientHome } from './gitClient.js';
import { commitsOf, makeSource } from './history.js';
import { type Level, runLevels } from './levels.js';
import { lfsBench } from './lfsTransfer.js';
import { probeLogPages } from './logPage.js';
import { probeMonitorPages } from './monitorPages.js';
import { narwalBuild } from './narwalBuild.js';
import { buildLongLog } from './packedLog.js';
import { packfileUrisBench } from './packfileUris.js';
import { analyzeProfile, profilePushes } from './pushProfile.js';
import { writeReport } from './report.js';
import { sequentialPushes } from './sequentialPushes.js';
import { type BenchServer, startFloorProcess, startNarwal, startPeerProcess } from './servers.js';
import { pushRace } from './twoNodes.js';

const PHASES = [
  'sequential',
  'clones',
  'ci',
  'nodes',
  'refs',
  'writers',
  'cold',
  'profile',
  'lfs',
  'uris',
] as const;
type Phase = (typeof PHASES)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    latency: { type: 'string', default: '30' },
    client: { type: 'string', default: 'wire' },
    clones: { type: 'string' },
    'storm-seconds': { type: 'string' },
    rounds: { type: 'string' },
    levels: { type: 'string' },
    pushes: { type: 'string' },
    refs: { type: 'string' },
    writers: { type: 'string' },
    entries: { type: 'string' },
    'max-other': { type: 'string', default: '0.10' },
    'narwal-rev': { type: 'string' },
    table: { type: 'boolean' },
    'narwal-env': { type: 'string' },
  },
});
const quick = values.quick ?? false;
const phases = new Set<Phase>(values.only ? values.only.split(',').map((p) => phase(p.trim())) : [...PHASES]);
const latency = positive(values.latency ?? '30');
const client = values.client === 'git' ? 'git' : 'wire';
if (values.client !== client) throw new Error(`--client must be git or wire, not ${values.client}`);
const sizes = {
  pushes: values.pushes ? positive(values.pushes) : quick ? 40 : 1000,
  pushBlock: quick ? 20 : 50,
  levels: values.levels ? values.levels.split(',').map(positive) : quick ? [5, 10] : [10, 25, 50],
  clones: values.clones ? positive(values.clones) : quick ? 10 : 60,
  stormSeconds: values['storm-seconds'] ? positive(values['storm-seconds']) : quick ? 3 : 8,
  rounds: values.rounds ? positive(values.rounds) : quick ? 1 : 3,
  nodeWorkers: 4,
  nodePushes: quick ? 6 : 40,
  refs: values.refs ? positive(values.refs) : quick ? 40 : 300,
  refsInterval: quick ? 20 : 100,
  writers: values.writers ? values.writers.split(',').map(positive) : quick ? [30] : [50, 100, 150],
  entries: values.entries ? positive(values.entries) : quick ? 300 : 10_000,
  probes: quick ? 2 : 5,
  profilePushes: quick ? 5 : 30,
  // Git LFS: the issue's sizes in every mode (a 200 MB object moves in about a second).
  lfsBytes: 200 * 1024 * 1024,
  lfsObjects: 1000,
  lfsRuns: quick ? 3 : 5,
  // packfile-uris clones on the Lambda stand-in, per repository, after the first.
  urisClones: quick ? 3 : 5,
  /** The largest CI checkout storm of identical jobs. */
  ciJobs: quick ? 16 : 32,
  /** Times each CI storm runs, on new commits each time: its figures are medians over them. */
  ciRounds: quick ? 1 : 3,
};
const maxOther = Number(values['max-other']);
// Extra environment for every narwal server (KEY=VALUE,...), to measure a setting against the defaults.
const narwalEnv: Record<string, string> = Object.fromEntries(
  (values['narwal-env'] ?? '')
    .split(',')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0 || !pair.startsWith('NARWAL_'))
        throw new Error(`--narwal-env wants NARWAL_KEY=VALUE, not ${pair}`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);
// Only a full run of every phase on narwal's defaults stands for the table in README.md and docs/benchmarks.md.
const writeTable =
  values.table ?? (!quick && values.only === undefined && values['narwal-env'] === undefined);

const abort = new AbortController();
setMaxListeners(0, abort.signal);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => abort.abort(new Error(`interrupted by ${signal}`)));
const log = (line: string) => console.error(line);

const startedAt = new Date();
const stamp = isoStamp(startedAt);
const resultsDir = join(PROJECT_ROOT, 'bench', 'results');
const workDir = await mkdtemp(join(tmpdir(), 'narwal-bench-'));
const running: BenchServer[] = [];
const stopAll = async (list: BenchServer[]) => {
  for (const server of list.reverse()) {
    await server.stop().catch(() => {});
    const at = running.indexOf(server);
    if (at >= 0) running.splice(at, 1);
  }
};
const everStarted: BenchServer[] = [];
const started = async (server: Promise<BenchServer>) => {
  const s = await server;
  running.push(s);
  everStarted.push(s);
  return s;
};
try {
  const home = await makeClientHome(workDir);
  const token = `bench_${randomBytes(12).toString('hex')}`;
  const build = await narwalBuild({
    workDir,
    ...(values['narwal-rev'] !== undefined ? { rev: values['narwal-rev'] } : {}),
  });
  const results: BenchResults = {
    benchmark: 'narwal-vs-peer',
    mode: quick ? 'quick' : 'full',
    startedAt: startedAt.toISOString(),
    finishedAt: '',
    machine: machineInfo(),
    narwal: build,
    latencyMs: latency,
    sizes: { ...sizes, client, narwalEnv },
    notes: [],
  };
  const save = async () => {
    results.finishedAt = new Date().toISOString();
    const errors = everStarted.flatMap((s) => s.errors().map((line) => `${s.name}: ${line}`));
    if (errors.length > 0) results.serverErrors = errors;
    results.machine.loadAverageAfter = loadavg();
    await mkdir(resultsDir, { recursive: true });
    await writeFile(join(resultsDir, `${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
  };
  log(
    `narwal bench (${results.mode}): ${[...phases].join(', ')}; narwal ${build.commit.slice(0, 7)}${build.localChanges ? ' with local changes' : ''}; ${results.machine.nproc} CPUs, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );

  // The commits every push workload sends, made once.
  const maxWriters = Math.max(...sizes.writers);
  const source = await makeSource(join(workDir, 'source.git'), home, [
    { name: 'seq', count: sizes.pushes, shape: 'chain' },
    { name: 'refs', count: sizes.refs, shape: 'fan' },
    { name: 'writers', count: maxWriters, shape: 'fan' },
    { name: 'profile', count: sizes.profilePushes, shape: 'chain' },
    ...Array.from({ length: sizes.nodeWorkers }, (_, w) => ({
      name: `node${w}`,
      count: sizes.nodePushes,
      shape: 'chain' as const,
    })),
  ]);

  const peerRoot = join(workDir, 'peer');
  const narwalData = join(workDir, 'narwal');
  const narwalSlowData = join(workDir, `narwal-${latency}ms`);
  const peer = await started(startPeerProcess({ root: peerRoot, user: 'admin', password: token }));
  const narwal = await started(startNarwal({ dataDir: narwalData, token, cli: build.cli, env: narwalEnv }));
  results.machine.cpuClock = peer.cpuClock === 'cgroup' && narwal.cpuClock === 'cgroup' ? 'cgroup' : 'proc';
  const narwalSlow = await started(
    startNarwal({ dataDir: narwalSlowData, token, cli: build.cli, latencyMs: latency, env: narwalEnv }),
  );
  const trio = [peer, narwal, narwalSlow];
  // The express fixture, on the peer and narwal, made by the first phase that needs it.
  let fixtureMade: ReturnType<typeof prepareFixture> | undefined;
  const fixtureOnce = () => {
    fixtureMade ??= prepareFixture({ workDir, home, narwalRepoUrl: narwal.repoUrl(REPO) });
    return fixtureMade;
  };

  if (phases.has('sequential')) {
    log(`sequential pushes: ${sizes.pushes} one-commit pushes to one ref, per server`);
    results.sequential = await sequentialPushes({
      servers: trio,
      source,
      commits: commitsOf(source, 'seq'),
      repo: 'bench/sequential.git',
      block: sizes.pushBlock,
      signal: abort.signal,
      log,
    });
    await save();
  }

  if (phases.has('clones')) {
    log(
      `clone storm: levels ${sizes.levels.join(', ')}, ${sizes.rounds} round(s) of storms of at least ${sizes.clones} clones and ${sizes.stormSeconds} s per server and level (${client} clients)`,
    );
    const fixture = await fixtureOnce();
    await gitOk(
      ['push', '--quiet', narwalSlow.repoUrl(REPO), 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'],
      { home, cwd: fixture.peerRepo },
    );
    await sameRefs(
      home,
      trio.map((s) => s.repoUrl(REPO)),
    );
    const tmpRoot = join(workDir, 'clones');
    await mkdir(tmpRoot, { recursive: true });
    const storm = (server: BenchServer, level: Level, minMs = sizes.stormSeconds * 1000) =>
      cloneStorm({
        server,
        repo: REPO,
        clones: level.clones,
        minMs,
        workers: level.workers,
        protocol: level.protocol,
        tmpRoot,
        home,
        client,
        signal: abort.signal,
      });
    for (const server of trio) {
      const warm = await storm(server, { workers: 1, protocol: 2, clones: 1 }, 0);
      if (warm.failures > 0) throw new Error(`${server.name}: warm-up clone failed: ${warm.firstError}`);
    }
    const { results: levels, discarded } = await runLevels(
      sizes.levels.map((workers) => ({ workers, protocol: 2, clones: sizes.clones })),
      {
        servers: trio,
        storm,
        maxOther,
        retries: quick ? 0 : 1,
        rounds: sizes.rounds,
        idleWaitMs: quick ? 2_000 : 20_000,
        signal: abort.signal,
        log,
      },
    );
    // Read while the servers run: a node removes its cache directory when it stops.
    const layouts = {
      peer: await packLayout(fixture.peerRepo),
      narwal: await narwalCacheLayout(narwalData),
      [narwalSlow.name]: await narwalCacheLayout(narwalSlowData),
    };
    results.clones = { fixture: { refs: fixture.refs, repo: REPO, layouts }, client, levels, discarded };
    await save();
  }

  if (phases.has('ci')) {
    const plans: CiStormPlan[] = [
      { name: '1 job', kind: 'depth=1', jobs: 1, commits: 1 },
      { name: '8 identical', kind: 'depth=1', jobs: 8, commits: 1 },
      { name: `${sizes.ciJobs} identical`, kind: 'depth=1', jobs: sizes.ciJobs, commits: 1 },
      { name: '8 over 4 commits', kind: 'depth=1', jobs: 8, commits: 4 },
      // The server alone: the same fetches without the clients' CPU (bench/wireCheckout.ts).
      { name: '8 identical, wire clients', kind: 'depth=1', jobs: 8, commits: 1, client: 'wire' },
      { name: '1 job', kind: 'filter=blob:none', jobs: 1, commits: 1 },
      { name: '8 identical', kind: 'filter=blob:none', jobs: 8, commits: 1 },
    ];
    log(
      `CI checkout storms (actions/checkout's fetch, --depth=1 and --filter=blob:none): ${plans.map((p) => `${p.kind} ${p.name}`).join(', ')}; peer and narwal, and a bare node:http server replaying narwal's answers for the identical ones`,
    );
    const fixture = await fixtureOnce();
    // The stock server as a partial clone needs it (git-config(1), uploadpack.allowFilter); narwal
    // allows filters itself (lib/git/uploadPack.ts).
    await gitOk(['config', 'uploadpack.allowFilter', 'true'], { home, cwd: fixture.peerRepo });
    const gitAgent = `git/${(await gitOk(['--version'], { home })).stdout.trim().split(' ').pop()}`;
    const tmpRoot = join(workDir, 'ci');
    await mkdir(tmpRoot, { recursive: true });
    // What node:http alone costs per job: the same storms of identical jobs against a bare server
    // replaying narwal's answers (bench/floor.ts).
    const floor = await started(startFloorProcess(narwal));
    // Off the clock, each server answers the same checkout a few hundred times first: a server that
    // has run for a while has its request path compiled, and the floor starts cold here.
    const warmSha = (
      await gitOk(['rev-parse', 'refs/heads/master'], { home, cwd: fixture.peerRepo })
    ).stdout.trim();
    for (const [server, jobs] of [
      [peer, 20],
      [narwal, 300],
      [floor, 300],
    ] as const)
      await warmUp({ server, repo: REPO, sha: warmSha, jobs, gitAgent, signal: abort.signal });
    const storms = [];
    // Each plan once per round, the plans taking turns: one storm is one sample on a shared
    // machine, and a drift of the machine over the phase falls on every plan alike.
    for (let round = 0; round < sizes.ciRounds; round++)
      for (const [i, plan] of plans.entries()) {
        const branch = `ci-${round}-${i}`;
        // A push just before the storm, as CI jobs follow the push that started them: no server has
        // answered these fetches before. Each server is still before its storm (narwal prepares the
        // new state, and may write a checkpoint, off the clock).
        const shas = await pushCiCommits({
          peerRepo: fixture.peerRepo,
          home,
          servers: [peer, narwal],
          repo: REPO,
          branch,
          count: plan.commits,
          base: 'refs/heads/master',
        });
        const identical = plan.jobs > 1 && plan.commits === 1;
        for (const server of identical ? [peer, narwal, floor] : [peer, narwal]) {
          const storm = {
            server,
            repo: REPO,
            plan,
            shas,
            branch,
            tmpRoot,
            home,
            gitAgent,
            signal: abort.signal,
          };
          // The floor answers from memory only once it has passed the storm's request on: one job
          // first, off the clock, so its storm is replays alone.
          if (server.kind === 'floor') await ciStorm({ ...storm, plan: { ...plan, name: 'fill', jobs: 1 } });
          const quiet = await waitForServerQuiet(server, quick ? 20_000 : 180_000, abort.signal);
          const result = await ciStorm(storm);
          result.quiet = quiet;
          result.round = round;
          const s = summarizeCi(result);
          log(
            `  ${sizes.ciRounds > 1 ? `round ${round + 1}: ` : ''}${server.name} ${plan.kind} ${plan.name}: ${s.jobsPerSecond.toFixed(2)} jobs/s, server CPU ${s.serverCpuPerJobMs.toFixed(0)} ms/job (${s.serverCpuMs.toFixed(0)} ms in all), p90 ${s.p90Ms.toFixed(0)} ms${quiet ? '' : ' (server never still before it)'}${result.failures > 0 ? `, ${result.failures} failed: ${result.firstError}` : ''}`,
          );
          storms.push(result);
        }
      }
    await stopAll([floor]);
    results.ci = { repo: REPO, storms };
    await save();
  }

  if (phases.has('nodes')) {
    log(`two processes vs one: ${sizes.nodeWorkers} workers x ${sizes.nodePushes} pushes, one branch each`);
    const seconds = [
      await started(startPeerProcess({ root: peerRoot, user: 'admin', password: token, name: 'peer-b' })),
      await started(
        startNarwal({ dataDir: narwalData, token, cli: build.cli, name: 'narwal-b', env: narwalEnv }),
      ),
      await started(
        startNarwal({
          dataDir: narwalSlowData,
          token,
          cli: build.cli,
          latencyMs: latency,
          name: `narwal-${latency}ms-b`,
          env: narwalEnv,
        }),
      ),
    ];
    const chains = Array.from({ length: sizes.nodeWorkers }, (_, w) => commitsOf(source, `node${w}`));
    results.nodes = {};
    for (const [i, first] of trio.entries()) {
      const second = seconds[i] as BenchServer;
      const one = await pushRace({
        nodes: [first],
        source,
        chains,
        repo: 'bench/nodes-one.git',
        signal: abort.signal,
      });
      const two = await pushRace({
        nodes: [first, second],
        source,
        chains,
        repo: 'bench/nodes-two.git',
        signal: abort.signal,
      });
      results.nodes[first.name] = { one, two };
      log(
        `  ${first.name}: one process ${one.pushesPerSecond.toFixed(2)}/s, two ${two.pushesPerSecond.toFixed(2)}/s (${(two.pushesPerSecond / one.pushesPerSecond).toFixed(2)}x)${one.failures + two.failures > 0 ? `, failures ${one.failures}/${two.failures}: ${one.firstError ?? two.firstError}` : ''}`,
      );
    }
    await stopAll(seconds);
    await save();
  }

  if (phases.has('refs')) {
    log(`refs growth: ${sizes.refs} refs created one push at a time, per server`);
    results.refs = {
      interval: sizes.refsInterval,
      runs: await sequentialPushes({
        servers: trio,
        source,
        commits: commitsOf(source, 'refs'),
        repo: 'bench/refs.git',
        block: sizes.refsInterval,
        refspec: (oid, i) => `${oid}:refs/heads/r-${i}`,
        signal: abort.signal,
        log,
        label: 'refs',
      }),
    };
    await save();
  }

  if (phases.has('writers')) {
    log(`simultaneous writers: ${sizes.writers.join(', ')} pushes at once to distinct branches`);
    results.writers = [];
    for (const n of sizes.writers) {
      for (const server of trio) {
        const r = await concurrentWriters({
          server,
          source,
          commits: commitsOf(source, 'writers'),
          writers: n,
          repo: `bench/writers-${n}.git`,
          signal: abort.signal,
        });
        results.writers.push(r);
        log(
          `  ${server.name} ${n} writers: ${r.landed}/${n} landed (${r.succeeded} exited 0, ${r.lost} lost) in ${(r.wallMs / 1000).toFixed(1)} s${r.errors[0] ? ` - ${r.errors[0].count}x ${r.errors[0].message}` : ''}`,
        );
      }
    }
    await save();
  }

  await stopAll([...trio]);

  if (phases.has('cold')) {
    log(`cold info/refs and log pages after ${sizes.entries} log entries`);
    const coldData = join(workDir, 'long');
    // The log's name for the repository; over HTTP (and on the peer's disk) it ends in .git.
    const longRepo = 'bench/long-log';
    const longUrlPath = `${longRepo}.git`;
    const longLog = await buildLongLog({
      work: join(workDir, 'long-work'),
      dataDir: coldData,
      token,
      repo: longRepo,
      entries: sizes.entries,
      after: 100,
      log,
    });
    log(
      `  log built in ${(longLog.buildMs / 1000).toFixed(1)} s: ${longLog.entries} entries, checkpoint at ${longLog.checkpointSeq}`,
    );
    const longPeerRoot = join(workDir, 'long-peer');
    await gitOk(['clone', '--quiet', '--bare', longLog.work, join(longPeerRoot, longUrlPath)], { home });
    const probes = [];
    const longPeer = await started(startPeerProcess({ root: longPeerRoot, user: 'admin', password: token }));
    probes.push(
      await probeInfoRefs({
        server: longPeer,
        repo: longRepo,
        entries: sizes.entries,
        probes: sizes.probes,
        home,
      }),
    );
    await stopAll([longPeer]);
    const monitorPages = [];
    for (const ms of [0, latency]) {
      const server = await started(
        startNarwal({ dataDir: coldData, token, cli: build.cli, latencyMs: ms, env: narwalEnv }),
      );
      // The log pages first, while the fresh process has read nothing of the log.
      const monitor = await probeMonitorPages({
        server,
        repo: longRepo,
        entries: longLog.entries,
        token,
        probes: sizes.probes,
      });
      monitorPages.push(monitor);
      log(
        `  ${server.name} monitor: ${monitor.pages.map((p) => `${p.page} ${Math.round(p.firstMs)} ms first, ${Math.round(p.warmMedianMs)} warm`).join('; ')}`,
      );
      const probe = await probeInfoRefs({
        server,
        repo: longUrlPath,
        entries: sizes.entries,
        probes: sizes.probes,
        home,
        cacheDir: join(coldData, 'cache'),
      });
      probes.push(probe);
      log(
        `  ${server.name}: cold ${Math.round(probe.coldMedian)} ms, warm ${Math.round(probe.warmMedian)} ms`,
      );
      await stopAll([server]);
    }
    const pages = [];
    for (const ms of [0, latency]) {
      const page = await probeLogPages({
        storeRoot: join(coldData, 'store'),
        repo: longRepo,
        latencyMs: ms,
        probes: sizes.probes,
      });
      pages.push(page);
      log(
        `  log pages at ${ms} ms: ${page.pages.map((p) => `${p.page} ${Math.round(p.medianMs)} ms (${p.storeReads} reads, ${p.sequentialRounds} in sequence)`).join(', ')}`,
      );
    }
    results.cold = {
      log: { ...longLog, work: relative(workDir, longLog.work) },
      probes,
      pages,
      monitorPages,
    };
    await save();
  }

  if (phases.has('profile')) {
    log(`push profile: ${sizes.profilePushes} traced pushes per server`);
    results.profile = [];
    const commits = commitsOf(source, 'profile');
    const peerTrace = join(workDir, 'trace-peer');
    await mkdir(peerTrace, { recursive: true });
    const tracedPeer = await started(
      startPeerProcess({
        root: join(workDir, 'peer-traced'),
        user: 'admin',
        password: token,
        trace2Dir: peerTrace,
      }),
    );
    const peerRun = await profilePushes({
      server: tracedPeer,
      traceDir: peerTrace,
      source,
      commits,
      repo: 'bench/profile.git',
      pauseMs: 300,
    });
    await stopAll([tracedPeer]);
    results.profile.push(
      await analyzeProfile({ server: 'peer', latencyMs: 0, windows: peerRun.windows, gitDir: peerTrace }),
    );
    // Settled (a pause after each push), then back to back as the sequential test pushes: the
    // difference is what background work after a publish costs the next push.
    for (const [ms, pauseMs] of [
      [0, 300],
      [latency, 300 + 10 * latency],
      [0, 0],
      [latency, 0],
    ] as const) {
      const label = `${ms > 0 ? `narwal-${ms}ms` : 'narwal'}${pauseMs === 0 ? ' back to back' : ''}`;
      const traceDir = join(workDir, `trace-${ms}-${pauseMs}`);
      const server = await started(
        startNarwal({
          dataDir: join(workDir, `narwal-traced-${ms}-${pauseMs}`),
          token,
          cli: build.cli,
          latencyMs: ms,
          name: label,
          env: { ...narwalEnv, NARWAL_TRACE_DIR: traceDir },
        }),
      );
      const run = await profilePushes({
        server,
        traceDir,
        source,
        commits,
        repo: 'bench/profile.git',
        pauseMs,
      });
      await stopAll([server]);
      results.profile.push(
        await analyzeProfile({
          server: label,
          latencyMs: ms,
          windows: run.windows,
          storeDir: traceDir,
          gitDir: join(traceDir, 'git'),
        }),
      );
    }
    for (const p of results.profile)
      log(
        `  ${p.server}: client ${Math.round(p.median.clientMs)} ms, store ${p.median.storeOps} ops (${p.median.storeRounds} in sequence, ${Math.round(p.median.storeBusyMs)} ms busy), git ${Object.entries(
          p.median.git,
        )
          .map(([k, v]) => `${k} ${Math.round(v)}`)
          .join(', ')}`,
      );
    await save();
  }

  if (phases.has('lfs')) {
    log(
      `git lfs: a ${sizes.lfsBytes / (1024 * 1024)} MB object through the embedded store against cp, and a batch of ${sizes.lfsObjects} at ${latency} ms, ${sizes.lfsRuns} runs`,
    );
    results.lfs = await lfsBench({
      workDir,
      home,
      token,
      cli: build.cli,
      latencyMs: latency,
      env: narwalEnv,
      bytes: sizes.lfsBytes,
      objects: sizes.lfsObjects,
      runs: sizes.lfsRuns,
      log,
    });
    await save();
  }

  if (phases.has('uris')) {
    log(
      `packfile-uris: ${sizes.urisClones} full clones on the Lambda stand-in, of the fixture and of a repository ten times its size`,
    );
    results.uris = await packfileUrisBench({ workDir, home, clones: sizes.urisClones, log });
    await save();
  }

  await save();
  const report = await writeReport(results, {
    dir: resultsDir,
    stamp,
    tables: writeTable
      ? [join(PROJECT_ROOT, 'README.md'), join(PROJECT_ROOT, 'docs', 'benchmarks.md')]
      : undefined,
  });
  console.log(report.summary);
  console.log(
    `\nreport: ${relative(PROJECT_ROOT, report.markdown)}\nraw numbers: ${relative(PROJECT_ROOT, join(resultsDir, `${stamp}.json`))}`,
  );
} finally {
  await stopAll([...running]);
  await rm(workDir, { recursive: true, force: true, maxRetries: 3 });
}

function machineInfo(): BenchResults['machine'] {
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    git: execFileSync('git', ['--version'], { encoding: 'utf8' }).trim(),
    node: process.version,
    loadAverageBefore: loadavg(),
  };
}

function isoStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replaceAll(':', '-');
}

function positive(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`expected a positive integer, not ${JSON.stringify(text)}`);
  return n;
}

function phase(text: string): Phase {
  if ((PHASES as readonly string[]).includes(text)) return text as Phase;
  throw new Error(`unknown phase ${JSON.stringify(text)}; phases: ${PHASES.join(', ')}`);
}

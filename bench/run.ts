/**
 * `npm run bench [-- --quick]`: narwal against stock `git http-backend` (the peer) serving the
 * same repository on the same machine in the same run. For now: the clone storm.
 *
 * Options: --quick (about two minutes), --levels 10,25,50, --clones N (per server and level),
 * --no-v0 (skip the protocol v0 level), --narwal-rev REV (measure that commit, built apart, rather
 * than the working tree's dist/narwal.js),
 * --max-other F (rerun a storm when other work used more than this share of the machine; 0.05),
 * --retries N (how often; full 2, quick 1), --idle-wait S (longest wait for an idle machine before
 * a storm; full 300, quick 20), --client git|wire (real `git clone --bare`, the default, or the same
 * protocol v2 requests with the pack discarded, which leaves the machine to the servers).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, release, tmpdir, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { cloneStorm } from './cloneStorm.js';
import { narwalCacheLayout, PROJECT_ROOT, packLayout, prepareFixture, REPO, sameRefs } from './fixtures.js';
import { makeClientHome } from './gitClient.js';
import { type Level, otherWork, percent, runLevels } from './levels.js';
import { narwalBuild } from './narwalBuild.js';
import { cloneTable, layoutLine, SEED_000 } from './report.js';
import { type BenchServer, startNarwal, startPeerProcess } from './servers.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    levels: { type: 'string' },
    clones: { type: 'string' },
    'no-v0': { type: 'boolean', default: false },
    'narwal-rev': { type: 'string' },
    'max-other': { type: 'string', default: '0.05' },
    retries: { type: 'string' },
    'idle-wait': { type: 'string' },
    client: { type: 'string', default: 'git' },
  },
});
const quick = values.quick ?? false;
const levels = values.levels ? values.levels.split(',').map(positive) : quick ? [4, 8] : [10, 25, 50];
const clones = values.clones ? positive(values.clones) : quick ? 16 : 100;
const client = values.client === 'wire' ? 'wire' : 'git';
if (values.client !== client) throw new Error(`--client must be git or wire, not ${values.client}`);
// The wire client speaks protocol v2 only.
const withV0 = !(values['no-v0'] ?? false) && client === 'git';
const maxOther = Number(values['max-other']);
const retries = values.retries !== undefined ? Number(values.retries) : quick ? 1 : 2;
const idleWaitMs =
  1000 * (values['idle-wait'] !== undefined ? Number(values['idle-wait']) : quick ? 20 : 300);

const abort = new AbortController();
// Every running clone listens for the abort (spawn's `signal`), and there may be hundreds.
setMaxListeners(0, abort.signal);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => abort.abort(new Error(`interrupted by ${signal}`)));

const startedAt = new Date();
const workDir = await mkdtemp(join(tmpdir(), 'narwal-bench-'));
const servers: BenchServer[] = [];
try {
  const machine = machineInfo();
  console.error(
    `narwal bench (${quick ? 'quick' : 'full'}): levels ${levels.join(', ')}, ${clones} clones per server and level; ${machine.nproc} CPUs, ${machine.git}, node ${machine.node}`,
  );
  const home = await makeClientHome(workDir);
  const token = `bench_${randomBytes(12).toString('hex')}`;
  const build = await narwalBuild({
    workDir,
    ...(values['narwal-rev'] !== undefined ? { rev: values['narwal-rev'] } : {}),
  });
  console.error(
    `narwal ${build.commit.slice(0, 7)}${build.localChanges ? ' with local changes' : ''} (${relative(PROJECT_ROOT, build.cli)})`,
  );
  const dataDir = join(workDir, 'narwal');
  const narwal = await startNarwal({ dataDir, token, cli: build.cli });
  servers.push(narwal);
  const fixture = await prepareFixture({ workDir, home, narwalRepoUrl: narwal.repoUrl(REPO) });
  console.error(
    `fixture: ${fixture.refs} refs; bundle cloned in ${ms(fixture.cloneBundleMs)}, pushed to narwal in ${ms(fixture.pushMs)}`,
  );
  // The peer asks for credentials too, so git makes the same requests (the 401 probe included).
  const peer = await startPeerProcess({ root: fixture.peerRoot, user: 'admin', password: token });
  servers.push(peer);
  await sameRefs(home, [peer.repoUrl(REPO), narwal.repoUrl(REPO)]);

  const tmpRoot = join(workDir, 'clones');
  await mkdir(tmpRoot);
  const storm = (server: BenchServer, workers: number, protocol: 0 | 2, count: number) =>
    cloneStorm({
      server,
      repo: REPO,
      clones: count,
      workers,
      protocol,
      tmpRoot,
      home,
      client,
      signal: abort.signal,
    });
  // One unmeasured clone each: narwal's cache and the page cache are warm before anything counts.
  for (const server of [peer, narwal]) {
    const warm = await storm(server, 1, 2, 1);
    if (warm.failures > 0) throw new Error(`${server.name}: warm-up clone failed: ${warm.firstError}`);
  }

  const plan: Level[] = levels.map((workers) => ({ workers, protocol: 2, clones }));
  if (withV0) plan.push({ workers: levels[0] ?? 4, protocol: 0, clones: quick ? 8 : clones });
  const { results, discarded } = await runLevels(plan, {
    servers: { peer, narwal },
    storm: (server, level) => storm(server, level.workers, level.protocol, level.clones),
    maxOther,
    retries,
    idleWaitMs,
    signal: abort.signal,
    log: (line) => console.error(line),
  });

  // Read while narwal runs: a node removes its cache directory when it stops.
  const layouts = {
    peer: await packLayout(fixture.peerRepo),
    narwal: await narwalCacheLayout(dataDir),
  };
  const table = cloneTable(results);
  console.log(
    `\n${client === 'git' ? 'clients: git clone --bare' : 'clients: protocol v2 requests, pack discarded (--client wire)'}, ${clones} clones per server and level, ${machine.nproc} CPUs shared by servers and clients\n\n${table}\n`,
  );
  const disturbed = results
    .flatMap((level) => [level.peer, level.narwal])
    .filter((r) => otherWork(r) > maxOther);
  if (disturbed.length > 0)
    console.log(
      `warning: other work used more than ${percent(maxOther)} of the machine during ${disturbed.length} storm(s) (${disturbed.map((r) => `${r.server} ${r.workers}w v${r.protocol}: ${percent(otherWork(r))}`).join(', ')}); compare with care\n`,
    );
  for (const [name, layout] of Object.entries(layouts)) console.log(layoutLine(name, layout, workDir));

  const file = join(
    PROJECT_ROOT,
    'bench',
    'results',
    `${isoStamp(startedAt)}-clone${client === 'wire' ? '-wire' : ''}.json`,
  );
  await mkdir(join(PROJECT_ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(
    file,
    `${JSON.stringify(
      {
        benchmark: 'clone',
        mode: quick ? 'quick' : 'full',
        client,
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        machine,
        narwal: build,
        fixture: { ...fixture, repo: REPO, layouts },
        seed000: SEED_000,
        levels: results,
        discarded,
        table,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nraw numbers: ${file}`);
} finally {
  for (const server of servers.reverse()) await server.stop().catch(() => {});
  await rm(workDir, { recursive: true, force: true });
}

function machineInfo() {
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    git: execFileSync('git', ['--version'], { encoding: 'utf8' }).trim(),
    node: process.version,
  };
}

function isoStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replaceAll(':', '-');
}

function ms(value: number): string {
  return `${(value / 1000).toFixed(1)} s`;
}

function positive(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`expected a positive integer, not ${JSON.stringify(text)}`);
  return n;
}

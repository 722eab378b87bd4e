/**
 * CI checkout storms: N jobs at once, each in a fresh `git init` repository running exactly the
 * fetch actions/checkout runs (src/git-command-manager.ts: `git -c protocol.version=2 fetch
 * --no-tags --prune --no-recurse-submodules --depth=1 origin +<sha>:refs/remotes/origin/<branch>`),
 * or its partial-clone variant (`--filter=blob:none` instead of `--depth=1`). Every storm meets a
 * commit pushed just before it, as CI jobs meet the push that started them, so no server has
 * answered its question before. Measures jobs per second, the server's CPU (with its git
 * children) per job, and per-job wall time.
 *
 * Each job authenticates as actions/checkout makes it (src/git-auth-helper.ts): the remote URL
 * carries no credentials, and the job's config holds `http.<origin>/.extraheader` with a Basic
 * `AUTHORIZATION` header, which git sends with its first request. Credentials in the URL instead
 * make git 2.39 send that request without them first and repeat it after the 401: a third
 * request per job that CI runners do not make.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { git, gitOk } from './gitClient.js';
import { type CpuTimes, cpuDelta, totalCpu } from './procCpu.js';
import type { BenchServer } from './servers.js';
import { median, percentile } from './stats.js';
import { wireCheckout } from './wireCheckout.js';

export type CiFetchKind = 'depth=1' | 'filter=blob:none';

export interface CiStormPlan {
  /** What the report calls it: `1 job`, `8 identical`, `8 over 4 commits`, ... */
  readonly name: string;
  readonly kind: CiFetchKind;
  readonly jobs: number;
  /** How many new commits the jobs are spread over, round robin. */
  readonly commits: number;
  /**
   * `wire`: each job makes git's requests itself and throws the answer away (wireCheckout.ts), so
   * the storm measures the server without its clients' CPU; depth=1 only. Real git jobs otherwise.
   */
  readonly client?: 'wire';
}

export interface CiStormResult {
  readonly server: string;
  readonly plan: CiStormPlan;
  readonly failures: number;
  readonly firstError?: string;
  readonly elapsedMs: number;
  readonly jobMs: number[];
  readonly serverCpu: CpuTimes;
  /** Whether the server was still before the storm (see waitForServerQuiet). */
  quiet?: boolean;
  /** Which round of the phase it was (0 first): a plan is stormed once per round, on new commits. */
  round?: number;
}

export interface CiStormSummary {
  readonly jobsPerSecond: number;
  readonly serverCpuPerJobMs: number;
  readonly serverCpuMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
}

/** actions/checkout's fetch of `sha` as branch `branch`, depth 1 or filtered. */
export function checkoutFetch(kind: CiFetchKind, sha: string, branch: string): string[] {
  return [
    '-c',
    'protocol.version=2',
    'fetch',
    '--no-tags',
    '--prune',
    '--no-recurse-submodules',
    kind === 'depth=1' ? '--depth=1' : '--filter=blob:none',
    'origin',
    `+${sha}:refs/remotes/origin/${branch}`,
  ];
}

/**
 * How a job reaches `repoUrl` the way actions/checkout sets it up: the URL without its user-info,
 * and the config entry that sends that user-info as a Basic `AUTHORIZATION` header (none when the
 * URL has no credentials).
 */
export function checkoutRemote(repoUrl: string): { url: string; extraHeader?: readonly [string, string] } {
  const parsed = new URL(repoUrl);
  if (parsed.username === '' && parsed.password === '') return { url: repoUrl };
  const basic = Buffer.from(
    `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`,
  ).toString('base64');
  parsed.username = '';
  parsed.password = '';
  return {
    url: parsed.href,
    extraHeader: [`http.${parsed.origin}/.extraheader`, `AUTHORIZATION: basic ${basic}`],
  };
}

/**
 * New commits for one storm, pushed to every server: a chain of `count` commits on top of `base`
 * (each with its tree, so each depth-1 answer is a whole checkout), made in the peer's own
 * repository and pushed from it to the others.
 */
export async function pushCiCommits(options: {
  readonly peerRepo: string;
  readonly home: string;
  readonly servers: readonly BenchServer[];
  readonly repo: string;
  readonly branch: string;
  readonly count: number;
  /** The ref the commits go on top of. */
  readonly base: string;
}): Promise<string[]> {
  const { peerRepo, home } = options;
  const shas: string[] = [];
  // The fixture's default branch (the bundle names no HEAD, so the peer's HEAD is unborn).
  let parent = (
    await gitOk(['rev-parse', '--verify', `${options.base}^{commit}`], { home, cwd: peerRepo })
  ).stdout.trim();
  const tree = (
    await gitOk(['rev-parse', '--verify', `${options.base}^{tree}`], { home, cwd: peerRepo })
  ).stdout.trim();
  for (let i = 0; i < options.count; i++) {
    const message = `ci ${options.branch} ${i}`;
    parent = (
      await gitOk(
        [
          '-c',
          'user.name=bench',
          '-c',
          'user.email=bench@example.com',
          'commit-tree',
          tree,
          '-p',
          parent,
          '-m',
          message,
        ],
        {
          home,
          cwd: peerRepo,
        },
      )
    ).stdout.trim();
    shas.push(parent);
  }
  await gitOk(['update-ref', `refs/heads/${options.branch}`, parent], { home, cwd: peerRepo });
  for (const server of options.servers) {
    if (server.kind === 'peer') continue;
    await gitOk(['push', '--quiet', server.repoUrl(options.repo), `refs/heads/${options.branch}`], {
      home,
      cwd: peerRepo,
    });
  }
  return shas;
}

/**
 * Waits until `server` (with its git children) has been still for a 2-second window, or for
 * `timeoutMs`: after a push narwal prepares the new state and may write a checkpoint (a repack of
 * the whole repository) in the background, which is not the storm's cost.
 */
export async function waitForServerQuiet(server: BenchServer, timeoutMs: number, signal?: AbortSignal) {
  const started = performance.now();
  for (;;) {
    const before = server.cpu();
    await sleep(2000, undefined, signal ? { signal } : {});
    const busy = totalCpu(cpuDelta(before, server.cpu())) / 2;
    if (busy <= 0.02) return true;
    if (performance.now() - started >= timeoutMs) return false;
  }
}

/** `jobs` sequential wire checkouts of `sha` against `server`, their answers thrown away. */
export async function warmUp(options: {
  readonly server: BenchServer;
  readonly repo: string;
  readonly sha: string;
  readonly jobs: number;
  readonly gitAgent: string;
  readonly signal?: AbortSignal;
}): Promise<void> {
  const url = options.server.repoUrl(options.repo);
  for (let i = 0; i < options.jobs; i++)
    await wireCheckout(url, options.sha, options.gitAgent, options.signal);
}

/** One storm of `plan.jobs` concurrent checkouts against `server`. */
export async function ciStorm(options: {
  readonly server: BenchServer;
  readonly repo: string;
  readonly plan: CiStormPlan;
  readonly shas: readonly string[];
  readonly branch: string;
  readonly tmpRoot: string;
  readonly home: string;
  /** The git whose requests wire jobs copy (`git/2.39.5`). */
  readonly gitAgent: string;
  readonly signal?: AbortSignal;
}): Promise<CiStormResult> {
  const { server, plan, home } = options;
  const url = server.repoUrl(options.repo);
  const remote = checkoutRemote(url);
  if (plan.client === 'wire' && plan.kind !== 'depth=1') throw new Error('wire jobs fetch at depth 1 only');
  // Each job's repository is made before the clock starts: only the fetch is the server's work.
  const dirs = await Promise.all(
    Array.from({ length: plan.client === 'wire' ? 0 : plan.jobs }, async () => {
      const dir = await mkdtemp(join(options.tmpRoot, 'ci-'));
      await gitOk(['init', '--quiet', dir], { home });
      await gitOk(['remote', 'add', 'origin', remote.url], { home, cwd: dir });
      if (remote.extraHeader) await gitOk(['config', ...remote.extraHeader], { home, cwd: dir });
      return dir;
    }),
  );
  const jobMs: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  const before = server.cpu();
  const started = performance.now();
  const wireJob = async (i: number) => {
    const sha = options.shas[i % options.shas.length] as string;
    const job = await wireCheckout(url, sha, options.gitAgent, options.signal).catch((error: Error) => error);
    if (!(job instanceof Error)) jobMs.push(job.ms);
    else {
      failures++;
      firstError ??= job.message;
    }
  };
  await Promise.all(plan.client === 'wire' ? Array.from({ length: plan.jobs }, (_, i) => wireJob(i)) : []);
  await Promise.all(
    dirs.map(async (dir, i) => {
      const sha = options.shas[i % options.shas.length] as string;
      const out = await git(checkoutFetch(plan.kind, sha, options.branch), {
        home,
        cwd: dir,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (out.code === 0) jobMs.push(out.ms);
      else {
        failures++;
        firstError ??= out.stderr.trim().split('\n').slice(-3).join(' / ');
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  // Let the server's last children (a pack cache hook finishing its file) be counted.
  await sleep(200);
  const serverCpu = cpuDelta(before, server.cpu());
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  return {
    server: server.name,
    plan,
    failures,
    ...(firstError !== undefined ? { firstError } : {}),
    elapsedMs,
    jobMs,
    serverCpu,
  };
}

export function summarizeCi(result: CiStormResult): CiStormSummary {
  const ok = Math.max(result.jobMs.length, 1);
  const cpuMs = totalCpu(result.serverCpu) * 1000;
  return {
    jobsPerSecond: result.jobMs.length / (result.elapsedMs / 1000),
    serverCpuMs: cpuMs,
    serverCpuPerJobMs: cpuMs / ok,
    p50Ms: percentile(result.jobMs, 50),
    p90Ms: percentile(result.jobMs, 90),
  };
}

/** The plans of `storms`, once each, in the order they first ran. */
export function ciPlans(storms: readonly CiStormResult[]): CiStormPlan[] {
  return [...new Map(storms.map((s) => [`${s.plan.kind} ${s.plan.name}`, s.plan])).values()];
}

/** Figures of the storms of one plan on one server, one per round: each the median over them. */
export interface CiRoundsSummary extends CiStormSummary {
  /** How many storms the medians are of. */
  readonly storms: number;
  /** The least and the most server CPU of one of them. */
  readonly serverCpuRangeMs: readonly [number, number];
}

/**
 * The storms of `plan` (by kind and name) on `server` over every round, summarised: one storm is
 * one sample on a shared two-CPU machine, where the server CPU of the same storm has ranged over
 * a third of its value from one run to the next. Undefined when there is none.
 */
export function summarizeCiRounds(
  storms: readonly CiStormResult[],
  server: string,
  plan: { readonly kind: string; readonly name: string },
): CiRoundsSummary | undefined {
  const summaries = storms
    .filter((s) => s.server === server && s.plan.kind === plan.kind && s.plan.name === plan.name)
    .map(summarizeCi);
  if (summaries.length === 0) return undefined;
  const of = (pick: (s: CiStormSummary) => number) => median(summaries.map(pick));
  const cpu = summaries.map((s) => s.serverCpuMs);
  return {
    storms: summaries.length,
    jobsPerSecond: of((s) => s.jobsPerSecond),
    serverCpuMs: of((s) => s.serverCpuMs),
    serverCpuPerJobMs: of((s) => s.serverCpuPerJobMs),
    p50Ms: of((s) => s.p50Ms),
    p90Ms: of((s) => s.p90Ms),
    serverCpuRangeMs: [Math.min(...cpu), Math.max(...cpu)],
  };
}

/**
 * The servers under test, each a process of its own started from the bundles in dist/: narwal
 * (`dist/narwal.js serve`, optionally with every store operation delayed by
 * NARWAL_STORE_LATENCY_MS) and the peer (`dist/bench-peer.js`, git http-backend). Both are
 * measured the same way: each in a cgroup of its own where the machine allows, through
 * /proc/<pid>/stat otherwise (procCpu.ts).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type CpuTimes, cpuMeter } from './procCpu.js';

/** `floor`: a bare node:http server replaying narwal's answers (floor.ts), for CI storms only. */
export type ServerKind = 'peer' | 'narwal' | 'floor';

export interface BenchServer {
  /** What the report calls it: `peer`, `narwal`, `narwal-30ms`, ... */
  readonly name: string;
  readonly kind: ServerKind;
  /** Store latency (narwal only; 0 for the peer). */
  readonly latencyMs: number;
  readonly pid: number;
  /** Base URL without credentials. */
  readonly url: string;
  /** The clone URL of `repo`, with credentials where the server needs them. */
  repoUrl(repo: string): string;
  /** Makes an empty repository that pushes may fill (narwal creates one on the first push). */
  newRepo(repo: string): Promise<void>;
  cpu(): CpuTimes;
  /** How cpu() is read: a cgroup's clock, or /proc ticks (procCpu.ts). */
  readonly cpuClock: 'cgroup' | 'proc';
  /** Error lines the server logged so far (narwal's JSON log lines of level error; at most 50). */
  errors(): readonly string[];
  stop(): Promise<void>;
}

const DIST = resolve(import.meta.dirname, '..', 'dist');
const run = promisify(execFile);

/** The CLI `npm run build` writes; --narwal-rev picks another build (say, of an older commit). */
export const DEFAULT_NARWAL_CLI = resolve(DIST, 'narwal.js');

export async function startNarwal(options: {
  dataDir: string;
  token: string;
  cli?: string;
  name?: string;
  latencyMs?: number;
  /** Extra environment (instrumentation that is off by default). */
  env?: Readonly<Record<string, string>>;
}): Promise<BenchServer> {
  const latencyMs = options.latencyMs ?? 0;
  const child = spawn(
    process.execPath,
    [options.cli ?? DEFAULT_NARWAL_CLI, 'serve', '--port', '0', '--data', options.dataDir],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NARWAL_ADMIN_TOKEN: options.token,
        NARWAL_QUIET: '1',
        NARWAL_STORE_LATENCY_MS: String(latencyMs),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return running({
    name: options.name ?? (latencyMs > 0 ? `narwal-${latencyMs}ms` : 'narwal'),
    kind: 'narwal',
    latencyMs,
    child,
    withCredentials: (url) => url.replace('://', `://admin:${options.token}@`),
    newRepo: async () => {},
  });
}

export async function startPeerProcess(options: {
  root: string;
  user: string;
  password: string;
  name?: string;
  /** A directory for git's trace2 event files of every request (off when absent). */
  trace2Dir?: string;
}): Promise<BenchServer> {
  const child = spawn(
    process.execPath,
    [
      resolve(DIST, 'bench-peer.js'),
      '--root',
      options.root,
      '--user',
      options.user,
      '--password',
      options.password,
      ...(options.trace2Dir ? ['--trace2', options.trace2Dir] : []),
    ],
    { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return running({
    name: options.name ?? 'peer',
    kind: 'peer',
    latencyMs: 0,
    child,
    withCredentials: (url) => url.replace('://', `://${options.user}:${options.password}@`),
    newRepo: async (repo) => {
      const dir = join(options.root, repo);
      await mkdir(dir, { recursive: true });
      await run('git', ['init', '--quiet', '--bare', dir]);
    },
  });
}

/** The floor (floor.ts) in front of `upstream`: the same credentials, which it passes on. */
export async function startFloorProcess(upstream: BenchServer): Promise<BenchServer> {
  const child = spawn(process.execPath, [resolve(DIST, 'bench-floor.js'), '--upstream', upstream.url], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const credentials = new URL(upstream.repoUrl('r'));
  return running({
    name: 'floor',
    kind: 'floor',
    latencyMs: 0,
    child,
    withCredentials: (url) => {
      const parsed = new URL(url);
      parsed.username = credentials.username;
      parsed.password = credentials.password;
      return parsed.href.replace(/\/$/, '');
    },
    newRepo: async () => {
      throw new Error('the floor only replays fetches');
    },
  });
}

async function running(spec: {
  name: string;
  kind: ServerKind;
  latencyMs: number;
  child: ChildProcess;
  withCredentials: (url: string) => string;
  newRepo: (repo: string) => Promise<void>;
}): Promise<BenchServer> {
  const { name, child } = spec;
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: could not start`);
  const meter = cpuMeter(pid);
  const stop = async () => {
    await stopChild(child);
    await meter.close();
  };
  let stderr = '';
  let partial = '';
  const errors: string[] = [];
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8192);
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.includes('"level":"error"') && errors.length < 50) errors.push(line);
  });
  try {
    const url = await new Promise<string>((done, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`${name} did not start in 30 s: ${stderr}`)), 30_000);
      // Keep reading stdout for the whole run so the child never blocks on a full pipe.
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const match = /listening on (http:\/\/\S+)/.exec(out);
        if (match?.[1]) {
          clearTimeout(timer);
          done(match[1]);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`${name} exited with ${code}: ${stderr}`));
      });
    });
    return {
      name,
      kind: spec.kind,
      latencyMs: spec.latencyMs,
      pid,
      url,
      repoUrl: (repo) => `${spec.withCredentials(url)}/${repo}`,
      newRepo: spec.newRepo,
      cpu: () => meter.read(),
      cpuClock: meter.clock,
      errors: () => errors,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** SIGTERM, then SIGKILL if the process is still there after 10 s; resolves once it has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

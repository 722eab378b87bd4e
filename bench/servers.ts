/**
 * The two servers under test, each a process of its own started from the bundles in dist/:
 * narwal (`dist/narwal.js serve`) and the peer (`dist/bench-peer.js`, git http-backend). Both are
 * measured the same way, through /proc/<pid>/stat.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { type CpuTimes, processCpu } from './procCpu.js';

export type ServerName = 'peer' | 'narwal';

export interface BenchServer {
  readonly name: ServerName;
  readonly pid: number;
  /** Base URL without credentials. */
  readonly url: string;
  /** The clone URL of `repo`, with credentials where the server needs them. */
  repoUrl(repo: string): string;
  cpu(): CpuTimes;
  stop(): Promise<void>;
}

const DIST = resolve(import.meta.dirname, '..', 'dist');

/** The CLI `npm run build` writes; --narwal picks another build (say, of an older commit). */
export const DEFAULT_NARWAL_CLI = resolve(DIST, 'narwal.js');

export async function startNarwal(options: {
  dataDir: string;
  token: string;
  cli?: string;
  env?: Record<string, string>;
}): Promise<BenchServer> {
  const child = spawn(
    process.execPath,
    [options.cli ?? DEFAULT_NARWAL_CLI, 'serve', '--port', '0', '--data', options.dataDir],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NARWAL_ADMIN_TOKEN: options.token,
        NARWAL_QUIET: '1',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return running('narwal', child, (url) => url.replace('://', `://admin:${options.token}@`));
}

export async function startPeerProcess(options: {
  root: string;
  user: string;
  password: string;
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
    ],
    { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return running('peer', child, (url) => url.replace('://', `://${options.user}:${options.password}@`));
}

async function running(
  name: ServerName,
  child: ChildProcess,
  withCredentials: (url: string) => string,
): Promise<BenchServer> {
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: could not start`);
  const stop = () => stopChild(child);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8192);
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
      pid,
      url,
      repoUrl: (repo) => `${withCredentials(url)}/${repo}`,
      cpu: () => processCpu(pid),
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

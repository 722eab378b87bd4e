/**
 * Starts narwal for integration tests: either in this process (fast, for most tests) or as a real
 * `narwal serve` process from the built CLI (for several nodes sharing one data directory).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type App, createApp } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import type { ProcessSpawner } from '../../lib/git/ProcessSpawner.js';
import { createNodeServer } from '../../lib/http/nodeServer.js';
import { type Logger, silentLogger } from '../../lib/log.js';
import type { ObjectStore } from '../../lib/store/ObjectStore.js';

export const ADMIN_TOKEN = 'test-admin-token';

export interface RunningNarwal {
  readonly url: string;
  /** The base URL with the admin token as credentials. */
  readonly authUrl: string;
  readonly dataDir: string;
  stop(): Promise<void>;
}

export async function tempDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'narwal-data-'));
}

export async function startInProcess(
  options: {
    dataDir?: string;
    env?: Record<string, string>;
    logger?: Logger;
    store?: ObjectStore;
    spawner?: ProcessSpawner;
  } = {},
): Promise<RunningNarwal & { app: App }> {
  const logger = options.logger ?? silentLogger;
  const dataDir = options.dataDir ?? (await tempDataDir());
  const config = loadConfig({ NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, ...options.env }, { dataDir, port: 0 });
  const app = await createApp(config, logger, {
    ...(options.store ? { store: options.store } : {}),
    ...(options.spawner ? { spawner: options.spawner } : {}),
  });
  // As `narwal serve` does before it listens.
  await app.primeTransfers();
  const server: Server = createNodeServer(app.handler, logger, {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    bodyIdleMs: config.bodyIdleMs,
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    url,
    authUrl: `http://admin:${ADMIN_TOKEN}@127.0.0.1:${port}`,
    dataDir,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      await app.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

const CLI = resolve(import.meta.dirname, '../../dist/narwal.js');

/**
 * A real `narwal serve` process; several may share one data directory. `launcher` is a command
 * that runs it (`unshare ...`: see pidNamespace.ts); `processGroup` puts it and everything it
 * starts in a process group of its own, which `signalGroup` signals as one (a frozen sandbox).
 */
export async function startProcess(options: {
  dataDir: string;
  env?: Record<string, string>;
  launcher?: readonly string[];
  processGroup?: boolean;
}): Promise<
  RunningNarwal & {
    child: ChildProcess;
    output(): string;
    /** The pid of the narwal process itself, as this process sees it. */
    pid(): number;
    signalGroup(signal: NodeJS.Signals): void;
  }
> {
  const [command = process.execPath, ...prefix] = options.launcher ?? [];
  const args = [CLI, 'serve', '--port', '0', '--data', options.dataDir];
  const child = spawn(command, options.launcher ? [...prefix, process.execPath, ...args] : args, {
    env: { PATH: process.env.PATH, NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, NARWAL_QUIET: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup === true,
  });
  // 'close' comes after the process exits and its output pipes are drained, so output() then
  // holds every line it printed.
  const closed = new Promise((done) => child.once('close', done));
  let stderr = '';
  let out = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const url = await new Promise<string>((done, fail) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (match?.[1]) done(match[1]);
    });
    child.once('exit', (code) => fail(new Error(`narwal serve exited with ${code}: ${stderr}`)));
  });
  const narwalPid = options.launcher ? descendantRunning(child.pid ?? 0, CLI) : child.pid;
  if (narwalPid === undefined) throw new Error(`narwal serve not found under ${options.launcher?.join(' ')}`);
  return {
    child,
    url,
    authUrl: url.replace('://', `://admin:${ADMIN_TOKEN}@`),
    dataDir: options.dataDir,
    /** Everything the process printed so far: stdout, then stderr (its log lines). */
    output: () => `${out}${stderr}`,
    pid: () => narwalPid,
    signalGroup(signal) {
      if (!options.processGroup || child.pid === undefined)
        throw new Error('not in a process group of its own');
      process.kill(-child.pid, signal);
    },
    async stop() {
      // The narwal process itself: a launcher such as unshare ignores SIGTERM.
      if (child.exitCode === null && child.signalCode === null) process.kill(narwalPid, 'SIGTERM');
      await closed;
    },
  };
}

/** The first node process under `pid` (itself included) that runs `script`. */
function descendantRunning(pid: number, script: string): number | undefined {
  const cmdline = (() => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      return [];
    }
  })();
  if (cmdline[0] === process.execPath && cmdline[1] === script) return pid;
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return undefined;
  }
  for (const child of children) {
    const found = descendantRunning(child, script);
    if (found !== undefined) return found;
  }
  return undefined;
}

import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookChannel } from '../../lib/git/hookChannel.js';
import { installHooks } from '../../lib/git/hookScript.js';
import {
  type ProcReceiveCommand,
  type ProcReceiveResult,
  serveProcReceive,
} from '../../lib/protocol/procReceive.js';
import { type ReceivePackHead, ReceivePackHeadParser } from '../../lib/protocol/receivePackRequest.js';

/**
 * Where the hook's pipes are looked for: /proc (narwal takes them over), or a directory that is
 * not a procfs (the hook relays them with two `cat`s). Every test runs both ways.
 */
let procRoot: string | undefined;
const ZERO = '0'.repeat(40);

type Decide = (
  commands: ProcReceiveCommand[],
  pushOptions: string[],
  capabilities: string[],
) => Promise<ProcReceiveResult[]>;

/** One POST: what the hook was asked, what the parser saw, how receive-pack and the hook ended. */
interface Exchange {
  /** Whether the hook relayed its pipes (else this process took them over). */
  relayed?: boolean;
  asked: { commands: ProcReceiveCommand[]; pushOptions: string[]; capabilities: string[] }[];
  heads: ReceivePackHead[];
  outcome: Promise<{ exitCode: number | null; hookError: unknown }>;
}

let dir: string;
let repo: string;
let work: string;
let server: Server;
let port: number;
let decide: Decide;
const marker = `narwal-test-${randomUUID()}`;
const exchanges: Exchange[] = [];

function env(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    NARWAL_TEST_MARKER: marker,
  };
}

function git(args: string[], cwd = dir): string {
  return execFileSync('git', args, { cwd, env: env(), encoding: 'utf8' });
}

function receivePackArgs(extra: string[]): string[] {
  return ['-c', 'receive.advertisePushOptions=true', ...extra, 'receive-pack', '--stateless-rpc'];
}

function startReceivePack(exchange: Omit<Exchange, 'outcome'>) {
  const hooks = join(dir, 'hooks');
  const args = receivePackArgs(['-c', 'receive.procReceiveRefs=refs', '-c', `core.hooksPath=${hooks}`]);
  const child = spawn('git', [...args, repo], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: env() });
  const { stdin, stdout, stdio } = child;
  const channel = stdio[3];
  if (stdin === null || stdout === null || !(channel instanceof Duplex)) throw new Error('missing pipes');
  channel.on('error', () => {});
  let opened: Duplex | null = null;
  const hook = hookChannel(channel, procRoot === undefined ? {} : { procRoot })
    .then((pipes) => {
      opened = pipes;
      if (pipes === null) return;
      exchange.relayed = pipes === channel;
      return serveProcReceive(pipes, async (commands, pushOptions, capabilities) => {
        exchange.asked.push({ commands, pushOptions, capabilities });
        return decide(commands, pushOptions, capabilities);
      });
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  void exited.then(() => {
    channel.destroy();
    (opened as Duplex | null)?.destroy();
  });
  const outcome = Promise.all([exited, hook]).then(([exitCode, hookError]) => ({ exitCode, hookError }));
  return { stdin, stdout, outcome, kill: () => child.kill() };
}

async function push(...refspecs: string[]): Promise<{ exitCode: number | null; output: string }> {
  const url = `http://127.0.0.1:${port}/x.git`;
  const child = spawn('git', ['push', '-o', 'ci.skip', url, ...refspecs], { cwd: work, env: env() });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { exitCode, output };
}

/** Processes that inherited this test's marker (receive-pack, the relay's two `cat`s). */
function leftovers(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker)) {
        found.push(`${pid} ${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}`);
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'narwal-proc-receive-'));
  repo = join(dir, 'repo.git');
  work = join(dir, 'work');
  git(['init', '-q', '--bare', repo]);
  await installHooks(join(dir, 'hooks'));
  git(['init', '-q', work]);
  writeFileSync(join(work, 'README'), 'hello\n');
  git(['add', 'README'], work);
  git(['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'init'], work);

  server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/x.git/info/refs?service=git-receive-pack') {
      const advertisement = execFileSync('git', [...receivePackArgs([]), '--advertise-refs', repo], {
        env: env(),
      });
      res.writeHead(200, {
        'content-type': 'application/x-git-receive-pack-advertisement',
        'cache-control': 'no-cache',
      });
      res.end(Buffer.concat([Buffer.from('001f# service=git-receive-pack\n0000'), advertisement]));
    } else if (req.method === 'POST' && req.url === '/x.git/git-receive-pack') {
      const exchange: Omit<Exchange, 'outcome'> = { asked: [], heads: [] };
      const child = startReceivePack(exchange);
      exchanges.push(Object.assign(exchange, { outcome: child.outcome }));
      const parser = new ReceivePackHeadParser({ maxHeadBytes: 1 << 20, maxCommands: 100 });
      parser.on('head', (head: ReceivePackHead) => exchange.heads.push(head));
      parser.on('error', () => child.kill());
      child.stdin.on('error', () => {});
      req.pipe(parser).pipe(child.stdin);
      res.writeHead(200, {
        'content-type': 'application/x-git-receive-pack-result',
        'cache-control': 'no-cache',
      });
      child.stdout.pipe(res);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Waits up to 2 s for every process carrying the marker to be gone. */
async function settledLeftovers(): Promise<string[]> {
  let remaining = leftovers();
  for (let i = 0; i < 100 && remaining.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    remaining = leftovers();
  }
  return remaining;
}

describe.each([
  ['its pipes taken over through /proc', undefined],
  ['its pipes relayed by the hook', '/nonexistent-proc'],
])("serveProcReceive behind a real git receive-pack and narwal's hook, %s", (_mode, root) => {
  beforeAll(() => {
    procRoot = root;
  });

  it('can see a process left behind', async () => {
    const sleeper = spawn('sleep', ['30'], { env: env(), stdio: 'ignore' });
    await new Promise((resolve) => sleeper.on('spawn', resolve));
    expect(leftovers()).toEqual([`${sleeper.pid} sleep`]);
    sleeper.kill();
    expect(await settledLeftovers()).toEqual([]);
  });

  it('accepts one ref and rejects the other with "fetch first"', async () => {
    decide = async (commands) =>
      commands.map(
        ({ ref }): ProcReceiveResult =>
          ref === 'refs/heads/feature' ? { ref, ok: false, reason: 'fetch first' } : { ref, ok: true },
      );
    const { exitCode, output } = await push('HEAD:refs/heads/main', 'HEAD:refs/heads/feature');

    expect(output).toMatch(/^ \* \[new branch\] +HEAD -> main$/m);
    // send-pack recognises the reason "fetch first" and shows it as a plain rejection with a hint.
    expect(output).toMatch(/^ ! \[rejected\] +HEAD -> feature \(fetch first\)$/m);
    expect(output).toContain('hint: Updates were rejected because the remote contains work that you do');
    expect(exitCode).toBe(1);

    const [exchange, ...more] = exchanges.splice(0);
    expect(more).toEqual([]);
    expect(await exchange?.outcome).toEqual({ exitCode: 0, hookError: undefined });
    const head = git(['rev-parse', 'HEAD'], work).trim();
    const commands = [
      { oldOid: ZERO, newOid: head, ref: 'refs/heads/main' },
      { oldOid: ZERO, newOid: head, ref: 'refs/heads/feature' },
    ];
    expect(exchange?.asked).toEqual([{ commands, pushOptions: ['ci.skip'], capabilities: ['push-options'] }]);
    expect(exchange?.heads.map((h) => [h.commands, h.pushOptions])).toEqual([[commands, ['ci.skip']]]);
    expect(exchange?.relayed).toBe(root !== undefined);
    expect(await settledLeftovers()).toEqual([]);
  });

  it('returns without asking when receive-pack never runs the hook (the 4-byte probe)', async () => {
    const exchange: Omit<Exchange, 'outcome'> = { asked: [], heads: [] };
    const child = startReceivePack(exchange);
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stdin.end('0000');
    expect(await child.outcome).toEqual({ exitCode: 0, hookError: undefined });
    expect(exchange.asked).toEqual([]);
    expect(Buffer.concat(output).toString()).toBe('');
    expect(await settledLeftovers()).toEqual([]);
  });

  it('fails every ref when decide fails, and still leaves no relay behind', async () => {
    decide = async () => {
      throw new Error('store unavailable');
    };
    const { exitCode, output } = await push('HEAD:refs/heads/main', 'HEAD:refs/heads/feature');

    expect(output).toContain('proc-receive exited abnormally');
    expect(output).toMatch(/^ ! \[remote rejected\] +HEAD -> main \(fail to run proc-receive hook\)$/m);
    expect(output).toMatch(/^ ! \[remote rejected\] +HEAD -> feature \(fail to run proc-receive hook\)$/m);
    expect(exitCode).toBe(1);
    const [exchange] = exchanges.splice(0);
    const outcome = await exchange?.outcome;
    expect(outcome?.exitCode).toBe(0);
    expect(outcome?.hookError).toBeInstanceOf(Error);
    expect(outcome?.hookError).toHaveProperty('message', 'store unavailable');
    expect(await settledLeftovers()).toEqual([]);
  });
});

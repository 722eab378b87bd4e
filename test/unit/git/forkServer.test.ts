/**
 * ForkServer: processes started by the helper behave as node's own children do (pipes, exit
 * codes, signals, `error` for a command that is not there), their output is never lost however
 * fast they exit, this process is not their parent, and a helper that dies takes its processes
 * with it and is replaced.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ForkServer, HELPER } from '../../../lib/git/ForkServer.js';
import type { GitChild, SpawnOptions } from '../../../lib/git/ProcessSpawner.js';
import { eventually } from '../../helpers/eventually.js';

const PIPES: SpawnOptions = { env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'pipe'] };

let server: ForkServer | undefined;

afterEach(() => {
  server?.close();
  server = undefined;
});

/** A ForkServer whose helper is ready. */
async function started(): Promise<ForkServer> {
  server = new ForkServer();
  await server.start();
  return server;
}

/** What the child wrote on `index` until it closed, and how it ended. */
async function finished(child: GitChild, input?: string) {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr?.on('data', (d: Buffer) => err.push(d));
  if (input !== undefined) child.stdin?.end(input);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (c: number | null, s: NodeJS.Signals | null) => resolve([c, s])),
  );
  return { code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString() };
}

/** proc(5): the fields after the command name, from the state (field 3) on. */
function statOf(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function parentOf(pid: number): number {
  return Number(statOf(pid)[1]);
}

/** Running, not gone and not a zombie waiting to be reaped. */
function running(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && statOf(pid)[0] !== 'Z';
}

describe('ForkServer', () => {
  it('starts its helper off the path of the first process, which node’s spawn starts meanwhile', async () => {
    server = new ForkServer();
    const spawner = server;
    const first = await spawner.spawn('sleep', ['5'], PIPES);
    expect(parentOf(first.pid as number)).toBe(process.pid);
    expect(spawner.helperPid).toBeGreaterThan(0);
    await spawner.start();
    const next = await spawner.spawn('sleep', ['5'], PIPES);
    expect(parentOf(next.pid as number)).toBe(spawner.helperPid);
    for (const child of [first, next]) {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('close', resolve));
    }
  });

  it('gives the process its pipes: stdin in, stdout out, and close with its exit code', async () => {
    const spawner = await started();
    const child = await spawner.spawn('cat', [], PIPES);
    expect(child.pid).toBeGreaterThan(0);
    const result = await finished(child, 'hello\n');
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.stdout.toString()).toBe('hello\n');
    expect(child.exitCode).toBe(0);
  });

  it('is not this process’s child: the helper forks it', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sleep', ['5'], PIPES);
    expect(parentOf(child.pid as number)).toBe(spawner.helperPid);
    expect(spawner.helperPid).not.toBe(process.pid);
    child.kill('SIGKILL');
    await finished(child);
  });

  it('reports a non-zero exit, with what the process wrote on stderr, as exit then close', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sh', ['-c', 'echo out; echo err >&2; exit 3'], PIPES);
    const events: string[] = [];
    child.once('exit', (code: number) => events.push(`exit ${code}`));
    const result = await finished(child);
    events.push('close');
    expect(events).toEqual(['exit 3', 'close']);
    expect(result).toMatchObject({ code: 3, stderr: 'err\n' });
    expect(result.stdout.toString()).toBe('out\n');
  });

  it('keeps every byte of a process that writes and exits at once', async () => {
    const spawner = await started();
    const big = await spawner.spawn('head', ['-c', '3000000', '/dev/zero'], PIPES);
    expect((await finished(big)).stdout.length).toBe(3_000_000);
    // Many small ones: the race between the handover and the exit goes both ways.
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) =>
        finished(await spawner.spawn('sh', ['-c', `echo ${i}; echo e${i} >&2`], PIPES)),
      ),
    );
    results.forEach((result, i) => {
      expect(result.stdout.toString()).toBe(`${i}\n`);
      expect(result.stderr).toBe(`e${i}\n`);
    });
  });

  it('hands over a process that exits at once, writing nothing, with the end of its output still to read', async () => {
    const spawner = await started();
    // It has exited before its last pipe arrives, often: its other pipes must not have been read
    // to their end meanwhile, or their `end` went to nobody and a reader waits for it for ever.
    for (let i = 0; i < 40; i++) {
      const child = await spawner.spawn('sh', ['-c', 'exit 3'], PIPES);
      expect([child.stdout?.readableEnded, child.stderr?.readableEnded]).toEqual([false, false]);
      const ended = new Promise((resolve) => child.stdout?.once('end', () => resolve('end')));
      child.stdout?.resume();
      expect(await ended).toBe('end');
      expect((await finished(child)).code).toBe(3);
    }
  });

  it('closes a process whose stderr nobody reads, once it exits, as node does', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sh', ['-c', 'echo out; echo unread >&2; exit 1'], PIPES);
    const out: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    expect(Buffer.concat(out).toString()).toBe('out\n');
  });

  it('does not read stdin: input a process left unread fails nothing, as node’s spawn', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sh', ['-c', 'sleep 0.2; exit 0'], PIPES);
    const errors: Error[] = [];
    child.stdin?.on('error', (error: Error) => errors.push(error));
    child.stdin?.write('never read\n');
    expect((await finished(child)).code).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual([]);
  });

  it('kills with the signal asked for', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sleep', ['30'], PIPES);
    expect(child.kill('SIGKILL')).toBe(true);
    expect(child.killed).toBe(true);
    expect(await finished(child)).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(child.kill('SIGTERM')).toBe(false);
  });

  it('emits error for a command that is not there, as node’s spawn does', async () => {
    const spawner = await started();
    const child = await spawner.spawn('narwal-no-such-command', [], PIPES);
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve));
    expect(error.code).toBe('ENOENT');
    expect(error.message).toContain('narwal-no-such-command');
  });

  it('hands over a fourth pipe both ways (receive-pack’s channel to its hook)', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sh', ['-c', 'echo ping >&3; read answer <&3; echo "got $answer"'], {
      ...PIPES,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const channel = child.stdio[3] as Duplex;
    channel.once('data', (d: Buffer) => channel.write(`${d.toString().trim()}-pong\n`));
    const result = await finished(child);
    expect(result.stdout.toString()).toBe('got ping-pong\n');
  });

  it('starts anything but pipes and ignore itself, with node’s spawn', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sleep', ['5'], { ...PIPES, stdio: ['ignore', 'pipe', 'inherit'] });
    expect(parentOf(child.pid as number)).toBe(process.pid);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
  });

  it('fails the processes of a helper that died, kills them, and starts a new helper', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sleep', ['30'], PIPES);
    const pid = child.pid as number;
    const failed = new Promise<Error>((resolve) => child.once('error', resolve));
    const helper = spawner.helperPid as number;
    process.kill(helper, 'SIGKILL');
    expect((await failed).message).toContain('stopped');
    expect(await eventually(() => !running(pid))).toBe(true);
    const next = await spawner.spawn('echo', ['again'], PIPES);
    expect(spawner.helperPid).not.toBe(helper);
    expect(spawner.helperPid).not.toBe(undefined);
    expect((await finished(next)).stdout.toString()).toBe('again\n');
    await spawner.start();
    const after = await spawner.spawn('sleep', ['5'], PIPES);
    expect(parentOf(after.pid as number)).toBe(spawner.helperPid);
    after.kill('SIGKILL');
    await finished(after);
  });

  it('waits for the processes running when it is closed, then stops the helper', async () => {
    const spawner = await started();
    const child = await spawner.spawn('sh', ['-c', 'read line; echo "$line"'], PIPES);
    const helper = spawner.helperPid as number;
    spawner.close();
    expect(running(helper)).toBe(true);
    const result = await finished(child, 'still served\n');
    expect(result.stdout.toString()).toBe('still served\n');
    expect(await eventually(() => !running(helper))).toBe(true);
  });

  it('outlives no node: killed while a pipe it sent waited for the node, it kills its processes and exits', async () => {
    // A node (plain JS) that starts the helper, asks it for a process with pipes, tells its pid and
    // the helper's, and stops itself before it can acknowledge the pipes; then it is killed.
    const node = spawn(
      process.execPath,
      [
        '-e',
        `const { spawn } = require('node:child_process');
const helper = spawn(process.execPath, ['-e', process.env.HELPER], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
helper.once('message', () => {
  helper.send({ t: 'spawn', id: 1, command: 'sleep', args: ['300'], cwd: undefined, env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'pipe'] });
  console.log(helper.pid);
  setTimeout(() => process.kill(process.pid, 'SIGSTOP'), 0);
});`,
      ],
      { env: { PATH: process.env.PATH, HELPER }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const helper = await new Promise<number>((resolve) =>
        node.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
      );
      expect(helper).toBeGreaterThan(0);
      const childOf = (pid: number) =>
        (
          readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
            .trim()
            .split(' ')
            .filter(Boolean) as string[]
        ).map(Number);
      expect(await eventually(async () => running(helper) && childOf(helper).length === 1)).toBe(true);
      const sleeper = childOf(helper)[0] as number;
      node.kill('SIGKILL');
      expect(await eventually(async () => !running(helper) && !running(sleeper), { withinMs: 5000 })).toBe(
        true,
      );
    } finally {
      node.kill('SIGKILL');
    }
  });

  it('fails a process the helper does not answer in time, and the helper kills it once it goes on', async () => {
    server = new ForkServer({ answerMs: 300 });
    await server.start();
    const helper = server.helperPid as number;
    const childrenOfHelper = () => readFileSync(`/proc/${helper}/task/${helper}/children`, 'utf8').trim();
    // A helper that takes the request and never answers it, as one did in chaos runs.
    process.kill(helper, 'SIGSTOP');
    try {
      const child = await server.spawn('sleep', ['30'], PIPES);
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      expect(error.message).toBe('the git helper did not start sleep within 300 ms');
    } finally {
      process.kill(helper, 'SIGCONT');
    }
    // Going on, it starts the process it was asked for, then kills it as it was told to.
    expect(await eventually(() => childrenOfHelper() === '')).toBe(true);
    const next = await server.spawn('echo', ['ok'], PIPES);
    expect((await finished(next)).stdout.toString()).toBe('ok\n');
  });
});

/**
 * GitRunner against the real git: background work (checkpoint repacks, multi-pack-indexes) runs
 * at a lower CPU priority, and so do the processes git starts for it; requests keep the normal one.
 * Processes started ahead (spawnReady) become the git asked for, with its last argument and
 * everything written after it on stdin, and take their budget slot only when handed out; so do
 * those started ahead whole (startAhead), which are handed out once, or not at all once dead.
 */

import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GitBudget } from '../../lib/git/GitBudget.js';
import { GitRunner } from '../../lib/git/GitRunner.js';
import type { GitChild } from '../../lib/git/ProcessSpawner.js';

async function runner(budget = new GitBudget(4, 0)): Promise<GitRunner> {
  return new GitRunner({ budget, home: await mkdtemp(join(tmpdir(), 'narwal-home-')) });
}

/** What `child` wrote and how it ended, once it did. */
async function outputOf(child: GitChild): Promise<{ code: number | null; stdout: string }> {
  const out: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  const code = await new Promise<number | null>((done) => child.once('close', done));
  return { code, stdout: Buffer.concat(out).toString('utf8') };
}

/** The processes this one started that still run. */
async function children(): Promise<number[]> {
  const text = await readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8');
  return text.trim() === '' ? [] : text.trim().split(' ').map(Number);
}

/** The nice values of a git process that runs a shell alias, and of the shell it started. */
async function niceOf(git: GitRunner, background: boolean): Promise<{ git: number; shell: number }> {
  const child = await git.spawn(['-c', 'alias.nap=!sleep 0.5', 'nap'], { background });
  const pid = child.pid ?? 0;
  const exited = new Promise((done) => child.once('close', done));
  let shell: number | undefined;
  for (let i = 0; i < 100 && shell === undefined; i++) {
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
    const first = Number(children.trim().split(' ')[0]);
    if (first > 0) shell = getPriority(first);
    else await new Promise((r) => setTimeout(r, 10));
  }
  const own = getPriority(pid);
  child.kill();
  await exited;
  if (shell === undefined) throw new Error('git started no shell for the alias');
  return { git: own, shell };
}

describe('GitRunner', () => {
  it('runs background git at a lower priority, inherited by what git starts', async () => {
    const git = await runner();
    const base = getPriority();
    expect(await niceOf(git, false)).toEqual({ git: base, shell: base });
    const lowered = await niceOf(git, true);
    expect(lowered.git).toBeGreaterThan(base);
    expect(lowered.shell).toBe(lowered.git);
  });
});

describe('GitRunner.spawnReady', () => {
  const blobOf = (text: string) =>
    execFileSync('git', ['hash-object', '--stdin'], { input: text }).toString('utf8').trim();

  /** `git hash-object --stdin <file>`: the hash of what came on stdin, then of the file. */
  async function hashBoth(git: GitRunner, file: string, input: string): Promise<GitChild> {
    const child = await git.spawnReady(['hash-object', '--stdin'], file);
    child.stdin?.end(input);
    return child;
  }

  it('becomes the git asked for, with its last argument and the input after it, and holds a slot only then', async () => {
    const budget = new GitBudget(4, 0);
    const git = await runner(budget);
    const file = join(await mkdtemp(join(tmpdir(), 'narwal-ready-')), 'with space\ttab');
    await writeFile(file, 'in the file\n');
    try {
      // The first call spawns; once it is over, one is started ahead, waiting without a slot.
      const first = await outputOf(await hashBoth(git, file, 'first\n'));
      expect(first).toEqual({ code: 0, stdout: `${blobOf('first\n')}\n${blobOf('in the file\n')}\n` });
      const [waiting] = await readyShells(1);
      expect(budget.running).toBe(0);
      const child = await hashBoth(git, file, 'second, a longer input\n'.repeat(5000));
      expect(child.pid).toBe(waiting);
      expect(budget.running).toBe(1);
      expect(await outputOf(child)).toEqual({
        code: 0,
        stdout: `${blobOf('second, a longer input\n'.repeat(5000))}\n${blobOf('in the file\n')}\n`,
      });
      expect(budget.running).toBe(0);
    } finally {
      git.close();
    }
  });

  it('spawns anew when the one started ahead died, and stops those waiting on close', async () => {
    const git = await runner();
    const file = join(await mkdtemp(join(tmpdir(), 'narwal-ready-')), 'f');
    await writeFile(file, 'x\n');
    await outputOf(await hashBoth(git, file, 'a\n'));
    const [dead] = await readyShells(1);
    process.kill(dead ?? 0, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    const child = await hashBoth(git, file, 'b\n');
    expect(child.pid).not.toBe(dead);
    expect((await outputOf(child)).stdout).toBe(`${blobOf('b\n')}\n${blobOf('x\n')}\n`);
    await readyShells(1);
    git.close();
    await readyShells(0);
  });
});

describe('GitRunner.startAhead', () => {
  const blobOf = (text: string) =>
    execFileSync('git', ['hash-object', '--stdin'], { input: text }).toString('utf8').trim();

  it('runs before it is taken, holds a slot only once taken, and is taken once', async () => {
    const budget = new GitBudget(4, 0);
    const git = await runner(budget);
    const dir = await mkdtemp(join(tmpdir(), 'narwal-ahead-'));
    await writeFile(join(dir, 'f'), 'in the file\n');
    try {
      const ahead = git.startAhead(['hash-object', '--stdin', 'f'], { cwd: dir });
      if (ahead === null) throw new Error('not started');
      // Started now, waiting for its input, and counted nowhere yet.
      expect(await gitChildren(1)).toHaveLength(1);
      expect(budget.running).toBe(0);
      const child = await ahead.take('someone');
      if (child === null) throw new Error('not handed out');
      expect(budget.running).toBe(1);
      child.stdin?.end('the input\n');
      expect(await outputOf(child)).toEqual({
        code: 0,
        stdout: `${blobOf('the input\n')}\n${blobOf('in the file\n')}\n`,
      });
      expect(budget.running).toBe(0);
      await expect(ahead.take()).rejects.toThrow(/taken once/);
    } finally {
      git.close();
    }
  });

  it('is not handed out once dead, is stopped by discard, and those not taken by close', async () => {
    const budget = new GitBudget(4, 0);
    const git = await runner(budget);
    const dir = await mkdtemp(join(tmpdir(), 'narwal-ahead-'));
    const dead = git.startAhead(['hash-object', '--stdin'], { cwd: dir });
    const [pid] = await gitChildren(1);
    process.kill(pid ?? 0, 'SIGKILL');
    // Reaped, not only gone from the git processes: a killed child is a zombie, with no command
    // line, until this process has waited for it and learned that it died.
    await reaped(pid ?? 0);
    expect(await dead?.take()).toBeNull();
    expect(budget.running).toBe(0);
    git.startAhead(['hash-object', '--stdin'], { cwd: dir })?.discard();
    await gitChildren(0);
    git.startAhead(['hash-object', '--stdin'], { cwd: dir });
    git.startAhead(['hash-object', '--stdin'], { cwd: dir });
    await gitChildren(2);
    git.close();
    await gitChildren(0);
    // A closed runner starts nothing more.
    expect(git.startAhead(['hash-object', '--stdin'], { cwd: dir })).toBeNull();
  });
});

/** Waits until exactly `count` git processes run under this process; their pids. */
async function gitChildren(count: number): Promise<number[]> {
  let found: number[] = [];
  for (let i = 0; i < 200; i++) {
    found = [];
    for (const pid of await children()) {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.startsWith('git\0')) found.push(pid);
    }
    if (found.length === count) return found;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`expected ${count} git processes, found ${found.length}`);
}

/** Waits until `pid` is no child of this process any more: it exited and was waited for. */
async function reaped(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (!(await children()).includes(pid)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`process ${pid} was never reaped`);
}

/** Waits until exactly `count` shells started ahead run under this process; their pids. */
async function readyShells(count: number): Promise<number[]> {
  let found: number[] = [];
  for (let i = 0; i < 200; i++) {
    found = [];
    for (const pid of await children()) {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes('read -r last')) found.push(pid);
    }
    if (found.length === count) return found;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`expected ${count} shells waiting, found ${found.length}`);
}

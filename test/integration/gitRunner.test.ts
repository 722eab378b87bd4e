/**
 * GitRunner against the real git: background work (checkpoint repacks, multi-pack-indexes) runs
 * at a lower CPU priority, and so do the processes git starts for it; requests keep the normal one.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GitBudget } from '../../lib/git/GitBudget.js';
import { GitRunner } from '../../lib/git/GitRunner.js';

async function runner(): Promise<GitRunner> {
  return new GitRunner({
    budget: new GitBudget(4, 0),
    home: await mkdtemp(join(tmpdir(), 'narwal-home-')),
  });
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

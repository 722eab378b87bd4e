/**
 * Hooks live in the shared data directory, and every node installs them at start-up while its
 * siblings' receive-packs execute them. A start must never fail because a hook is in use
 * (ETXTBSY), and a running git must never see a truncated or half-written script (an empty
 * proc-receive exits without a report: "proc-receive failed to report status").
 */
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installHooks } from '../../lib/git/hookScript.js';
import { installPackCacheHook } from '../../lib/git/packCacheHook.js';
import { type GitOutput, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess, startProcess, tempDataDir } from '../helpers/narwalServer.js';

let home: string;
beforeAll(async () => {
  home = await makeHome();
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/**
 * Pushes a new commit on `branch` through `node()`, at least `least` times and until `until`
 * settles; every result, in order.
 */
async function pushLoop(
  node: () => RunningNarwal,
  repo: string,
  branch: string,
  least: number,
  until: Promise<unknown> = Promise.resolve(),
): Promise<GitOutput[]> {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const work = await workRepo(home, 1, branch);
  const results: GitOutput[] = [];
  for (let i = 0; !done || i < least; i++) {
    await gitOk(['commit', '-q', '--allow-empty', '-m', `${branch} ${i}`], { cwd: work, home });
    results.push(await git(['push', `${node().authUrl}/${repo}.git`, `HEAD:${branch}`], { cwd: work, home }));
  }
  return results;
}

function failures(results: readonly GitOutput[]): string[] {
  return results.filter((r) => r.code !== 0).map((r) => r.stderr.trim());
}

describe('installing hooks while siblings push through them', () => {
  it('restarts a node 30 times while two siblings push: every start succeeds, no push fails', async () => {
    const dataDir = await tempDataDir();
    const [a, b] = await Promise.all([startProcess({ dataDir }), startProcess({ dataDir })]);
    const starts: string[] = [];
    try {
      const seed = await workRepo(home, 1, 'seed');
      await gitOk(['push', `${a.authUrl}/hooks/restart.git`, 'main'], { cwd: seed, home });
      let restarts: () => void = () => {};
      const finished = new Promise<void>((done) => {
        restarts = done;
      });
      const pushers = Promise.all([
        pushLoop(() => a, 'hooks/restart', 'via-a', 3, finished),
        pushLoop(() => b, 'hooks/restart', 'via-b', 3, finished),
      ]);
      for (let i = 0; i < 30; i++) {
        try {
          const c = await startProcess({ dataDir });
          await c.stop();
          starts.push('ok');
        } catch (error) {
          starts.push(error instanceof Error ? error.message : String(error));
        }
      }
      restarts();
      const [viaA, viaB] = await pushers;
      expect(starts.filter((s) => s !== 'ok')).toEqual([]);
      expect([...failures(viaA), ...failures(viaB)]).toEqual([]);
      expect(viaA.length + viaB.length).toBeGreaterThan(6);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('never lets a push see a partial hook while installers rewrite the hooks without pause', async () => {
    const dataDir = await tempDataDir();
    const node = await startInProcess({ dataDir });
    const hooks = join(dataDir, 'hooks');
    try {
      const seed = await workRepo(home, 1, 'seed');
      await gitOk(['push', `${node.authUrl}/hooks/hammer.git`, 'main'], { cwd: seed, home });
      // As many starting nodes as this process can run, back to back.
      let stop = false;
      const installErrors: string[] = [];
      const installer = (async () => {
        while (!stop) {
          try {
            await installHooks(hooks);
            await installPackCacheHook(hooks);
          } catch (error) {
            installErrors.push(error instanceof Error ? error.message : String(error));
          }
        }
      })();
      const pushers = Promise.all([
        pushLoop(() => node, 'hooks/hammer', 'one', 25),
        pushLoop(() => node, 'hooks/hammer', 'two', 25),
      ]);
      const results = (await pushers).flat();
      stop = true;
      await installer;
      expect(failures(results)).toEqual([]);
      expect([...new Set(installErrors)]).toEqual([]);
    } finally {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('leaves identical hook files alone', async () => {
    const dataDir = await tempDataDir();
    try {
      const hooks = await installHooks(join(dataDir, 'hooks'));
      const packHook = await installPackCacheHook(hooks);
      const before = await Promise.all([stat(join(hooks, 'proc-receive')), stat(packHook)]);
      await installHooks(hooks);
      await installPackCacheHook(hooks);
      const after = await Promise.all([stat(join(hooks, 'proc-receive')), stat(packHook)]);
      expect(after.map((s) => [s.ino, s.mtimeMs, s.mode & 0o777])).toEqual(
        before.map((s) => [s.ino, s.mtimeMs, 0o755]),
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('puts the hooks back when they are deleted under a running node', async () => {
    const dataDir = await tempDataDir();
    const node = await startInProcess({ dataDir });
    try {
      const work = await workRepo(home, 1, 'gone');
      await gitOk(['push', `${node.authUrl}/hooks/gone.git`, 'main'], { cwd: work, home });
      await rm(join(dataDir, 'hooks'), { recursive: true, force: true });
      await gitOk(['commit', '-q', '--allow-empty', '-m', 'after the hooks went'], { cwd: work, home });
      const pushed = await git(['push', `${node.authUrl}/hooks/gone.git`, 'main'], { cwd: work, home });
      expect(pushed.stderr).not.toMatch(/proc-receive|cannot find hook/);
      expect(pushed.code).toBe(0);
      // A full clone runs the pack cache hook.
      await rm(join(dataDir, 'hooks'), { recursive: true, force: true });
      const copy = join(dataDir, 'copy');
      const cloned = await git(['clone', `${node.authUrl}/hooks/gone.git`, copy], { home });
      expect(cloned.stderr).not.toMatch(/pack-objects/);
      expect(cloned.code).toBe(0);
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: copy, home })).trim()).toBe(
        (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim(),
      );
    } finally {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

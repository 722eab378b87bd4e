/**
 * The multi-pack-index of a repository's shared object store: written by the real git once
 * enough packs are outside it, left alone below that, valid for every pack, and kept current by
 * a server taking push after push (each push is one more pack).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { App } from '../../lib/app.js';
import { multiPackIndexer } from '../../lib/cache/multiPackIndex.js';
import { GitBudget } from '../../lib/git/GitBudget.js';
import { GitRunner } from '../../lib/git/GitRunner.js';
import { silentLogger } from '../../lib/log.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { livePaths } from '../helpers/liveTree.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const run = promisify(execFile);
let home: string;
let dir: string;

beforeAll(async () => {
  home = await makeHome();
  dir = await mkdtemp(join(tmpdir(), 'narwal-midx-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A bare repository with `count` packs, one per commit, and the work tree they came from. */
async function repoWithPacks(name: string, count: number): Promise<{ repo: string; work: string }> {
  const repo = join(dir, name);
  await run('git', ['init', '-q', '--bare', repo]);
  const work = await workRepo(home, 0, name);
  for (let i = 0; i < count; i++) await addPack(repo, work, i);
  return { repo, work };
}

async function addPack(repo: string, work: string, i: number): Promise<void> {
  const head = await commitFile(work, home, `f${i}.txt`, `${i}\n`);
  const range = i === 0 ? head : `${head}^..${head}`;
  const { stdout: objects } = await run('git', ['-C', work, 'rev-list', '--objects', range]);
  await new Promise<void>((done, fail) => {
    const child = execFile(
      'git',
      ['-C', work, 'pack-objects', '-q', join(repo, 'objects', 'pack', 'pack')],
      (e) => (e ? fail(e) : done()),
    );
    child.stdin?.end(
      objects
        .split('\n')
        .map((l) => l.split(' ')[0])
        .join('\n'),
    );
  });
  await run('git', ['--git-dir', repo, 'update-ref', 'refs/heads/main', head]);
}

const packsIn = async (repo: string) =>
  (await readdir(join(repo, 'objects', 'pack'))).filter((n) => n.endsWith('.idx')).length;

describe('multi-pack-index', () => {
  it('is written once enough packs are outside it, and covers every pack', async () => {
    const { repo, work } = await repoWithPacks('many', 18);
    const git = new GitRunner({ budget: new GitBudget(4, 0), home });
    const written: number[] = [];
    let notify: () => void = () => {};
    const index = multiPackIndexer({
      git,
      gitDir: async () => repo,
      logger: silentLogger,
      onWritten: (_dir, packs) => {
        written.push(packs);
        notify();
      },
    });
    const next = () => new Promise<void>((done) => (notify = done));
    const first = next();
    index(join(repo, 'objects'));
    await first;
    expect(written).toEqual([18]);
    await run('git', [
      '--git-dir',
      repo,
      'multi-pack-index',
      `--object-dir=${join(repo, 'objects')}`,
      'verify',
    ]);
    // Below the threshold again: nothing is rewritten.
    await addPack(repo, work, 100);
    index(join(repo, 'objects'));
    await new Promise((done) => setTimeout(done, 500));
    expect(written).toEqual([18]);
    expect(await packsIn(repo)).toBe(19);
    // git still finds every object, in and outside the index.
    await run('git', ['--git-dir', repo, 'fsck', '--no-dangling']);
  });

  describe('in a server taking pushes', () => {
    let server: RunningNarwal & { app: App };
    beforeAll(async () => {
      server = await startInProcess();
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('appears in the shared object store after enough pushes, and clones stay whole', async () => {
      const work = await workRepo(home, 1, 'pushes');
      const url = `${server.authUrl}/team/many-packs.git`;
      for (let i = 0; i < 20; i++) {
        await commitFile(work, home, `p${i}.txt`, `${i}\n`);
        await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
      }
      const cache = join(server.dataDir, 'cache');
      const find = async () => (await livePaths(cache)).filter((n) => n.endsWith('pack/multi-pack-index'));
      await vi.waitFor(async () => expect(await find()).toHaveLength(1), { timeout: 20_000, interval: 100 });
      const clone = join(dir, 'clone.git');
      await gitOk(['clone', '-q', '--bare', url, clone], { home });
      await gitOk(['--git-dir', clone, 'fsck', '--strict'], { home });
      const objects = join(cache, (await find())[0] as string, '..', '..');
      await run('git', ['--git-dir', clone, 'multi-pack-index', `--object-dir=${objects}`, 'verify']);
    });
  });
});

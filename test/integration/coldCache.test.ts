/**
 * A cold cache: refs are advertised from the index alone (no pack downloaded), the packs are
 * downloaded by the request that needs objects, which reports progress on git's sideband, and
 * checkpoints keep every object published, reachable or not.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;

beforeAll(async () => {
  server = await startInProcess({ env: { NARWAL_CHECKPOINT_EVERY: '1000' } });
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
});

/** Loses the whole shared cache, as an operator (or EFS trouble) might at any moment. */
async function wipeCache(): Promise<void> {
  await server.app.idle();
  await rm(join(server.dataDir, 'cache', 'repos'), { recursive: true, force: true });
}

async function cachedPacks(repo: string): Promise<string[]> {
  const root = join(server.dataDir, 'cache', 'repos', `${repo}.git`);
  const packs: string[] = [];
  for (const incarnation of await readdir(root).catch(() => [] as string[])) {
    const dir = join(root, incarnation, 'objects', 'pack');
    packs.push(...(await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.pack')));
  }
  return packs;
}

/** A repository with `pushes` entries, an annotated tag among them. */
async function seeded(repo: string, pushes: number): Promise<{ work: string; url: string }> {
  const work = await workRepo(home, 1);
  const url = `${server.authUrl}/${repo}.git`;
  await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
  await gitOk(['tag', '-a', 'v1', '-m', 'release 1'], { cwd: work, home });
  await gitOk(['push', '-q', url, 'v1'], { cwd: work, home });
  for (let i = 2; i < pushes; i++) {
    await commitFile(work, home, `f${i}.txt`, `${i}\n`);
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
  }
  return { work, url };
}

describe('a cold cache', () => {
  it('answers ls-remote from the log alone, peeled tags included, downloading no pack', async () => {
    const repo = 'cold/ls-remote';
    const { work, url } = await seeded(repo, 4);
    await wipeCache();
    for (const version of ['0', '2']) {
      const listed = await gitOk(['-c', `protocol.version=${version}`, 'ls-remote', url], { home });
      const expected = await gitOk(['show-ref', '--dereference'], { cwd: work, home });
      const lines = (text: string) =>
        text
          .trim()
          .split('\n')
          .map((l) => l.replace(/\s+/, ' '))
          .filter((l) => !l.endsWith(' HEAD'))
          .sort();
      expect(lines(listed)).toEqual(lines(expected));
      expect(listed).toMatch(/refs\/tags\/v1\^\{\}/);
    }
    expect(await cachedPacks(repo)).toEqual([]);
  });

  for (const version of ['2', '0']) {
    it(`reports replay progress on the sideband during a cold clone (protocol v${version})`, async () => {
      const repo = `cold/clone-v${version}`;
      const { work, url } = await seeded(repo, 6);
      await wipeCache();
      const dir = join(await mkdtemp(join(tmpdir(), 'narwal-cold-clone-')), 'c');
      const out = await git(['-c', `protocol.version=${version}`, 'clone', '--progress', url, dir], { home });
      expect(out.code, out.stderr).toBe(0);
      expect(out.stderr).toMatch(/remote: narwal: replaying \d+\/6 entries/);
      expect(out.stderr).toMatch(/remote: narwal: replaying 6\/6 entries, done\./);
      expect(out.stderr).toMatch(/remote: narwal: repository ready in \d+ ms/);
      expect(await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).toBe(
        await gitOk(['rev-parse', 'HEAD'], { cwd: work, home }),
      );
      expect((await gitOk(['tag'], { cwd: dir, home })).trim()).toBe('v1');
      await gitOk(['fsck', '--strict'], { cwd: dir, home });
      // Warm now: a second clone reports nothing of narwal's.
      const again = await git(['clone', '--progress', url, `${dir}-2`], { home });
      expect(again.code).toBe(0);
      expect(again.stderr).not.toMatch(/narwal:/);
    });
  }

  it('reports progress to a push into a cold cache, and a quiet push lands without it', async () => {
    const repo = 'cold/push';
    const { work, url } = await seeded(repo, 5);
    await wipeCache();
    const head = await commitFile(work, home, 'late.txt', 'late\n');
    const pushed = await git(['push', '--progress', url, 'main'], { cwd: work, home });
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stderr).toMatch(/remote: narwal: replaying \d+\/5 entries, done\./);
    expect((await gitOk(['ls-remote', url, 'refs/heads/main'], { home })).split(/\s/)[0]).toBe(head);

    await wipeCache();
    const quietHead = await commitFile(work, home, 'quiet.txt', 'quiet\n');
    const quiet = await git(['push', '-q', url, 'main'], { cwd: work, home });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    expect((await gitOk(['ls-remote', url, 'refs/heads/main'], { home })).split(/\s/)[0]).toBe(quietHead);
    const loaded = await server.app.wal.readIndexFully(repo);
    expect(loaded?.index.seq).toBe(7);
  });

  it('rebuilds from a checkpoint that kept objects no ref reaches any more', async () => {
    const repo = 'cold/unreachable';
    const { work, url } = await seeded(repo, 3);
    await gitOk(['checkout', '-q', '-b', 'side'], { cwd: work, home });
    const side = await commitFile(work, home, 'side.txt', 'side\n');
    await gitOk(['push', '-q', url, 'side'], { cwd: work, home });
    await gitOk(['push', '-q', url, ':side'], { cwd: work, home });
    const made = await server.app.checkpointer.make(repo);
    expect(made?.seq).toBe(5);
    await wipeCache();
    const dir = join(await mkdtemp(join(tmpdir(), 'narwal-cold-cp-')), 'c');
    const out = await git(['clone', '--progress', url, dir], { home });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toMatch(/remote: narwal: downloading the checkpoint of entry 5/);
    // The cache was built from the checkpoint alone, and it still has the deleted branch's commit.
    expect(await cachedPacks(repo)).toEqual(made?.packs.map((p) => `${p}.pack`));
    const loaded = await server.app.wal.readIndexFully(repo);
    if (!loaded) throw new Error('no index');
    const generation = await server.app.cache.leaseComplete(server.app.cache.target(loaded));
    try {
      const type = await gitOk(['--git-dir', generation.dir, 'cat-file', '-t', side], { home });
      expect(type.trim()).toBe('commit');
    } finally {
      await generation.release();
    }
  });

  it('gives a build the cache is deleted under every time up as retryable, and builds once it is left alone', async () => {
    // A second node on a store that deletes the whole cache as each pack download starts.
    const dataDir = await tempDataDir();
    const inner = new FsObjectStore(join(dataDir, 'store'));
    let deleting = false;
    let deleted = 0;
    const store = new Proxy(inner, {
      get(target, property) {
        if (property === 'getStream')
          return async (key: string, options?: Parameters<FsObjectStore['getStream']>[1]) => {
            const stream = await target.getStream(key, options);
            if (deleting && key.endsWith('.pack')) {
              await rm(join(dataDir, 'cache', 'repos'), { recursive: true, force: true });
              deleted++;
            }
            return stream;
          };
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const node = await startInProcess({ dataDir, store });
    try {
      const work = await workRepo(home, 2);
      const url = `${node.authUrl}/cold/deleted-under.git`;
      await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
      await node.app.idle();
      await rm(join(dataDir, 'cache', 'repos'), { recursive: true, force: true });
      deleting = true;
      const dir = join(await mkdtemp(join(tmpdir(), 'narwal-cold-deleted-')), 'c');
      const failed = await git(['clone', url, dir], { home });
      expect(failed.code).not.toBe(0);
      expect(deleted).toBeGreaterThanOrEqual(3);
      expect(failed.stderr).toMatch(
        /narwal: the server's cache of the repository changed while it was prepared; retry/,
      );
      expect(failed.stderr).not.toMatch(/internal error/);
      // A quiet push waits for the same build without a sideband: git is told why, beside its ref.
      const before = await gitOk(['ls-remote', url, 'refs/heads/main'], { home });
      await commitFile(work, home, 'refused.txt', 'refused\n');
      const refused = await git(['push', '-q', url, 'main'], { cwd: work, home });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(
        /\[remote rejected\] main -> main \(narwal: the server's cache of the repository changed during the push, which was not recorded; retry the push\)/,
      );
      deleting = false;
      expect(await gitOk(['ls-remote', url, 'refs/heads/main'], { home })).toBe(before);
      await rm(dir, { recursive: true, force: true });
      await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
      await gitOk(['clone', '-q', url, dir], { home });
      expect(await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).toBe(
        await gitOk(['rev-parse', 'HEAD'], { cwd: work, home }),
      );
    } finally {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('rebuilds a generation a deletion left half done, without its packed-refs, and serves from it', async () => {
    const repo = 'cold/half-deleted';
    const { work, url } = await seeded(repo, 2);
    const clone = `${work}-clone`;
    await gitOk(['clone', '-q', url, clone], { home });
    const want = await commitFile(work, home, 'later.txt', 'later\n');
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
    await server.app.idle();
    // An interrupted `rm -r` of the cache: every generation loses its packed-refs, and keeps the
    // rest (its COMPLETE mark among it).
    const root = join(server.dataDir, 'cache', 'repos', `${repo}.git`);
    let halved = 0;
    for (const incarnation of await readdir(root)) {
      const gens = join(root, incarnation, 'gens');
      for (const name of await readdir(gens)) {
        if (name.startsWith('.')) continue;
        await rm(join(gens, name, 'packed-refs'), { force: true });
        halved++;
      }
    }
    expect(halved).toBeGreaterThan(0);
    // Ref advertisements (v0, and receive-pack's) lease the generation's refs alone.
    expect(await gitOk(['-c', 'protocol.version=0', 'ls-remote', url, 'main'], { home })).toContain(want);
    // A fetch with haves goes to git, on a complete generation.
    await gitOk(['fetch', '-q', 'origin'], { cwd: clone, home });
    expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone, home })).trim()).toBe(want);
    await gitOk(['fsck', '--no-dangling'], { cwd: clone, home });
  });
});

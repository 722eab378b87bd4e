/**
 * Full clones through narwal use the pack cache: the first clone of a generation leaves its pack
 * in the generation, identical clones (one after another or all at once) are served from it and
 * are complete, fetches with haves are packed as usual and leave nothing, shallow and partial
 * clones (no haves either) leave their packs too, and
 * NARWAL_PACK_CACHE=0 turns it off.
 */
import { execFile } from 'node:child_process';
import { truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { PACK_CACHE_DIR } from '../../lib/git/packCacheHook.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { livePaths } from '../helpers/liveTree.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const run = promisify(execFile);
let home: string;

/** Every cached pack under the cache directory, as paths relative to it. */
async function cachedPacks(server: RunningNarwal): Promise<string[]> {
  const root = join(server.dataDir, 'cache');
  const names = await livePaths(root);
  return names.filter((n) => n.split('/').at(-2) === PACK_CACHE_DIR && n.endsWith('.pack')).sort();
}

async function cloneBare(url: string, dir: string, extra: string[] = []): Promise<string> {
  await gitOk(['clone', '--quiet', '--bare', ...extra, url, dir], { home });
  return dir;
}

async function refsOf(gitDir: string): Promise<string> {
  return (await run('git', ['--git-dir', gitDir, 'show-ref'])).stdout;
}

beforeAll(async () => {
  home = await makeHome();
});

describe('pack cache', () => {
  let server: RunningNarwal & { app: App };
  let work: string;
  let url: string;

  beforeAll(async () => {
    server = await startInProcess();
    work = await workRepo(home, 5, 'pc');
    await gitOk(['tag', '-a', 'v1', '-m', 'one'], { cwd: work, home });
    url = `${server.authUrl}/team/cached.git`;
    await gitOk(['push', '--quiet', url, 'main', 'v1'], { cwd: work, home });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('keeps the first full clone pack and serves the next clones from it', async () => {
    const first = await cloneBare(url, join(home, 'c1.git'));
    const packs = await cachedPacks(server);
    expect(packs).toHaveLength(1);
    const second = await cloneBare(url, join(home, 'c2.git'));
    expect(await cachedPacks(server)).toEqual(packs);
    expect(await refsOf(second)).toBe(await refsOf(first));
    await gitOk(['--git-dir', second, 'fsck', '--strict'], { home });
    // The second read the kept file whole and keeps its answer in memory: emptied, the file no
    // longer matters to the same clone...
    const [pack] = packs;
    if (!pack) throw new Error('no cached pack');
    await truncate(join(server.dataDir, 'cache', pack), 0);
    const third = await cloneBare(url, join(home, 'c3.git'));
    expect(await refsOf(third)).toBe(await refsOf(first));
    await gitOk(['--git-dir', third, 'fsck', '--strict'], { home });
    // ...but a clone framed otherwise (protocol v0) is answered from the file, which breaks it.
    const v0 = ['-c', 'protocol.version=0', 'clone', '--quiet', '--bare', url, join(home, 'c4.git')];
    expect((await git(v0, { home })).code).not.toBe(0);
  });

  it('serves many identical clones at once from one pack, each complete', async () => {
    await commitFile(work, home, 'more.txt', 'a new generation\n');
    await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
    const before = await cachedPacks(server);
    const dirs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => cloneBare(url, join(home, `storm-${i}.git`))),
    );
    const after = await cachedPacks(server);
    expect(after.filter((p) => !before.includes(p))).toHaveLength(1);
    const expected = await refsOf(dirs[0] as string);
    for (const dir of dirs) {
      expect(await refsOf(dir)).toBe(expected);
      await gitOk(['--git-dir', dir, 'fsck', '--strict'], { home });
    }
  });

  it('packs fetches with haves as usual, keeping nothing for them, and keeps shallow and partial clones', async () => {
    const clone = join(home, 'fetcher');
    await gitOk(['clone', '--quiet', url, clone], { home });
    await commitFile(work, home, 'again.txt', 'another generation\n');
    await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
    const before = await cachedPacks(server);
    await gitOk(['fetch', '--quiet', 'origin'], { cwd: clone, home });
    const head = (await gitOk(['rev-parse', 'origin/main'], { cwd: clone, home })).trim();
    expect(head).toBe((await gitOk(['rev-parse', 'main'], { cwd: work, home })).trim());
    expect(await cachedPacks(server)).toEqual(before);
    // No haves: the answer depends on the generation and the request alone, so it is kept.
    const shallow = join(home, 'shallow');
    await gitOk(['clone', '--quiet', '--depth', '1', url, shallow], { home });
    await gitOk(['clone', '--quiet', '--filter=blob:none', '--no-checkout', url, join(home, 'partial')], {
      home,
    });
    expect(await cachedPacks(server)).toHaveLength(before.length + 2);
  });
});

describe('pack cache turned off', () => {
  it('keeps nothing with NARWAL_PACK_CACHE=0', async () => {
    const server = await startInProcess({ env: { NARWAL_PACK_CACHE: '0' } });
    try {
      const work = await workRepo(home, 2, 'off');
      const url = `${server.authUrl}/team/uncached.git`;
      await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
      await cloneBare(url, join(home, 'off-1.git'));
      await cloneBare(url, join(home, 'off-2.git'));
      expect(await cachedPacks(server)).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});

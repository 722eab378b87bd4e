/**
 * The generation a push is received against. After a push the node completes the next generation
 * in the background; the push after it need not wait for that: the object store already holds the
 * packs the node adopted, so a slightly older complete generation serves, as long as the store
 * holds the packs of every entry since.
 */
import { access, readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { gensDir, incarnationDir, objectsDir } from '../../lib/cache/layout.js';
import type { LoadedIndex } from '../../lib/wal/types.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
});

async function settled(repo: string): Promise<LoadedIndex> {
  const loaded = await server.app.wal.readIndexFully(repo);
  if (!loaded) throw new Error(`no ${repo}`);
  // Reading completes the generation: the background prewarm is over (or done here).
  await (await server.app.cache.leaseComplete(server.app.cache.target(loaded))).release();
  return loaded;
}

function dirs(loaded: LoadedIndex) {
  const incarnation = incarnationDir(server.app.config.cacheDir, loaded.index.repo, loaded.index.created);
  return { gens: gensDir(incarnation), packs: join(objectsDir(incarnation), 'pack') };
}

describe('the generation a push is received against', () => {
  it("is an older complete one while the newest is still being completed, if the store holds the newer entries' packs", async () => {
    const repo = 'base/near';
    const work = await workRepo(home, 1);
    await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const first = await settled(repo);
    await commitFile(work, home, 'two.txt', '2\n');
    await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const second = await settled(repo);
    const { gens, packs } = dirs(second);
    const cache = server.app.cache;
    // As if the prewarm of the second push had not finished: its generation is not there yet.
    await rm(join(gens, cache.target(second).name), { recursive: true, force: true });
    const near = await cache.nearlyComplete(cache.target(second));
    expect(near?.name).toBe(cache.target(first).name);
    await near?.release();

    // A push now is received against it, and lands, without completing the generation it skipped.
    const head = await commitFile(work, home, 'three.txt', '3\n');
    await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const third = await settled(repo);
    expect((await server.app.wal.allRefs(third.index)).get('refs/heads/main')?.oid).toBe(head);
    expect(await readdir(gens)).not.toContain(cache.target(second).name);

    // Without the packs of an entry since, the older generation would not do.
    await rm(join(gens, cache.target(third).name), { recursive: true, force: true });
    const [entry] = await server.app.wal.itemsAfter(third.index, second.index.seq);
    const pack = entry?.packs[0];
    if (!pack) throw new Error('the third push stored no pack');
    await rm(join(packs, `${pack}.idx`));
    expect(await cache.nearlyComplete(cache.target(third))).toBeNull();
  });

  it("hears ok before the node adopts the push's packs, whose scratch repository stays until they are in", async () => {
    const repo = 'base/adopt';
    const work = await workRepo(home, 1);
    await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    await settled(repo);
    const cache = server.app.cache;
    const adoptPacks = cache.adoptPacks.bind(cache);
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const held: string[][] = [];
    cache.adoptPacks = async (r, created, packs) => {
      held.push(packs.map((p) => p.packPath));
      await gate;
      return adoptPacks(r, created, packs);
    };
    try {
      const head = await commitFile(work, home, 'held.txt', 'held\n');
      await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
      const loaded = await server.app.wal.readIndexFully(repo);
      if (!loaded) throw new Error(`no ${repo}`);
      expect((await server.app.wal.allRefs(loaded.index)).get('refs/heads/main')?.oid).toBe(head);
      // Answered while the adoption waits: the pack it links is still where git put it.
      const [pack] = held.flat();
      if (pack === undefined) throw new Error('no pack to adopt');
      await access(pack);
      let idle = false;
      const waited = server.app.idle().then(() => {
        idle = true;
      });
      await sleep(100);
      expect(idle).toBe(false);
      open();
      await waited;
      const { packs } = dirs(loaded);
      const name = basename(pack);
      await access(join(packs, name));
      await expect(access(pack)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      open();
      cache.adoptPacks = adoptPacks;
    }
  });

  it('is never one more than 8 entries older', async () => {
    const repo = 'base/far';
    const work = await workRepo(home, 1);
    await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const first = await settled(repo);
    const { gens } = dirs(first);
    let latest = first;
    for (let i = 0; i < 9; i++) {
      await commitFile(work, home, `more-${i}.txt`, `${i}\n`);
      await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
      latest = await settled(repo);
    }
    const cache = server.app.cache;
    const keep = new Set([cache.target(first).name, cache.target(latest).name]);
    for (const name of await readdir(gens)) {
      if (!keep.has(name)) await rm(join(gens, name), { recursive: true, force: true });
    }
    await rm(join(gens, cache.target(latest).name), { recursive: true, force: true });
    expect(latest.index.seq - first.index.seq).toBe(9);
    expect(await cache.nearlyComplete(cache.target(latest))).toBeNull();
  });
});

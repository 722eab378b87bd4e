/**
 * A holder of the writer lock that was stopped mid-way (a Lambda sandbox frozen between
 * invocations, a process stalled) and then goes on must not act on what it saw before: its lock
 * may have lapsed and the cache changed under it. Each is stopped here by holding one of its real
 * store calls at the point where a freeze would hurt, while the rest of the host goes on.
 */
import { readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../lib/app.js';
import { LAST_USED, sweepCache } from '../../lib/cache/evict.js';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/log.js';
import { createPresenceStore } from '../../lib/presence/createPresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { deleteInUse } from '../helpers/deleteInUse.js';
import { Gate, gatedPresence, gatedStore } from '../helpers/gate.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let home: string;
beforeAll(async () => {
  home = await makeHome();
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/** A repository of `pushes` pushes, each one pack. */
async function repoOfPushes(url: string, repo: string, pushes: number): Promise<string> {
  const work = await workRepo(home, 1, 'stale');
  for (let i = 0; i < pushes; i++) {
    if (i > 0) await gitOk(['commit', '-q', '--allow-empty', '-m', `push ${i}`], { cwd: work, home });
    await gitOk(['push', `${url}/${repo}.git`, 'main'], { cwd: work, home });
  }
  return work;
}

describe('a writer-lock holder that was stopped and goes on', () => {
  it('does not mark a generation complete when the object store it filled was replaced meanwhile', async () => {
    const dataDir = await tempDataDir();
    const env = { NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, NARWAL_LEASE_TTL_MS: '1000' };
    const other = await startInProcess({ dataDir, env });
    // One pack download of this node is held: it is frozen in the middle of a build.
    const gate = new Gate((op, key) => op === 'getStream' && key.endsWith('.pack'));
    const config = loadConfig(env, { dataDir, port: 0 });
    const frozen = await createApp(config, silentLogger, {
      store: gatedStore(new FsObjectStore(config.store.kind === 'fs' ? config.store.root : ''), gate),
    });
    try {
      await repoOfPushes(other.authUrl, 'stale/build', 4);
      await other.app.idle();
      await deleteInUse(join(dataDir, 'cache', 'repos'));
      const loaded = await frozen.wal.readIndex('stale/build');
      if (loaded === null) throw new Error('repository missing');
      const reading = frozen.cache.leaseComplete(frozen.cache.target(loaded));
      await gate.reached;
      // Meanwhile the repository's cache is evicted and another node starts its generation again.
      await deleteInUse(join(dataDir, 'cache', 'repos'));
      const started = await other.app.cache.leaseRefs(other.app.cache.target(loaded));
      await started.release();
      gate.release();
      const generation = await reading;
      try {
        // Complete means every object its refs reach is there.
        const objects = await git(['rev-list', '--objects', '--all'], { cwd: generation.dir, home });
        expect(objects.stderr).toBe('');
        expect(objects.code).toBe(0);
      } finally {
        await generation.release();
      }
    } finally {
      gate.release();
      await frozen.close();
      await other.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('does not evict a repository that was used after it judged it idle', async () => {
    const dataDir = await tempDataDir();
    const node = await startInProcess({ dataDir, env: { NARWAL_IDLE_EVICT_MS: '1000' } });
    try {
      await repoOfPushes(node.authUrl, 'stale/evict', 2);
      await node.app.idle();
      const incarnations = join(dataDir, 'cache', 'repos', 'stale', 'evict.git');
      const [incarnation = ''] = await readdir(incarnations);
      const gens = join(incarnations, incarnation, 'gens');
      const hourAgo = new Date(Date.now() - 3_600_000);
      for (const name of await readdir(gens)) {
        await writeFile(join(gens, name, LAST_USED), '');
        await utimes(join(gens, name, LAST_USED), hourAgo, hourAgo);
      }
      // The sweeper judges the repository idle, then stops just before it takes the writer lock.
      const gate = new Gate((op, key) => op === 'tryCreate' && key.endsWith(' writer'));
      const presence = gatedPresence(await createPresenceStore(node.app.config), gate);
      const leases = { presence, owner: 'sweeper', ttlMs: 60_000, now: Date.now };
      const sweeping = sweepCache(node.app.config.cacheDir, leases, { idleMs: 1000, logger: silentLogger });
      await gate.reached;
      // A clone uses the repository meanwhile.
      await gitOk(['clone', '-q', `${node.authUrl}/stale/evict.git`, join(dataDir, 'copy')], { home });
      gate.release();
      expect((await sweeping).repositories).toBe(0);
      expect((await stat(join(incarnations, incarnation, 'objects'))).isDirectory()).toBe(true);
    } finally {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

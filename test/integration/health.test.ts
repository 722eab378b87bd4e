/**
 * `/healthz` asks the node's dependencies, so the load balancer takes out, and the pool's start-up
 * signal waits for, a node that cannot reach the store, the presence records or the shared cache.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { healthCheck } from '../../lib/http/health.js';
import { type PresenceStore, PresenceUnavailable } from '../../lib/presence/PresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { startInProcess, tempDataDir } from '../helpers/narwalServer.js';

async function healthz(env: Record<string, string>, before?: (dataDir: string) => Promise<void>) {
  const dataDir = await tempDataDir();
  const node = await startInProcess({ dataDir, env });
  await before?.(dataDir);
  try {
    const response = await fetch(`${node.url}/healthz`);
    return { status: response.status, body: await response.text() };
  } finally {
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('/healthz', () => {
  it('answers 200 when the store, the presence records and the shared cache all answer', async () => {
    expect(await healthz({})).toEqual({ status: 200, body: 'ok\nstore: ok\npresence: ok\ncache: ok\n' });
  });

  it('answers 503 naming the store when the store does not answer', async () => {
    const { status, body } = await healthz({ NARWAL_STORE_FAULTS: 'head503=1' });
    expect(status).toBe(503);
    expect(body).toBe('narwal: unhealthy\nstore: StoreUnavailable\npresence: ok\ncache: ok\n');
  });

  it('answers 503 naming the cache when nothing can be written there', async () => {
    // A file where the check writes its probe: as good as a file system gone away or read-only.
    const { status, body } = await healthz({}, async (dataDir) => {
      await rm(join(dataDir, 'cache', 'health'), { recursive: true, force: true });
      await writeFile(join(dataDir, 'cache', 'health'), '');
    });
    expect(status).toBe(503);
    expect(body).toMatch(/^narwal: unhealthy\nstore: ok\npresence: ok\ncache: E[A-Z]+\n$/);
  });

  it('answers 503 naming the presence records when they do not answer, and asks again only after a while', async () => {
    const dataDir = await tempDataDir();
    try {
      let reads = 0;
      const presence = {
        get: async () => {
          reads++;
          throw new PresenceUnavailable('throttled');
        },
      } as unknown as PresenceStore;
      let now = 0;
      const check = healthCheck({
        store: new FsObjectStore(join(dataDir, 'store')),
        presence,
        cacheDir: dataDir,
        now: () => now,
      });
      expect(await check()).toEqual({
        ok: false,
        checks: { store: 'ok', presence: 'PresenceUnavailable', cache: 'ok' },
      });
      now = 4_000;
      await check();
      expect(reads).toBe(1);
      now = 6_000;
      await check();
      expect(reads).toBe(2);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

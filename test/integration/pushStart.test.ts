/**
 * A push is two requests: `GET info/refs` (the advertisement, which reads the index) and the
 * POST with the commands and the pack. The POST starts from the index its node confirmed for the
 * advertisement moments ago instead of reading it again; the publisher's CAS still proves every
 * old value. These tests count the reads, and split one push's two requests across two nodes (as
 * a load balancer may) to show what a stale start costs: nothing with the shared cache of a
 * deployment; with caches of their own, one refused attempt that changes nothing.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { type StoreSpan, TracingObjectStore } from '../../lib/store/TracingObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';
import { startProxy } from '../helpers/proxy.js';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

async function started<T extends RunningNarwal>(node: Promise<T>): Promise<T> {
  const running = await node;
  stops.push(() => running.stop());
  return running;
}

/** Forwards `GET` requests to one server and everything else (the POSTs) to another. */
async function splitProxy(gets: string, posts: string): Promise<string> {
  const proxy = await startProxy((req) => new URL(req.method === 'GET' ? gets : posts));
  stops.push(() => proxy.stop());
  return proxy.url.replace('://', `://admin:${ADMIN_TOKEN}@`);
}

/**
 * Two nodes on one store (cache directories under the data directory as `caches` says): a push
 * through a, then one through b, so a still holds the index it confirmed with its own push; and
 * a proxy that sends a push's GET to b and its POST to a.
 */
async function movedByAnotherNode(
  repo: string,
  caches: { a?: Record<string, string>; b?: Record<string, string> },
) {
  const dataDir = await tempDataDir();
  const env = (own: Record<string, string> = {}) =>
    Object.fromEntries(Object.entries(own).map(([k, dir]) => [k, join(dataDir, dir)]));
  const a = await started(startInProcess({ dataDir, env: env(caches.a) }));
  const b = await started(startInProcess({ dataDir, env: env(caches.b) }));
  const home = await makeHome();
  const work = await workRepo(home, 1);
  await gitOk(['push', `${a.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
  await commitFile(work, home, 'b.txt', 'b\n');
  await gitOk(['push', `${b.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
  return { dataDir, work, home, split: await splitProxy(b.url, a.url) };
}

async function mainOf(dataDir: string, repo: string): Promise<string | undefined> {
  const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
  const loaded = await wal.readIndex(repo);
  if (loaded === null) return undefined;
  return (await wal.allRefs(loaded.index)).get('refs/heads/main')?.oid;
}

describe('the start of a push', () => {
  it('reads the index once per push: for the advertisement, not again for the POST', async () => {
    const dataDir = await tempDataDir();
    const spans: StoreSpan[] = [];
    const store = new TracingObjectStore(new FsObjectStore(join(dataDir, 'store')), 'store', (s) =>
      spans.push(s),
    );
    const node = await started(startInProcess({ dataDir, store }));
    const home = await makeHome();
    const work = await workRepo(home, 1);
    const url = `${node.authUrl}/start/once.git`;
    await gitOk(['push', url, 'main'], { cwd: work, home });
    for (let i = 0; i < 3; i++) {
      const head = await commitFile(work, home, `more-${i}.txt`, `${i}\n`);
      spans.length = 0;
      await gitOk(['push', url, 'main'], { cwd: work, home });
      const indexReads = spans.filter((s) => s.op === 'get' && s.key.endsWith('/index.json'));
      expect(indexReads).toHaveLength(1);
      expect(spans.filter((s) => s.op === 'put' && s.key.endsWith('/index.json'))).toHaveLength(1);
      expect(await mainOf(dataDir, 'start/once')).toBe(head);
    }
  });

  it('lands a push whose advertisement came from another node sharing the cache', async () => {
    const { dataDir, work, home, split } = await movedByAnotherNode('start/shared', {});
    const head = await commitFile(work, home, 'split.txt', 'split\n');
    await gitOk(['push', `${split}/start/shared.git`, 'main'], { cwd: work, home });
    expect(await mainOf(dataDir, 'start/shared')).toBe(head);
  });

  it('refuses once and changes nothing when the other node has a cache of its own, then lands', async () => {
    const { dataDir, work, home, split } = await movedByAnotherNode('start/pack', {
      a: { NARWAL_CACHE_DIR: 'cache-a' },
      b: { NARWAL_CACHE_DIR: 'cache-b' },
    });
    // A new branch on the commit only b has seen: a receives the pack against the objects of its
    // own cache (a separate one here, unlike a deployment's), which lack the parent.
    const head = await commitFile(work, home, 'topic.txt', 'topic\n');
    const first = await git(['push', `${split}/start/pack.git`, 'HEAD:refs/heads/topic'], {
      cwd: work,
      home,
    });
    expect(first.code).not.toBe(0);
    expect(first.stderr).toMatch(/missing necessary objects|unpack/);
    expect(first.stderr).not.toMatch(/HTTP 5\d\d|internal error/);
    const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
    const loaded = await wal.readIndex('start/pack');
    expect(loaded && (await wal.allRefs(loaded.index)).has('refs/heads/topic')).toBe(false);
    // The refusal took back a's confirmation: the retry reads the index and lands.
    await gitOk(['push', `${split}/start/pack.git`, 'HEAD:refs/heads/topic'], { cwd: work, home });
    const after = await wal.readIndex('start/pack');
    expect(after && (await wal.allRefs(after.index)).get('refs/heads/topic')?.oid).toBe(head);
  });
});

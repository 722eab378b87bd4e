/**
 * Limits that keep a node healthy: a dead reader's lease stops counting once it expires, a
 * saturated node refuses at once with a retryable 503, and memory does not grow with pack size.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectPresenceStore } from '../../lib/presence/ObjectPresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, startInProcess, startProcess, tempDataDir } from '../helpers/narwalServer.js';

const run = promisify(execFile);
let home: string;

beforeAll(async () => {
  home = await makeHome();
});

const auth = `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}`;

function pkt(line: string): string {
  return `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
}

/**
 * Starts a v0 fetch of `want` and stops reading after the first bytes, so the server's
 * upload-pack stays blocked mid-transfer (holding its git slot and its lease).
 */
function stalledFetch(url: string, repo: string, want: string): Promise<{ abort(): void }> {
  return new Promise((resolve, reject) => {
    const body = `${pkt(`want ${want} side-band-64k ofs-delta\n`)}0000${pkt('done\n')}`;
    const req = request(
      `${url}/${repo}.git/git-upload-pack`,
      {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-git-upload-pack-request' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stalled fetch answered ${res.statusCode}`));
          return;
        }
        res.once('data', () => {
          res.pause();
          resolve({ abort: () => req.destroy() });
        });
        res.once('error', () => {});
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A repository with one large incompressible file: slow enough to interrupt, big enough to matter. */
async function bigRepo(megabytes: number): Promise<{ work: string; head: string }> {
  const work = await workRepo(home, 1, `big${megabytes}`);
  await run('sh', ['-c', `head -c ${megabytes}M /dev/urandom > big.bin`], { cwd: work });
  await gitOk(['add', 'big.bin'], { cwd: work, home });
  await gitOk(['commit', '-q', '-m', 'big'], { cwd: work, home });
  return { work, head: (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim() };
}

describe('a reader killed mid-clone', () => {
  it('blocks eviction only until its lease expires', async () => {
    const dataDir = await tempDataDir();
    const env = { NARWAL_LEASE_TTL_MS: '2000', NARWAL_IDLE_EVICT_MS: '1000' };
    const reader = await startProcess({ dataDir, env });
    const sweeper = await startInProcess({ dataDir, env });
    try {
      const { work, head } = await bigRepo(40);
      await gitOk(['push', `${reader.authUrl}/crash/clone.git`, 'main'], { cwd: work, home });
      const presence = new ObjectPresenceStore({
        store: new FsObjectStore(join(dataDir, 'cache', 'presence')),
      });
      // A first import this size is checkpointed in the background, under a lease of its own:
      // let that finish so the only lease left is the stalled reader's.
      const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
      for (let i = 0; i < 200; i++) {
        const loaded = await wal.readIndexFully('crash/clone');
        const leases = await presence.list('repo#crash/clone', 'lease#');
        if (loaded?.index.checkpoint && leases.length === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await stalledFetch(reader.url, 'crash/clone', head);
      // The answer starts before the cache is ready (with progress); the lease comes with git.
      for (let i = 0; i < 200 && (await presence.list('repo#crash/clone', 'lease#')).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await presence.list('repo#crash/clone', 'lease#')).length).toBe(1);

      // kill -9 of the serving process: nobody releases the lease.
      reader.child.kill('SIGKILL');
      await new Promise((r) => reader.child.once('exit', r));
      await new Promise((r) => setTimeout(r, 1100));
      const repoDir = join(dataDir, 'cache', 'repos', 'crash', 'clone.git');
      await sweeper.app.sweep();
      expect(await readdir(repoDir)).toHaveLength(1);

      // Past its expiry the dead reader's lease no longer counts.
      await new Promise((r) => setTimeout(r, 2000));
      expect(await presence.list('repo#crash/clone', 'lease#')).toEqual([]);
      const swept = await sweeper.app.sweep();
      expect(swept.repositories).toBe(1);
      expect(await readdir(repoDir)).toEqual([]);

      // Nothing was lost: the next clone rebuilds from the store.
      const dir = join(dataDir, 'clone-after');
      await gitOk(['clone', '-q', `${sweeper.authUrl}/crash/clone.git`, dir], { home });
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).trim()).toBe(head);
    } finally {
      await reader.stop();
      await sweeper.stop();
      await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    }
  });
});

describe('the git process budget', () => {
  let server: Awaited<ReturnType<typeof startInProcess>>;
  beforeAll(async () => {
    server = await startInProcess({ env: { NARWAL_GIT_CHILDREN: '1' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('refuses at once with 503, Retry-After and a message git prints', async () => {
    const { work, head } = await bigRepo(32);
    await gitOk(['push', `${server.authUrl}/busy/repo.git`, 'main'], { cwd: work, home });
    // The push's background work (prewarm, checkpoint) takes the one slot too: let it finish.
    // The pack is larger than what socket buffers hold, so the stalled upload-pack keeps its slot.
    await server.app.idle();
    const stalled = await stalledFetch(server.url, 'busy/repo', head);
    try {
      const response = await fetch(`${server.url}/busy/repo.git/info/refs?service=git-upload-pack`, {
        headers: { authorization: auth },
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.text()).toContain('server busy');
      const started = Date.now();
      // Protocol v0, whose advertisement is git's: a v2 `ls-remote` needs no git process at all
      // (the capability list is kept from start, ls-refs is written from the state's refs).
      const out = await git(['-c', 'protocol.version=0', 'ls-remote', `${server.authUrl}/busy/repo.git`], {
        home,
      });
      expect(out.code).not.toBe(0);
      expect(out.stderr).toContain('503');
      // Refused, not queued: it comes back long before the stalled transfer ends.
      expect(Date.now() - started).toBeLessThan(10_000);
      const listed = await gitOk(['ls-remote', `${server.authUrl}/busy/repo.git`], { home });
      expect(listed).toContain(`${head}\trefs/heads/main`);
    } finally {
      stalled.abort();
    }
  });
});

describe('memory with a large pack', () => {
  it('pushes and clones a 300 MB pack without the server growing with it', async () => {
    const dataDir = await tempDataDir();
    const server = await startProcess({ dataDir });
    try {
      const { work, head } = await bigRepo(300);
      await gitOk(['-c', 'http.postBuffer=1048576', 'push', `${server.authUrl}/big/repo.git`, 'main'], {
        cwd: work,
        home,
      });
      const dir = join(dataDir, 'big-clone');
      await gitOk(['clone', '-q', `${server.authUrl}/big/repo.git`, dir], { home });
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).trim()).toBe(head);
      expect((await stat(join(dir, 'big.bin'))).size).toBe(300 * 1024 * 1024);
      const status = await readFile(`/proc/${server.child.pid}/status`, 'utf8');
      const peakKb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
      console.log(`server peak RSS after a 300 MB push and clone: ${Math.round(peakKb / 1024)} MB`);
      expect(peakKb).toBeLessThan(200 * 1024);
    } finally {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    }
  }, 240_000);
});

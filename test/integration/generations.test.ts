/**
 * Cache generations and read leases: readers share a generation without a lock, a push gives new
 * readers a new generation while old leases keep theirs, eviction respects live leases only, and
 * a cold cache rebuilds from the newest checkpoint.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { presenceTableDefinition } from '../../lib/presence/DynamoPresenceStore.js';
import { type DynamoLocal, startDynamoLocal } from '../helpers/dynamoLocal.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const run = promisify(execFile);
let server: RunningNarwal & { app: App };
let home: string;

async function revParse(gitDir: string, ref: string): Promise<string> {
  const { stdout } = await run('git', ['--git-dir', gitDir, 'rev-parse', ref]);
  return stdout.trim();
}

async function current(repo: string) {
  const loaded = await server.app.wal.readIndexFully(repo);
  if (!loaded) throw new Error(`no ${repo}`);
  return loaded;
}

/** Everything below runs once with each presence adapter. */
async function presenceEnv(
  kind: 'local' | 'dynamodb',
): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  if (kind === 'local') return { env: {}, stop: async () => {} };
  const local: DynamoLocal = await startDynamoLocal();
  // The app's DynamoDB client takes credentials from the environment; DynamoDB Local accepts any.
  process.env.AWS_ACCESS_KEY_ID = 'narwaltest';
  process.env.AWS_SECRET_ACCESS_KEY = 'narwaltest';
  const client = new DynamoDBClient({ endpoint: local.endpoint, region: 'us-east-1' });
  await client.send(new CreateTableCommand(presenceTableDefinition('narwal-presence')));
  client.destroy();
  return {
    env: {
      NARWAL_PRESENCE: 'dynamodb',
      NARWAL_PRESENCE_TABLE: 'narwal-presence',
      NARWAL_DYNAMODB_ENDPOINT: local.endpoint,
    },
    stop: () => local.stop(),
  };
}

for (const presence of ['local', 'dynamodb'] as const) {
  describe(`with ${presence} presence records`, () => {
    let presenceStop: () => Promise<void> = async () => {};
    beforeAll(async () => {
      const setup = await presenceEnv(presence);
      presenceStop = setup.stop;
      server = await startInProcess({
        env: { NARWAL_CHECKPOINT_EVERY: '10', NARWAL_IDLE_EVICT_MS: '1000', ...setup.env },
      });
      home = await makeHome();
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
      await presenceStop();
    });

    describe('generations and leases', () => {
      it('keeps leased generations while a push lands, and gives a new reader the new one', async () => {
        const repo = 'gens/leases';
        const work = await workRepo(home, 2);
        await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
        const before = await current(repo);
        const first = await server.app.cache.leaseComplete(server.app.cache.target(before));
        const second = await server.app.cache.leaseComplete(server.app.cache.target(before));
        expect(second.dir).toBe(first.dir);
        const oldHead = await revParse(first.dir, 'refs/heads/main');

        const newHead = await commitFile(work, home, 'later.txt', 'later\n');
        await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
        const after = await current(repo);
        const third = await server.app.cache.leaseComplete(server.app.cache.target(after));
        expect(third.dir).not.toBe(first.dir);
        expect(await revParse(third.dir, 'refs/heads/main')).toBe(newHead);
        // The old generation is immutable: its readers still see exactly the state they leased.
        expect(await revParse(first.dir, 'refs/heads/main')).toBe(oldHead);

        // Leased, so the sweep keeps it however idle it is.
        await new Promise((r) => setTimeout(r, 1100));
        await server.app.sweep();
        expect(await revParse(first.dir, 'refs/heads/main')).toBe(oldHead);
        await first.release();
        await second.release();
        await third.release();
        await server.app.sweep();
        await expect(revParse(first.dir, 'refs/heads/main')).rejects.toThrow();
        // The newest generation stays while it is not idle.
        const again = await server.app.cache.leaseComplete(server.app.cache.target(after));
        expect(again.dir).toBe(third.dir);
        await again.release();
      });

      it('leases a generation at one look only when it is complete, and never builds one for it', async () => {
        const repo = 'gens/if-complete';
        const work = await workRepo(home, 1);
        await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
        const cache = server.app.cache;
        const loaded = await current(repo);
        const built = await cache.leaseComplete(cache.target(loaded));
        const leased = await cache.leaseIfComplete(cache.target(loaded));
        expect(leased?.dir).toBe(built.dir);
        await Promise.all([built.release(), leased?.release()]);
        // A generation nobody built yet: null, and still not there afterwards.
        await server.app.idle();
        const ahead = { ...cache.target(loaded), seq: loaded.index.seq + 1, name: 'not-built' };
        expect(await cache.leaseIfComplete(ahead)).toBeNull();
        expect(await cache.isComplete(ahead)).toBe(false);
      });

      it('serves many clones of one repository at once from one generation', async () => {
        const repo = 'gens/parallel';
        const work = await workRepo(home, 5);
        await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
        const root = await mkdtemp(join(tmpdir(), 'narwal-par-'));
        const clones = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            gitOk(['clone', '-q', `${server.authUrl}/${repo}.git`, join(root, `c${i}`)], { home }),
          ),
        );
        expect(clones).toHaveLength(8);
        const loaded = await current(repo);
        const gensDir = join(server.dataDir, 'cache', 'repos', `${repo}.git`);
        const incarnations = await readdir(gensDir);
        expect(incarnations).toHaveLength(1);
        const names = await readdir(join(gensDir, incarnations[0] ?? '', 'gens'));
        expect(names.filter((n) => n.startsWith(String(loaded.index.seq).padStart(12, '0')))).toHaveLength(1);
        await rm(root, { recursive: true, force: true });
      });
    });

    describe('checkpoints', () => {
      it('checkpoints automatically, and a cold cache rebuilds from the checkpoint', async () => {
        const repo = 'gens/checkpointed';
        const work = await workRepo(home, 1);
        const url = `${server.authUrl}/${repo}.git`;
        for (let i = 0; i < 14; i++) {
          await commitFile(work, home, `f${i}.txt`, `${i}\n`);
          await gitOk(['push', url, 'main', `main:b${i % 3}`], { cwd: work, home });
        }
        // Checkpoints run in the background after a publish; give the last one a moment.
        let loaded = await current(repo);
        for (let i = 0; i < 100 && (loaded.index.checkpoint?.seq ?? 0) < 10; i++) {
          await new Promise((r) => setTimeout(r, 50));
          loaded = await current(repo);
        }
        const checkpoint = loaded.index.checkpoint;
        expect(checkpoint?.seq).toBeGreaterThanOrEqual(10);
        expect(checkpoint?.packs.length).toBe(1);

        // Lose the whole cache: nothing is lost, the next clone rebuilds from the checkpoint.
        await server.app.idle();
        await rm(join(server.dataDir, 'cache', 'repos'), { recursive: true, force: true });
        const dir = join(await mkdtemp(join(tmpdir(), 'narwal-cold-')), 'c');
        await gitOk(['clone', '-q', url, dir], { home });
        expect((await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).trim()).toBe(
          (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim(),
        );
        await gitOk(['fsck', '--strict'], { cwd: dir, home });
        const objects = join(server.dataDir, 'cache', 'repos', `${repo}.git`);
        const [incarnation = ''] = await readdir(objects);
        const packs = await readdir(join(objects, incarnation, 'objects', 'pack'));
        expect(packs).toContain(`${checkpoint?.packs[0]}.bitmap`);
        // Only the checkpoint and the entries after it were downloaded.
        const entriesAfter = loaded.index.seq - (checkpoint?.seq ?? 0);
        expect(packs.filter((p) => p.endsWith('.pack')).length).toBeLessThanOrEqual(1 + entriesAfter);
      });

      it("keeps one reachability bitmap, the newest checkpoint's, so git warns no client of extra ones", async () => {
        const repo = 'gens/two-checkpoints';
        const work = await workRepo(home, 3);
        const url = `${server.authUrl}/${repo}.git`;
        await gitOk(['push', url, 'main'], { cwd: work, home });
        const first = await server.app.checkpointer.make(repo);
        const objects = join(server.dataDir, 'cache', 'repos', `${repo}.git`);
        const [incarnation = ''] = await readdir(objects);
        const packDir = join(objects, incarnation, 'objects', 'pack');
        const firstBitmap = `${first?.packs[0]}.bitmap`;
        const saved = join(await mkdtemp(join(tmpdir(), 'narwal-saved-')), firstBitmap);
        await copyFile(join(packDir, firstBitmap), saved);
        const { atime, mtime } = await stat(join(packDir, firstBitmap));
        await commitFile(work, home, 'later.txt', 'later\n');
        await gitOk(['push', url, 'main'], { cwd: work, home });
        const second = await server.app.checkpointer.make(repo);
        expect(second?.seq).toBeGreaterThan(first?.seq ?? 0);
        const bitmaps = async () => (await readdir(packDir)).filter((p) => p.endsWith('.bitmap'));
        expect(await bitmaps()).toEqual([`${second?.packs[0]}.bitmap`]);
        // git 2.39 says "warning: ignoring extra bitmap file" to every client when there are two.
        const clone = async () => {
          const dir = join(await mkdtemp(join(tmpdir(), 'narwal-onebitmap-')), 'c');
          const cloned = await git(['clone', url, dir], { home });
          expect(cloned.code).toBe(0);
          expect(cloned.stderr).not.toMatch(/extra bitmap/);
        };
        await clone();
        // A cache that holds an older bitmap (from before a checkpoint another node made) loses it
        // when its next generation is built.
        await copyFile(saved, join(packDir, firstBitmap));
        await utimes(join(packDir, firstBitmap), atime, mtime);
        await commitFile(work, home, 'newer.txt', 'newer\n');
        await gitOk(['push', url, 'main'], { cwd: work, home });
        await clone();
        expect(await bitmaps()).toEqual([`${second?.packs[0]}.bitmap`]);
      });

      it('makes a checkpoint on demand and reports when there is nothing new', async () => {
        const repo = 'gens/on-demand';
        const work = await workRepo(home, 3);
        await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
        const made = await server.app.checkpointer.make(repo);
        expect(made?.seq).toBe(1);
        expect(await server.app.checkpointer.make(repo)).toBeNull();
        expect((await current(repo)).index.checkpoint?.seq).toBe(1);
      });
    });
  });
}

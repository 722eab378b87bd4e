/**
 * The prewarm and maintenance functions, for real: their middy handlers around apps on the
 * embedded store, sharing a data directory with a server that takes the pushes.
 */
import { access, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazyContainer } from '../../functions/adapter/container.js';
import { maintenanceHandler, SWEEP_CURSOR_KEY } from '../../functions/maintenance.js';
import { prewarmHandler } from '../../functions/prewarm.js';
import { type App, createApp } from '../../lib/app.js';
import { generationName, gensDir, incarnationDir } from '../../lib/cache/layout.js';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/log.js';
import type { LoadedIndex } from '../../lib/wal/types.js';
import { lambdaContext } from '../helpers/aws/lambdaRuntime.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let dataDir: string;
let pusher: RunningNarwal & { app: App };
let functionsApp: App;
let home: string;
let work: string;

const container = () => lazyContainer(async () => functionsApp, silentLogger);

async function push(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await commitFile(work, home, `f-${Math.random()}.txt`, `${i}\n`);
    await gitOk(['push', '-q', `${pusher.authUrl}/team/warm.git`, 'main'], { cwd: work, home });
  }
  await pusher.app.idle();
}

async function current(): Promise<LoadedIndex> {
  const loaded = await functionsApp.wal.readIndexFully('team/warm');
  if (loaded === null) throw new Error('repository missing');
  return loaded;
}

function generationDir(loaded: LoadedIndex): string {
  const cacheDir = functionsApp.config.cacheDir;
  return join(gensDir(incarnationDir(cacheDir, 'team/warm', loaded.index.created)), generationName(loaded));
}

beforeAll(async () => {
  dataDir = await tempDataDir();
  // The pushing server never checkpoints on its own, so what the functions do is visible.
  pusher = await startInProcess({ dataDir, env: { NARWAL_CHECKPOINT_EVERY: '1000000' } });
  const config = loadConfig({ NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, NARWAL_CHECKPOINT_EVERY: '2' }, { dataDir });
  functionsApp = await createApp(config, silentLogger);
  home = await makeHome();
  work = await workRepo(home, 1, 'warm');
  await gitOk(['push', '-q', `${pusher.authUrl}/team/warm.git`, 'main'], { cwd: work, home });
});
afterAll(async () => {
  await functionsApp?.close();
  await pusher?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the prewarm function', () => {
  const invoke = (event: Record<string, unknown>) =>
    prewarmHandler(container())(event, lambdaContext('narwal-prewarm'));

  it('builds the generation of the current index in the shared cache, whatever the event says', async () => {
    await push(2);
    // Deleting the cache loses nothing; the function builds it back.
    await rm(join(functionsApp.config.cacheDir, 'repos'), { recursive: true, force: true });
    const loaded = await current();
    const outcome = await invoke({ repo: 'team/warm', seq: 1, etag: '"an older index"' });
    expect(outcome).toEqual({ repo: 'team/warm', built: true, seq: loaded.index.seq });
    await access(join(generationDir(loaded), 'packed-refs'));
  });

  it('makes the checkpoint that is due', async () => {
    // The checkpoint covers the last push, and is itself the entry after it.
    const loaded = await current();
    expect(loaded.index.checkpoint?.seq).toBe(loaded.index.seq - 1);
    expect(loaded.index.tail.at(-1)?.kind).toBe('checkpoint');
  });

  it('drops events it cannot act on without failing (Lambda would retry them)', async () => {
    expect(await invoke({})).toEqual({ repo: null, built: false, reason: 'invalid event' });
    expect(await invoke({ repo: '../etc' })).toEqual({ repo: null, built: false, reason: 'invalid event' });
    expect(await invoke({ repo: 42 })).toEqual({ repo: null, built: false, reason: 'invalid event' });
    expect(await invoke({ repo: 'team/nothing-here' })).toEqual({
      repo: 'team/nothing-here',
      built: false,
      reason: 'no such repository',
    });
  });
});

describe('the maintenance function', () => {
  it('checkpoints the cached repositories that are due, after the idle sweep (nothing is idle yet)', async () => {
    await push(2);
    const before = await current();
    expect(before.index.checkpoint?.seq).toBeLessThan(before.index.seq);
    const outcome = await maintenanceHandler(container())({}, lambdaContext('narwal-maintenance'));
    expect(outcome.checked).toBe(1);
    expect(outcome.evicted).toEqual({ generations: 0, repositories: 0 });
    const after = await current();
    expect(after.index.checkpoint?.seq).toBe(before.index.seq);
    expect(outcome.sweepStoppedAfter).toBeNull();
  });

  it('starts no checkpoint and no sweep it has no time left for, and the next run resumes the sweep', async () => {
    await functionsApp.wal.createRepo('team/second', { public: false });
    await push(2);
    const before = await current();
    const short = { ...lambdaContext('narwal-maintenance'), getRemainingTimeInMillis: () => 30_000 };
    const hurried = await maintenanceHandler(container())({}, short);
    expect(hurried).toMatchObject({ checked: 0, checkpointsDeferred: 1 });
    expect((await current()).index.checkpoint?.seq).toBe(before.index.checkpoint?.seq);
    // Stopped before the first repository: the cursor says to start over.
    expect(hurried.sweepStoppedAfter).toBeNull();
    // A run that stopped after team/second left this cursor: the next sweeps only what follows.
    await functionsApp.store.put(SWEEP_CURSOR_KEY, Buffer.from(JSON.stringify({ after: 'team/second' })));
    const resumed = await maintenanceHandler(container())({}, lambdaContext('narwal-maintenance'));
    expect(resumed).toMatchObject({ sweptRepositories: 1, sweepStoppedAfter: null });
    const whole = await maintenanceHandler(container())({}, lambdaContext('narwal-maintenance'));
    expect(whole.sweptRepositories).toBe(2);
  });
});

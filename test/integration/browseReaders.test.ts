/**
 * The repository pages' cat-file readers (ObjectReaders.ts) against a real cache and real git: a
 * reader holds one git slot while open, goes (slot and lease given back) once idle, is never
 * more than `max` at once, and is replaced once older than its maximum age without cutting off
 * the page that still uses it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { ObjectReaders } from '../../lib/browse/ObjectReaders.js';
import type { CacheTarget } from '../../lib/cache/RepoCache.js';
import { GitBudget } from '../../lib/git/GitBudget.js';
import { GitRunner } from '../../lib/git/GitRunner.js';
import { silentLogger } from '../../lib/log.js';
import { eventually } from '../helpers/eventually.js';
import { gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
const targets: CacheTarget[] = [];

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  for (const repo of ['readers/one', 'readers/two']) {
    const work = await workRepo(home, 1, 'readers');
    await gitOk(['push', '-q', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const loaded = await server.app.wal.readIndexFully(repo);
    if (loaded === null) throw new Error(`no ${repo}`);
    targets.push(server.app.cache.target(loaded));
  }
  await server.app.idle();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function readers(options: { idleMs?: number; max?: number; maxAgeMs?: number }) {
  const budget = new GitBudget(8, 0);
  const git = new GitRunner({ budget, home });
  return {
    budget,
    readers: new ObjectReaders({ git, cache: server.app.cache, logger: silentLogger, ...options }),
  };
}

describe('cat-file readers of generations', () => {
  it('share one process between pages, and give its git slot back once idle', async () => {
    const { budget, readers: pool } = readers({ idleMs: 100 });
    const [target] = targets as [CacheTarget];
    const a = await pool.open(target);
    const b = await pool.open(target);
    expect(a.catFile).toBe(b.catFile);
    expect(budget.running).toBe(1);
    expect((await a.catFile.info('HEAD'))?.type).toBe('commit');
    a.done();
    await sleep(250);
    expect(a.catFile.closed).toBe(false);
    b.done();
    expect(await eventually(() => a.catFile.closed && budget.running === 0)).toBe(true);
    pool.close();
  });

  it('keeps at most `max` readers, closing the least recently used idle one', async () => {
    const { budget, readers: pool } = readers({ max: 1 });
    const [one, two] = targets as [CacheTarget, CacheTarget];
    const first = await pool.open(one);
    first.done();
    const second = await pool.open(two);
    expect(await eventually(() => first.catFile.closed && budget.running === 1)).toBe(true);
    expect(second.catFile.closed).toBe(false);
    second.done();
    pool.close();
    expect(await eventually(() => budget.running === 0)).toBe(true);
  });

  it('replaces a reader past its age, and closes the old one only when its page is done', async () => {
    const { budget, readers: pool } = readers({ maxAgeMs: 0 });
    const [target] = targets as [CacheTarget];
    const old = await pool.open(target);
    await sleep(5);
    const fresh = await pool.open(target);
    expect(fresh.catFile).not.toBe(old.catFile);
    expect(old.catFile.closed).toBe(false);
    expect((await old.catFile.info('HEAD'))?.type).toBe('commit');
    old.done();
    expect(await eventually(() => old.catFile.closed)).toBe(true);
    fresh.done();
    pool.close();
    expect(await eventually(() => budget.running === 0)).toBe(true);
  });
});

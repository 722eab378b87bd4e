/**
 * Several `narwal serve` processes on one data directory are separate nodes of one host: a push
 * through one is visible through the other at once, and racing pushes through both neither
 * conflict on distinct refs nor lose updates on the same ref.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startProcess, tempDataDir } from '../helpers/narwalServer.js';

let dataDir: string;
let a: RunningNarwal;
let b: RunningNarwal;
let home: string;
let wal: Wal;

beforeAll(async () => {
  dataDir = await tempDataDir();
  [a, b] = await Promise.all([startProcess({ dataDir }), startProcess({ dataDir })]);
  home = await makeHome();
  wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
});

/** Commits on new branches without touching the work tree: fast enough for dozens of refs. */
async function branchCommits(work: string, base: string, names: string[]): Promise<Map<string, string>> {
  const tree = (await gitOk(['rev-parse', `${base}^{tree}`], { cwd: work, home })).trim();
  const out = new Map<string, string>();
  for (const name of names) {
    const oid = (
      await gitOk(['commit-tree', tree, '-p', base, '-m', `commit for ${name}`], { cwd: work, home })
    ).trim();
    await gitOk(['update-ref', `refs/heads/${name}`, oid], { cwd: work, home });
    out.set(name, oid);
  }
  return out;
}

function serverFailure(stderr: string): boolean {
  return /RPC failed|HTTP 5\d\d|error: 5\d\d|internal error/i.test(stderr);
}

describe('two nodes sharing one data directory', () => {
  it('shows a push through one node to a fetch through the other immediately', async () => {
    const work = await workRepo(home, 2);
    await gitOk(['push', `${a.authUrl}/shared/visible.git`, 'main'], { cwd: work, home });
    const clone = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), 'c');
    await gitOk(['clone', `${b.authUrl}/shared/visible.git`, clone], { home });
    for (let i = 0; i < 3; i++) {
      const head = await commitFile(work, home, `round-${i}.txt`, `${i}\n`);
      await gitOk(['push', `${(i % 2 === 0 ? a : b).authUrl}/shared/visible.git`, 'main'], {
        cwd: work,
        home,
      });
      await gitOk(['fetch', `${(i % 2 === 0 ? b : a).authUrl}/shared/visible.git`, 'main'], {
        cwd: clone,
        home,
      });
      expect((await gitOk(['rev-parse', 'FETCH_HEAD'], { cwd: clone, home })).trim()).toBe(head);
    }
  });

  it('lands 50 simultaneous pushes to 50 distinct branches through both nodes', async () => {
    const work = await workRepo(home, 1);
    const repo = 'shared/distinct';
    await gitOk(['push', `${a.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const names = Array.from({ length: 50 }, (_, i) => `topic-${i}`);
    const commits = await branchCommits(work, 'main', names);
    const results = await Promise.all(
      names.map((name, i) =>
        git(['push', `${(i % 2 === 0 ? a : b).authUrl}/${repo}.git`, name], { cwd: work, home }),
      ),
    );
    const failed = results.filter((r) => r.code !== 0);
    expect(failed.map((r) => r.stderr)).toEqual([]);
    expect(results.some((r) => serverFailure(r.stderr))).toBe(false);

    const loaded = await wal.readIndexFully(repo);
    if (!loaded) throw new Error('repository missing');
    const refs = await wal.allRefs(loaded.index);
    for (const [name, oid] of commits) expect(refs.get(`refs/heads/${name}`)?.oid).toBe(oid);
    const items = await wal.itemsAfter(loaded.index, 0);
    expect(items).toHaveLength(51);
    expect(new Set(items.map((item) => item.seq)).size).toBe(51);
  });

  it('lets exactly one of 20 simultaneous pushes to one branch win; the rest are refused', async () => {
    const work = await workRepo(home, 1);
    const repo = 'shared/contended';
    await gitOk(['push', `${a.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
    const names = Array.from({ length: 20 }, (_, i) => `candidate-${i}`);
    const commits = await branchCommits(work, 'main', names);
    const results = await Promise.all(
      names.map((name, i) =>
        git(['push', `${(i % 2 === 0 ? a : b).authUrl}/${repo}.git`, `${name}:main`], { cwd: work, home }),
      ),
    );
    const winners = names.filter((_, i) => results[i]?.code === 0);
    expect(winners).toHaveLength(1);
    // A loser hears `fetch first`; one whose advertisement already showed the winner (all the
    // candidates share one repository, so it has the winner's commit) is refused as
    // non-fast-forward by git itself.
    for (const r of results.filter((r) => r.code !== 0))
      expect(r.stderr).toMatch(/\[(remote )?rejected\] .* \((fetch first|non-fast-forward)\)/);
    expect(results.some((r) => serverFailure(r.stderr))).toBe(false);

    const loaded = await wal.readIndexFully(repo);
    if (!loaded) throw new Error('repository missing');
    const refs = await wal.allRefs(loaded.index);
    expect(refs.get('refs/heads/main')?.oid).toBe(commits.get(winners[0] ?? ''));
    const items = await wal.itemsAfter(loaded.index, 0);
    expect(items).toHaveLength(2);
  });
});

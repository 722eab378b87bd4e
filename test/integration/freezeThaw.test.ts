/**
 * Lambda freezes a sandbox between invocations for as long as it likes, and may never thaw it.
 * Here one node, with everything it started, is stopped (SIGSTOP to its process group) while it
 * holds the writer lock in the middle of building a generation for a clone, and stays stopped
 * past every expiry it had: its lock, its lease, the record that vouches for its scratch
 * directory. The other nodes push and clone as usual meanwhile, take over its lock, and remove its
 * directory. Thawed (SIGCONT), it finishes its clone, answers with the newest state, pushes
 * through a directory it makes again, and the log holds exactly what the clients were told.
 */
import { access, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoPartition, WRITER } from '../../lib/cache/leases.js';
import { COMPLETE } from '../../lib/cache/RepoCache.js';
import { loadConfig } from '../../lib/config.js';
import { createPresenceStore } from '../../lib/presence/createPresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { deleteInUse } from '../helpers/deleteInUse.js';
import { eventually } from '../helpers/eventually.js';
import { type GitOutput, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { startProcess, tempDataDir } from '../helpers/narwalServer.js';

type Node = Awaited<ReturnType<typeof startProcess>>;

const REPO = 'freeze/app';
// Everything lapses within a second; every node sweeps every second.
const ENV = { NARWAL_LEASE_TTL_MS: '1000', NARWAL_NODE_TTL_MS: '1000', NARWAL_IDLE_EVICT_MS: '1000' };

let home: string;
let dataDir: string;
const nodes: Node[] = [];

beforeAll(async () => {
  home = await makeHome();
  dataDir = await tempDataDir();
});
afterAll(async () => {
  for (const node of nodes) {
    if (node.child.exitCode !== null || node.child.signalCode !== null) continue;
    node.signalGroup('SIGCONT');
    await node.stop();
  }
  await rm(dataDir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}): Promise<{ node: Node; dirs: string[] }> {
  const before = await nodeDirs();
  const node = await startProcess({ dataDir, env: { ...ENV, ...env }, processGroup: true });
  nodes.push(node);
  return { node, dirs: [...(await nodeDirs())].filter((name) => !before.has(name)) };
}

const nodeDirs = async () => new Set(await readdir(join(dataDir, 'cache', 'nodes')).catch(() => []));

/** Polls `check` every half second, up to `tries` times; answers its last result. */
/** How long and how often this test waits for the nodes' background work (sweeps, builds). */
const POLL_30S = { withinMs: 30_000, everyMs: 500 };

/** Pushes on `branch` through each of `via` in turn; every commit the client was told `ok` for. */
async function pushes(
  via: Node[],
  branch: string,
  count: number,
): Promise<{ acked: string[]; all: GitOutput[] }> {
  const work = await workRepo(home, 1, branch);
  const acked: string[] = [];
  const all: GitOutput[] = [];
  for (let i = 0; i < count; i++) {
    const node = via[i % via.length] as Node;
    await gitOk(['commit', '-q', '--allow-empty', '-m', `${branch} ${i}`], { cwd: work, home });
    const out = await git(['push', `${node.authUrl}/${REPO}.git`, `HEAD:${branch}`], { cwd: work, home });
    all.push(out);
    if (out.code === 0) acked.push((await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim());
  }
  return { acked, all };
}

async function refsVia(node: Node): Promise<Map<string, string>> {
  const out = await gitOk(['ls-remote', `${node.authUrl}/${REPO}.git`], { home });
  return new Map(
    out
      .trim()
      .split('\n')
      .map((line) => line.split('\t'))
      .map(([oid = '', ref = '']) => [ref, oid]),
  );
}

describe('a node frozen past its expiries, then thawed', () => {
  it('blocks and breaks nobody, loses nothing, and answers freshly once thawed', async () => {
    const { node: a } = await start();
    const { node: b } = await start();
    // Slow store round trips: its build of a cold repository takes seconds.
    const { node: c, dirs: frozenDirs } = await start({ NARWAL_STORE_LATENCY_MS: '300' });
    const cId = frozenDirs[0]?.split('-')[0] ?? '';
    expect(cId).not.toBe('');

    const seed = await workRepo(home, 1, 'seed');
    for (let i = 0; i < 6; i++) {
      if (i > 0) await gitOk(['commit', '-q', '--allow-empty', '-m', `seed ${i}`], { cwd: seed, home });
      await gitOk(['push', `${a.authUrl}/${REPO}.git`, 'main'], { cwd: seed, home });
    }
    const main = (await gitOk(['rev-parse', 'HEAD'], { cwd: seed, home })).trim();

    // A clone through C of a cold cache: C takes the writer lock and downloads. Freeze it there.
    // First A's prewarm after the last push finishes, lest it fill the cache again meanwhile.
    const presence = await createPresenceStore(loadConfig({}, { dataDir }));
    const built = async () => {
      const repoDir = join(dataDir, 'cache', 'repos', 'freeze', 'app.git');
      for (const incarnation of await readdir(repoDir).catch(() => [])) {
        for (const gen of await readdir(join(repoDir, incarnation, 'gens')).catch(() => [])) {
          if (!gen.startsWith('000000000006-')) continue;
          if (
            await access(join(repoDir, incarnation, 'gens', gen, COMPLETE)).then(
              () => true,
              () => false,
            )
          )
            return (await presence.get(repoPartition(REPO), WRITER)) === null;
        }
      }
      return false;
    };
    expect(await eventually(built, POLL_30S)).toBe(true);
    await deleteInUse(join(dataDir, 'cache', 'repos'));
    // A lock's owner starts with its node's name (the prefix of the node's directory names).
    const cLock = async () => {
      const lock = await presence.get(repoPartition(REPO), WRITER);
      return frozenDirs.some((d) => lock?.owner.startsWith(`${d}/`) || lock?.owner.startsWith(`${cId}/`));
    };
    const cloneDir = join(dataDir, 'clone-through-c');
    const cloning = git(['clone', '-q', `${c.authUrl}/${REPO}.git`, cloneDir], { home });
    expect(await eventually(cLock, { withinMs: 100_000, everyMs: 500 })).toBe(true);
    c.signalGroup('SIGSTOP');

    try {
      // Its lock lapses; the others push and clone as usual, and take the lock over.
      expect(await eventually(async () => !(await cLock()), POLL_30S)).toBe(true);
      const [viaA, viaB] = await Promise.all([pushes([a, b], 'via-a', 4), pushes([b, a], 'via-b', 4)]);
      expect([...viaA.all, ...viaB.all].filter((r) => r.code !== 0).map((r) => r.stderr)).toEqual([]);
      for (const node of [a, b]) {
        const refs = await refsVia(node);
        expect(refs.get('refs/heads/via-a')).toBe(viaA.acked.at(-1));
        expect(refs.get('refs/heads/via-b')).toBe(viaB.acked.at(-1));
        const copy = join(dataDir, `clone-while-frozen-${nodes.indexOf(node)}`);
        await gitOk(['clone', '-q', '--mirror', `${node.authUrl}/${REPO}.git`, copy], { home });
        expect(
          (await gitOk(['rev-parse', 'via-a', 'via-b', 'main'], { cwd: copy, home })).trim().split('\n'),
        ).toEqual([viaA.acked.at(-1), viaB.acked.at(-1), main]);
      }
      // Its directory's record expired too: the others' sweeps remove the directory.
      expect(
        await eventually(async () => {
          const now = await nodeDirs();
          return frozenDirs.every((name) => !now.has(name));
        }, POLL_30S),
      ).toBe(true);

      c.signalGroup('SIGCONT');
      // The clone it was building for when it froze completes, with the state it was asked for.
      const cloned = await cloning;
      expect(cloned.stderr).toBe('');
      expect(cloned.code).toBe(0);
      expect((await gitOk(['rev-parse', 'main'], { cwd: cloneDir, home })).trim()).toBe(main);
      await gitOk(['fsck', '--no-progress'], { cwd: cloneDir, home });

      // Fresh answers: what the others acknowledged while it was frozen.
      const refs = await refsVia(c);
      expect(refs.get('refs/heads/via-a')).toBe(viaA.acked.at(-1));
      expect(refs.get('refs/heads/via-b')).toBe(viaB.acked.at(-1));
      // A push through it lands, in a scratch directory made again under a new name.
      const viaC = await pushes([c], 'via-c', 2);
      expect(viaC.all.filter((r) => r.code !== 0).map((r) => r.stderr)).toEqual([]);
      const own = [...(await nodeDirs())].filter((name) => name.startsWith(`${cId}-`));
      expect(own.length).toBeGreaterThan(0);
      expect(own.filter((name) => frozenDirs.includes(name))).toEqual([]);

      // The log holds exactly what the clients were told: each acknowledged push, in order.
      const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
      const loaded = await wal.readIndexFully(REPO);
      if (loaded === null) throw new Error('repository missing');
      const items = await wal.itemsAfter(loaded.index, 0);
      const moves = (ref: string) =>
        items.flatMap((item) => item.updates.filter((u) => u.ref === ref).map((u) => u.new));
      expect(moves('refs/heads/via-a')).toEqual(viaA.acked);
      expect(moves('refs/heads/via-b')).toEqual(viaB.acked);
      expect(moves('refs/heads/via-c')).toEqual(viaC.acked);
      const final = await wal.allRefs(loaded.index);
      expect(final.get('refs/heads/main')?.oid).toBe(main);
    } finally {
      c.signalGroup('SIGCONT');
    }
  }, 180_000);
});

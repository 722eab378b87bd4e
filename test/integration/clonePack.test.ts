/**
 * Full clones answered by narwal itself: after upload-pack has served a generation's first full
 * clone, identical clones (protocol v0, v1 and v2, one after another or all at once) get the
 * cached pack without any git process packing, and are complete. Clones of a new generation,
 * clones that ask for something else, and a damaged cached pack go through git as before.
 * The refs of a state are listed by narwal from the state's refs (or by git, for a request it
 * leaves to git) and then answered from memory, so a repeated clone starts no git process at all. Which clones git served is read from git's own trace2 events
 * (NARWAL_TRACE_DIR).
 */
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLONE_SUFFIX, PACK_CACHE_DIR } from '../../lib/git/packCacheHook.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { livePaths } from '../helpers/liveTree.js';
import { type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let home: string;
let traceDir: string;
let server: RunningNarwal;
let work: string;
let url: string;

/** How many trace2 events of `kind` so far (over all git processes) have an argv that `matches`. */
async function traced(kind: string, matches: (arg: string) => boolean): Promise<number> {
  const dir = join(traceDir, 'git');
  let runs = 0;
  for (const name of await readdir(dir)) {
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
      if (!line.includes(`"event":"${kind}"`)) continue;
      const event = JSON.parse(line) as { argv?: string[] };
      if (event.argv?.some(matches)) runs++;
    }
  }
  return runs;
}

/** How many times upload-pack started its pack-objects hook so far. */
const hookRuns = () => traced('child_start', (a) => a.endsWith('pack-objects'));
/** How many upload-pack processes started so far (advertisements, ls-refs, fetches). */
const uploadPacks = () => traced('start', (a) => a === 'upload-pack');

/** Paths (under the cache directory) of the cached packs and their second names. */
async function cached(suffix: string): Promise<string[]> {
  const root = join(server.dataDir, 'cache');
  const names = await livePaths(root);
  return names
    .filter((n) => n.split('/').at(-2) === PACK_CACHE_DIR && n.endsWith(suffix))
    .map((n) => join(root, n));
}

async function cloneBare(dir: string, protocol: 0 | 1 | 2, extra: string[] = []): Promise<string> {
  const path = join(home, dir);
  await gitOk(['-c', `protocol.version=${protocol}`, 'clone', '--quiet', '--bare', ...extra, url, path], {
    home,
  });
  return path;
}

const refsOf = (gitDir: string) => gitOk(['--git-dir', gitDir, 'show-ref'], { home });

beforeAll(async () => {
  home = await makeHome();
  traceDir = await tempDataDir();
  server = await startInProcess({ env: { NARWAL_TRACE_DIR: traceDir } });
  work = await workRepo(home, 4, 'clonepack');
  await gitOk(['tag', '-a', 'v1', '-m', 'one'], { cwd: work, home });
  await gitOk(['branch', 'side'], { cwd: work, home });
  url = `${server.authUrl}/team/served.git`;
  await gitOk(['push', '--quiet', url, 'main', 'side', 'v1'], { cwd: work, home });
});
afterAll(async () => {
  await server?.stop();
});

describe('full clones from the cached pack', () => {
  it('has the protocol v2 capabilities from git once, at start, for every repository and state', async () => {
    const advertisements = () => traced('start', (a) => a === '--advertise-refs');
    // The push before this test advertised from the index; the one advertisement is the start's.
    expect(await advertisements()).toBe(1);
    await gitOk(['-c', 'protocol.version=2', 'ls-remote', url], { home });
    await gitOk(['-c', 'protocol.version=2', 'ls-remote', `${server.authUrl}/team/other-missing.git`], {
      home,
    }).catch(() => '');
    expect(await advertisements()).toBe(1);
  });

  it('serves identical clones over every protocol version without git packing', async () => {
    const first = await cloneBare('first.git', 2);
    const [alias] = await cached(CLONE_SUFFIX);
    const packs = await cached('.pack');
    expect(alias).toBeDefined();
    expect(packs).toHaveLength(1);
    // The second name is the same file, not a copy.
    expect((await stat(alias as string)).ino).toBe((await stat(packs[0] as string)).ino);

    const expected = await refsOf(first);
    for (const protocol of [2, 1, 0] as const) {
      // Every version asks for the same objects with the same options, so one pack serves all.
      const before = await hookRuns();
      const clone = await cloneBare(`served-v${protocol}.git`, protocol);
      expect(await hookRuns()).toBe(before);
      // v0 and v1 refs are advertised by git once, then from memory (see the next test).
      await cloneBare(`again-v${protocol}.git`, protocol);
      expect(await refsOf(clone)).toBe(expected);
      await gitOk(['--git-dir', clone, 'fsck', '--strict', '--no-dangling'], { home });
    }
  });

  it('answers the refs of a state it listed before from memory: a repeated clone runs no git', async () => {
    for (const protocol of [2, 1, 0] as const) {
      const before = await uploadPacks();
      const clone = await cloneBare(`no-git-v${protocol}.git`, protocol);
      expect(await uploadPacks(), `protocol ${protocol}`).toBe(before);
      await gitOk(['--git-dir', clone, 'fsck', '--strict', '--no-dangling'], { home });
    }
    // Another question about the same state narwal answers from the state's refs, as git would.
    const before = await uploadPacks();
    const listed = await gitOk(['ls-remote', '--heads', url], { home });
    expect(listed).toContain('refs/heads/side');
    expect(listed).not.toContain('refs/tags/v1');
    expect(await uploadPacks()).toBe(before);
  });

  it('serves a storm of identical clones, each complete', async () => {
    const before = await hookRuns();
    const dirs = await Promise.all(Array.from({ length: 8 }, (_, i) => cloneBare(`storm-${i}.git`, 2)));
    expect(await hookRuns()).toBe(before);
    const expected = await refsOf(dirs[0] as string);
    for (const dir of dirs) {
      expect(await refsOf(dir)).toBe(expected);
      await gitOk(['--git-dir', dir, 'fsck', '--strict', '--no-dangling'], { home });
    }
  });

  it('packs once for a storm of identical clones meeting a new generation', async () => {
    await commitFile(work, home, 'storm.txt', 'a generation the storm meets first\n');
    await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
    const before = await hookRuns();
    const dirs = await Promise.all(Array.from({ length: 8 }, (_, i) => cloneBare(`new-storm-${i}.git`, 2)));
    // The first clone's upload-pack packs; the others wait for its file, not in upload-packs of their own.
    expect(await hookRuns()).toBe(before + 1);
    const head = await gitOk(['rev-parse', 'main'], { cwd: work, home });
    for (const dir of dirs) {
      expect(await gitOk(['--git-dir', dir, 'rev-parse', 'main'], { home })).toBe(head);
      await gitOk(['--git-dir', dir, 'fsck', '--strict', '--no-dangling'], { home });
    }
  });

  it('packs the first shallow, partial or single-branch clone of a generation with git', async () => {
    for (const [i, extra] of [
      ['--depth', '1'],
      ['--filter=blob:none'],
      ['--single-branch', '--branch', 'side'],
    ].entries()) {
      const before = await hookRuns();
      const clone = await cloneBare(`other-${i}.git`, 2, extra);
      expect(await hookRuns()).toBe(before + 1);
      await gitOk(['--git-dir', clone, 'rev-parse', '--verify', 'HEAD'], { home });
    }
  });

  it('goes back to git for a new generation and for a damaged cached pack', async () => {
    await commitFile(work, home, 'next.txt', 'a new generation\n');
    await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
    const aliases = await cached(CLONE_SUFFIX);
    let before = await hookRuns();
    const fresh = await cloneBare('fresh.git', 2);
    expect(await hookRuns()).toBe(before + 1);
    const head = await gitOk(['rev-parse', 'main'], { cwd: work, home });
    expect(await gitOk(['--git-dir', fresh, 'rev-parse', 'main'], { home })).toBe(head);
    const added = (await cached(CLONE_SUFFIX)).filter((a) => !aliases.includes(a));
    expect(added).toHaveLength(1);

    // A second name that is not a pack is not sent: git serves the clone, and names it again.
    const alias = added[0] as string;
    await rm(alias);
    await writeFile(alias, 'PACK');
    before = await hookRuns();
    const repaired = await cloneBare('repaired.git', 2);
    expect(await hookRuns()).toBe(before + 1);
    await gitOk(['--git-dir', repaired, 'fsck', '--strict', '--no-dangling'], { home });
    const packs = await cached('.pack');
    const inodes = await Promise.all(packs.map(async (p) => (await stat(p)).ino));
    expect(inodes).toContain((await stat(alias)).ino);
    before = await hookRuns();
    await cloneBare('again.git', 2);
    expect(await hookRuns()).toBe(before);
  });
});

/**
 * Repeatable fetches (wants and no haves: CI checkouts with `--depth`, `--shallow-since`,
 * `--filter`, over protocol v2 and v0) answered from the kept answer: the first of a generation
 * goes to git, the next identical one is answered by narwal with no upload-pack and no
 * pack-objects, and leaves the client with the same repository git's own answer did: the same
 * refs, the same `.git/shallow`, the same objects, and `git fsck` clean. A storm of identical CI
 * fetches meeting a new generation costs one pack. Which git processes ran is read from git's own
 * trace2 events (NARWAL_TRACE_DIR).
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACK_CACHE_DIR } from '../../lib/git/packCacheHook.js';
import { gitOk, makeHome } from '../helpers/gitClient.js';
import { liveTree } from '../helpers/liveTree.js';
import { type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let home: string;
let traceDir: string;
let server: RunningNarwal;
let work: string;
let url: string;

/** How many trace2 events of `kind` so far (over all git processes) have an argv that `matches`. */
async function traced(kind: string, matches: (argv: string[]) => boolean): Promise<number> {
  const dir = join(traceDir, 'git');
  let runs = 0;
  for (const name of await readdir(dir)) {
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
      if (!line.includes(`"event":"${kind}"`)) continue;
      const event = JSON.parse(line) as { argv?: string[] };
      if (event.argv && matches(event.argv)) runs++;
    }
  }
  return runs;
}

/** How many times upload-pack started pack-objects (through the pack cache hook) so far. */
const packings = () => traced('child_start', (argv) => argv.some((a) => a.endsWith('pack-objects')));
/** How many upload-packs answered a fetch (not an advertisement) so far. */
const fetchUploadPacks = () =>
  traced('start', (argv) => argv.includes('upload-pack') && !argv.includes('--advertise-refs'));

/** A commit on a fixed date, so that `--shallow-since` asks the same question every run. */
async function commitOn(day: number): Promise<string> {
  const date = `2020-01-0${day}T10:00:00+0000`;
  const env = { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  await gitOk(['commit', '-q', '-m', `day ${day}`], {
    cwd: work,
    home,
    env,
  });
  return (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
}

/** A fresh repository, as actions/checkout starts from, with narwal as `origin`. */
async function freshRepo(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-ci-'));
  await gitOk(['init', '-q', dir], { home });
  await gitOk(['remote', 'add', 'origin', url], { cwd: dir, home });
  return dir;
}

/** Removes every generation's kept answers (the pack cache hook's files) from the server's cache. */
async function removeKeptPacks(): Promise<void> {
  const dirs = (await liveTree(server.dataDir)).filter(
    (entry) => entry.directory && entry.path.split('/').at(-1) === PACK_CACHE_DIR,
  );
  expect(dirs.length).toBeGreaterThan(0);
  for (const dir of dirs) await rm(join(server.dataDir, dir.path), { recursive: true, force: true });
}

/** What a fetch left in a client repository: refs, shallow boundary, objects; fsck must pass. */
async function stateOf(dir: string): Promise<{ refs: string; shallow: string | null; objects: string }> {
  await gitOk(['fsck', '--no-progress'], { cwd: dir, home });
  const objects = await gitOk(['cat-file', '--batch-all-objects', '--batch-check'], { cwd: dir, home });
  return {
    refs: await gitOk(['for-each-ref'], { cwd: dir, home }),
    shallow: await readFile(join(dir, '.git', 'shallow'), 'utf8').catch(() => null),
    objects: objects.split('\n').sort().join('\n'),
  };
}

/** actions/checkout's fetch of one commit (src/git-command-manager.ts), with more options. */
const checkout = (sha: string, extra: string[]) => [
  '-c',
  'protocol.version=2',
  'fetch',
  '--no-tags',
  '--prune',
  '--no-recurse-submodules',
  ...extra,
  'origin',
  `+${sha}:refs/remotes/origin/main`,
];

beforeAll(async () => {
  home = await makeHome();
  traceDir = await tempDataDir();
  server = await startInProcess({ env: { NARWAL_TRACE_DIR: traceDir } });
  work = await mkdtemp(join(tmpdir(), 'narwal-work-ci-'));
  await gitOk(['init', '-q', '-b', 'main', work], { home });
  for (const [i, name] of ['a', 'b', 'c', 'd', 'e'].entries()) {
    await writeFile(join(work, `${name}.txt`), `${name}\n`.repeat(50 + i));
    await gitOk(['add', '.'], { cwd: work, home });
    await commitOn(i + 1);
  }
  await gitOk(['tag', '-a', 'v1', '-m', 'one', 'HEAD~1'], { cwd: work, home });
  url = `${server.authUrl}/team/ci.git`;
  await gitOk(['push', '--quiet', url, 'main', 'v1'], { cwd: work, home });
});
afterAll(async () => {
  await server?.stop();
});

describe('repeatable fetches from the kept answer', () => {
  const head = () => gitOk(['rev-parse', 'main'], { cwd: work, home }).then((s) => s.trim());

  for (const [name, args] of [
    ['actions/checkout --depth=1', async () => checkout(await head(), ['--depth=1'])],
    [
      'actions/checkout --progress --depth=2',
      async () => checkout(await head(), ['--progress', '--depth=2']),
    ],
    ['--shallow-since', async () => checkout(await head(), ['--shallow-since=2020-01-03T12:00:00+0000'])],
    ['actions/checkout --filter=blob:none', async () => checkout(await head(), ['--filter=blob:none'])],
    [
      'protocol v0 --depth=3 of a branch',
      async () => [
        '-c',
        'protocol.version=0',
        'fetch',
        '--depth=3',
        'origin',
        'main:refs/remotes/origin/main',
      ],
    ],
    [
      'a v2 shallow clone',
      async () => ['-c', 'protocol.version=2', 'clone', '--quiet', '--depth=2', url, '.'],
    ],
  ] as const) {
    it(`gives the same repository as git's own answer, without git the second and third time (${name})`, async () => {
      const v0 = name.includes('v0');
      const before = await packings();
      // A clone makes its own repository in an empty directory; a fetch runs in a fresh one.
      const fetchDir = () =>
        name.includes('clone') ? mkdtemp(join(tmpdir(), 'narwal-ci-clone-')) : freshRepo();
      const firstDir = await fetchDir();
      await gitOk(await args(), { cwd: firstDir, home });
      // git answered, and packed.
      expect(await packings()).toBe(before + 1);

      const uploadPacks = await fetchUploadPacks();
      /** The same fetch again, in a fresh repository: answered without git. */
      const again = async (which: string) => {
        const dir = await fetchDir();
        await gitOk(await args(), { cwd: dir, home });
        expect(await packings(), `no pack-objects for the ${which}`).toBe(before + 1);
        // Protocol v0 asks for the shallow boundary in a round of its own first (no `done`),
        // which git answers without packing; in v2 the whole fetch is one request.
        if (!v0) expect(await fetchUploadPacks(), `no upload-pack for the ${which}`).toBe(uploadPacks);
        return dir;
      };
      const second = await again('second');
      // The third is answered from the answer kept in memory (StateAnswers.ts), with the kept
      // files gone: the same again, and still without git.
      await removeKeptPacks();
      const third = await again('third');

      const expected = await stateOf(firstDir);
      expect(await stateOf(second)).toEqual(expected);
      expect(await stateOf(third)).toEqual(expected);
      if (!name.includes('filter')) expect(expected.shallow).not.toBeNull();
      else expect(expected.objects).not.toContain(' blob ');
    });
  }

  it('answers a storm of identical CI fetches meeting a new generation with one pack', async () => {
    await writeFile(join(work, 'storm.txt'), 'a generation the storm meets first\n');
    await gitOk(['add', '.'], { cwd: work, home });
    const sha = await commitOn(6);
    await gitOk(['push', '--quiet', url, 'main'], { cwd: work, home });
    const before = await packings();
    const uploadPacks = await fetchUploadPacks();
    const dirs = await Promise.all(Array.from({ length: 6 }, () => freshRepo()));
    await Promise.all(
      dirs.map((dir) => gitOk(checkout(sha, ['--progress', '--depth=1']), { cwd: dir, home })),
    );
    expect(await packings()).toBe(before + 1);
    expect(await fetchUploadPacks()).toBe(uploadPacks + 1);
    const expected = await stateOf(dirs[0] as string);
    expect(expected.shallow).toBe(`${sha}\n`);
    for (const dir of dirs) expect(await stateOf(dir)).toEqual(expected);
  });
});

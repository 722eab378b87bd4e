/**
 * Client matrix, the `git` CLI: every operation a team's git uses against narwal, over protocol
 * v0, v1 and v2 where the protocol matters, each checked by content - refs equal to the source's,
 * `git fsck` clean, objects present or absent - against the express history or a small repository.
 * Where git itself can compute the expected answer (shallow boundaries, ls-remote patterns), the
 * same command against the fixture over file:// is the oracle.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import {
  expressRepo,
  fsckClean,
  hasObject,
  localRefs,
  missingObjects,
  parseRefLines,
  remoteRefs,
  revParse,
  tempDir,
} from '../../helpers/clientRepos.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
/** A bare clone of the fixture: the source of truth every result is compared with. Never modified. */
let express: string;
/** The fixture's heads and tags, pushed into narwal once. Tests that write use their own repositories. */
const EXPRESS = 'fixture/express';

const url = (repo: string) => `${server.authUrl}/${repo}.git`;
const proto = (version: number) => ['-c', `protocol.version=${version}`];

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  express = await expressRepo(home);
  await gitOk(['push', '--quiet', url(EXPRESS), 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], {
    cwd: express,
    home,
  });
});
afterAll(async () => {
  await server?.stop();
});

/** What the server answered first, from git's packet trace: `version 1`, `version 2`, or none (v0). */
async function announcedVersion(trace: string): Promise<string | null> {
  const text = await readFile(trace, 'utf8');
  return /git< version (\d)/.exec(text)?.[1] ?? null;
}

/** An empty bare repository that borrows the fixture's objects, so a fetch brings only what is new. */
async function borrowingRepo(): Promise<string> {
  const dir = join(await tempDir('borrow'), 'b.git');
  await gitOk(['init', '-q', '--bare', dir], { home });
  await writeFile(join(dir, 'objects', 'info', 'alternates'), `${join(express, 'objects')}\n`);
  return dir;
}

/** A hooks directory whose pre-push hook runs `script` once: after git read the refs, before it sends. */
async function prePushHook(script: string): Promise<string> {
  const dir = await tempDir('hooks');
  const hook = join(dir, 'pre-push');
  const done = join(dir, 'ran');
  await writeFile(
    hook,
    `#!/bin/sh\nunset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n[ -e '${done}' ] && exit 0\ntouch '${done}'\n${script}\n`,
  );
  await chmod(hook, 0o755);
  return dir;
}

describe.each([0, 1, 2])('protocol v%i', (version) => {
  it('pushes a real history, clones it, pushes a commit and fetches it', async () => {
    const repo = `proto/v${version}`;
    const trace = join(await tempDir('trace'), 'push');
    await gitOk(
      [
        ...proto(version),
        'push',
        '--quiet',
        url(repo),
        'refs/heads/*:refs/heads/*',
        'refs/tags/*:refs/tags/*',
      ],
      {
        cwd: express,
        home,
        env: { GIT_TRACE_PACKET: trace },
      },
    );
    // receive-pack has no v2 (gitprotocol-v2(5)): git asks for v2 and falls back to v0 for a push.
    expect(await announcedVersion(trace)).toBe(version === 1 ? '1' : null);
    expect(await remoteRefs(url(repo), home)).toEqual(await localRefs(express, home));

    const clone = join(await tempDir('clone'), 'c');
    const cloneTrace = join(await tempDir('trace'), 'clone');
    await gitOk([...proto(version), 'clone', '--quiet', url(repo), clone], {
      home,
      env: { GIT_TRACE_PACKET: cloneTrace },
    });
    expect(await announcedVersion(cloneTrace)).toBe(version === 0 ? null : String(version));
    await fsckClean(clone, home);
    expect(await revParse(clone, home, 'HEAD')).toBe(await revParse(express, home, 'master'));
    expect(await revParse(clone, home, 'origin/4.x')).toBe(await revParse(express, home, '4.x'));
    expect(await revParse(clone, home, '4.18.2^{commit}')).toBe(
      await revParse(express, home, '4.18.2^{commit}'),
    );

    const next = await commitFile(clone, home, `v${version}.txt`, `pushed over v${version}\n`);
    await gitOk([...proto(version), 'push', '--quiet', 'origin', 'HEAD:master'], { cwd: clone, home });
    expect((await remoteRefs(url(repo), home)).get('refs/heads/master')).toBe(next);

    const fetcher = await borrowingRepo();
    const fetchTrace = join(await tempDir('trace'), 'fetch');
    await gitOk([...proto(version), 'fetch', '--quiet', url(repo), 'refs/heads/*:refs/heads/*'], {
      cwd: fetcher,
      home,
      env: { GIT_TRACE_PACKET: fetchTrace },
    });
    expect(await announcedVersion(fetchTrace)).toBe(version === 0 ? null : String(version));
    expect(await revParse(fetcher, home, 'refs/heads/master')).toBe(next);
    expect(await gitOk(['show', `master:v${version}.txt`], { cwd: fetcher, home })).toBe(
      `pushed over v${version}\n`,
    );
    await fsckClean(fetcher, home, true);

    // The repository as it was before that push: REPO.git@SEQ, over the same protocol version.
    await server.app.idle();
    const loaded = await server.app.wal.readIndexFully(repo);
    const items = loaded ? await server.app.wal.itemsAfter(loaded.index, 0) : [];
    const before = (items.filter((item) => item.kind !== 'checkpoint').at(-1)?.seq ?? 1) - 1;
    const past = join(await tempDir('past'), 'p');
    await gitOk([...proto(version), 'clone', '--quiet', `${url(repo)}@${before}`, past], { home });
    expect(await revParse(past, home, 'HEAD')).toBe(await revParse(express, home, 'master'));
    await fsckClean(past, home);
  });
});

describe('shallow clone', () => {
  it.each([0, 2])(
    'clones --depth 1, deepens, and clones --shallow-since like git does locally (v%i)',
    async (version) => {
      const root = await tempDir('shallow');
      const oracleUrl = `file://${express}`;
      const shallowOf = async (dir: string) =>
        (await readFile(join(dir, '.git', 'shallow'), 'utf8')).split('\n').filter(Boolean).sort();
      const count = async (dir: string) =>
        Number((await gitOk(['rev-list', '--count', 'HEAD'], { cwd: dir, home })).trim());

      const ours = join(root, 'ours');
      const oracle = join(root, 'oracle');
      await gitOk([...proto(version), 'clone', '--quiet', '--depth', '1', url(EXPRESS), ours], { home });
      await gitOk([...proto(version), 'clone', '--quiet', '--depth', '1', oracleUrl, oracle], { home });
      expect(await count(ours)).toBe(1);
      expect(await shallowOf(ours)).toEqual([await revParse(express, home, 'master')]);
      await fsckClean(ours, home);

      await gitOk([...proto(version), 'fetch', '--deepen', '5'], { cwd: ours, home });
      await gitOk([...proto(version), 'fetch', '--quiet', '--deepen', '5'], { cwd: oracle, home });
      expect(await count(ours)).toBeGreaterThan(5);
      expect(await count(ours)).toBe(await count(oracle));
      expect(await shallowOf(ours)).toEqual(await shallowOf(oracle));
      await fsckClean(ours, home);

      // The commit date of master~40, as seconds since the epoch.
      const since = (await gitOk(['log', '-1', '--format=%ct', 'master~40'], { cwd: express, home })).trim();
      const sinceOurs = join(root, 'since-ours');
      const sinceOracle = join(root, 'since-oracle');
      await gitOk(
        [...proto(version), 'clone', '--quiet', `--shallow-since=@${since}`, url(EXPRESS), sinceOurs],
        { home },
      );
      await gitOk(
        [...proto(version), 'clone', '--quiet', `--shallow-since=@${since}`, oracleUrl, sinceOracle],
        { home },
      );
      expect(await count(sinceOurs)).toBeGreaterThanOrEqual(40);
      expect(await count(sinceOurs)).toBe(await count(sinceOracle));
      expect(await shallowOf(sinceOurs)).toEqual(await shallowOf(sinceOracle));
      await fsckClean(sinceOurs, home);
    },
  );
});

describe('partial clone', () => {
  it.each([0, 2])(
    'clones --filter=blob:none and fetches the blobs of an older commit on checkout (v%i)',
    async (version) => {
      const dir = join(await tempDir('partial'), 'p');
      await gitOk([...proto(version), 'clone', '--quiet', '--filter=blob:none', url(EXPRESS), dir], { home });
      expect((await gitOk(['config', 'remote.origin.promisor'], { cwd: dir, home })).trim()).toBe('true');
      const old = await revParse(express, home, 'master~300');
      const missingBefore = await missingObjects(dir, home, old);
      expect(missingBefore.length).toBeGreaterThan(100);

      await gitOk([...proto(version), 'checkout', '--quiet', old], { cwd: dir, home });
      // The index holds exactly the fixture's tree, and every file in the work tree hashes to it.
      const tree = await gitOk(['ls-tree', '-r', old], { cwd: express, home });
      const index = await gitOk(['ls-files', '--stage'], { cwd: dir, home });
      const blobsOf = (out: string, field: number) =>
        out
          .split('\n')
          .filter(Boolean)
          .map((l) => `${l.split(/\s+/)[field]} ${l.split('\t')[1]}`)
          .sort();
      expect(blobsOf(index, 1)).toEqual(blobsOf(tree, 2));
      expect(await gitOk(['status', '--porcelain'], { cwd: dir, home })).toBe('');
      const missingAfter = await missingObjects(dir, home, old);
      expect(missingAfter.length).toBeLessThan(missingBefore.length);
      for (const line of blobsOf(tree, 2)) expect(missingAfter).not.toContain(line.split(' ')[0]);
      await fsckClean(dir, home);
    },
  );
});

describe('mirror', () => {
  it('clones --mirror every ref, and push --mirror makes the server equal to the mirror, deletions included', async () => {
    const mirror = join(await tempDir('mirror'), 'm.git');
    await gitOk(['clone', '--quiet', '--mirror', url(EXPRESS), mirror], { home });
    expect(await localRefs(mirror, home)).toEqual(await localRefs(express, home));
    await fsckClean(mirror, home);

    await gitOk(['push', '--quiet', '--mirror', url('mirror/copy')], { cwd: mirror, home });
    expect(await remoteRefs(url('mirror/copy'), home)).toEqual(await localRefs(mirror, home));

    // Delete a branch and a tag, move one branch, add one: a mirror push does all four.
    await gitOk(['update-ref', '-d', 'refs/heads/4.x'], { cwd: mirror, home });
    await gitOk(['update-ref', '-d', 'refs/tags/4.0.0'], { cwd: mirror, home });
    await gitOk(['update-ref', 'refs/heads/5.x', 'refs/heads/5.x~3'], { cwd: mirror, home });
    await gitOk(['update-ref', 'refs/heads/from-mirror', 'refs/heads/master~1'], { cwd: mirror, home });
    await gitOk(['push', '--quiet', '--mirror', url('mirror/copy')], { cwd: mirror, home });
    const after = await remoteRefs(url('mirror/copy'), home);
    expect(after).toEqual(await localRefs(mirror, home));
    expect(after.has('refs/heads/4.x')).toBe(false);
    expect(after.has('refs/tags/4.0.0')).toBe(false);
    expect(after.get('refs/heads/from-mirror')).toBe(await revParse(express, home, 'master~1'));
  });
});

describe('fetch of a single ref', () => {
  it('fetches refs/heads/x into FETCH_HEAD and a named ref, and nothing from other branches', async () => {
    const dir = join(await tempDir('single'), 's.git');
    await gitOk(['init', '-q', '--bare', dir], { home });
    await gitOk(['fetch', '--quiet', '--no-tags', url(EXPRESS), 'refs/heads/4.x'], { cwd: dir, home });
    const fetchHead = await readFile(join(dir, 'FETCH_HEAD'), 'utf8');
    expect(fetchHead.split('\t')[0]).toBe(await revParse(express, home, '4.x'));
    expect(fetchHead.split('\n').filter(Boolean)).toHaveLength(1);
    expect(await hasObject(dir, home, await revParse(express, home, '4.x'))).toBe(true);
    // A commit only master has (merges 5.x work never reached 4.x) was not sent.
    const onlyMaster = (await gitOk(['rev-list', '-1', 'master', '^4.x'], { cwd: express, home })).trim();
    expect(await hasObject(dir, home, onlyMaster)).toBe(false);
    await fsckClean(dir, home);

    await gitOk(['fetch', '--quiet', '--no-tags', url(EXPRESS), 'refs/heads/5.x:refs/heads/five'], {
      cwd: dir,
      home,
    });
    expect(await revParse(dir, home, 'refs/heads/five')).toBe(await revParse(express, home, '5.x'));
    expect(await localRefs(dir, home)).toEqual(
      new Map([['refs/heads/five', await revParse(express, home, '5.x')]]),
    );
  });
});

describe('ls-remote', () => {
  it.each([0, 1, 2])(
    'lists what git lists for the fixture, with and without patterns (v%i)',
    async (version) => {
      const cases: string[][] = [
        [],
        ['--symref', 'HEAD'],
        ['--heads'],
        ['--tags'],
        ['--tags', '--refs'],
        ['master'],
        ['refs/tags/4.*', 'v5.*'],
        ['heads/5.*', 'v4.18.?'],
        ['no-such-ref'],
      ];
      for (const args of cases) {
        const [options, patterns] = [
          args.filter((a) => a.startsWith('--')),
          args.filter((a) => !a.startsWith('--')),
        ];
        const ours = await git([...proto(version), 'ls-remote', ...options, url(EXPRESS), ...patterns], {
          home,
        });
        const oracle = await git(
          [...proto(version), 'ls-remote', ...options, `file://${express}`, ...patterns],
          {
            home,
          },
        );
        expect(ours.stdout, args.join(' ')).toBe(oracle.stdout);
        expect(ours.code, args.join(' ')).toBe(oracle.code);
      }
      const all = parseRefLines(
        (await gitOk([...proto(version), 'ls-remote', url(EXPRESS)], { home })).toString(),
      );
      expect(all.size).toBe(374); // 323 refs, 50 peeled tags, HEAD
    },
  );
});

describe('tags and deletions', () => {
  it('pushes lightweight and annotated tags, then deletes tags and a branch', async () => {
    const work = await workRepo(home, 2, 'tags');
    const repo = url('tags/repo');
    await gitOk(['push', '--quiet', repo, 'main', 'main:feature'], { cwd: work, home });
    const head = await revParse(work, home, 'HEAD');
    await gitOk(['tag', 'light'], { cwd: work, home });
    await gitOk(['tag', '-a', 'v1.0', '-m', 'release 1.0'], { cwd: work, home });
    const tagObject = await revParse(work, home, 'refs/tags/v1.0');
    await gitOk(['push', '--quiet', repo, 'light', 'v1.0'], { cwd: work, home });
    const refs = await remoteRefs(repo, home);
    expect(refs.get('refs/tags/light')).toBe(head);
    expect(refs.get('refs/tags/v1.0')).toBe(tagObject);
    expect(refs.get('refs/tags/v1.0^{}')).toBe(head);

    const clone = join(await tempDir('tags'), 'c');
    await gitOk(['clone', '--quiet', repo, clone], { home });
    expect((await gitOk(['cat-file', '-t', 'v1.0'], { cwd: clone, home })).trim()).toBe('tag');
    expect(await gitOk(['cat-file', 'tag', 'v1.0'], { cwd: clone, home })).toContain('release 1.0');
    expect((await gitOk(['cat-file', '-t', 'light'], { cwd: clone, home })).trim()).toBe('commit');
    await fsckClean(clone, home);

    await gitOk(['push', '--quiet', repo, ':refs/tags/light'], { cwd: work, home });
    await gitOk(['push', '--quiet', repo, '--delete', 'refs/tags/v1.0', 'refs/heads/feature'], {
      cwd: work,
      home,
    });
    expect(await remoteRefs(repo, home)).toEqual(new Map([['refs/heads/main', head]]));
    await gitOk(['fetch', '--quiet', '--prune', '--prune-tags', 'origin'], { cwd: clone, home });
    expect(await localRefs(clone, home)).toEqual(
      new Map([
        ['refs/heads/main', head],
        ['refs/remotes/origin/HEAD', head],
        ['refs/remotes/origin/main', head],
      ]),
    );
    // Deleting what is not there succeeds, as with git's own receive-pack, and writes no entry.
    const seq = (await server.app.wal.readIndex('tags/repo'))?.index.seq;
    await gitOk(['push', '--quiet', repo, '--delete', 'refs/tags/light'], { cwd: work, home });
    expect((await server.app.wal.readIndex('tags/repo'))?.index.seq).toBe(seq);
    expect(await remoteRefs(repo, home)).toEqual(new Map([['refs/heads/main', head]]));
  });
});

describe('--atomic', () => {
  it('lands all refs or none when one of them moves between git reading the refs and pushing', async () => {
    const work = await workRepo(home, 1, 'atomic');
    const repo = url('atomic/repo');
    await gitOk(['push', '--quiet', repo, 'main', 'main:b1'], { cwd: work, home });
    const base = await revParse(work, home, 'HEAD');
    const other = join(await tempDir('atomic'), 'other');
    await gitOk(['clone', '--quiet', repo, other], { home });
    const theirs = await commitFile(other, home, 'theirs.txt', 'theirs\n');

    const mine = await commitFile(work, home, 'mine.txt', 'mine\n');
    // After git read b1 = base, someone else moves b1: the server sees a stale old value for b1.
    const hooks = await prePushHook(`git -C '${other}' push --quiet '${repo}' main:b1`);
    const refused = await git(
      ['-c', `core.hooksPath=${hooks}`, 'push', '--atomic', repo, 'main', 'main:b1'],
      {
        cwd: work,
        home,
      },
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/b1.*fetch first|atomic/);
    expect(await remoteRefs(repo, home)).toEqual(
      new Map([
        ['refs/heads/b1', theirs],
        ['refs/heads/main', base],
      ]),
    );

    // The same race without --atomic: main lands, b1 does not.
    const again = await prePushHook(`git -C '${other}' push --quiet --force '${repo}' main:b1`);
    await gitOk(['-C', other, 'commit', '-q', '--amend', '-m', 'theirs again'], { home });
    const theirsAgain = await revParse(other, home, 'HEAD');
    const split = await git(['-c', `core.hooksPath=${again}`, 'push', '--force', repo, 'main', 'main:b1'], {
      cwd: work,
      home,
    });
    expect(split.code).not.toBe(0);
    expect(split.stderr).toMatch(/b1.*fetch first/);
    expect(await remoteRefs(repo, home)).toEqual(
      new Map([
        ['refs/heads/b1', theirsAgain],
        ['refs/heads/main', mine],
      ]),
    );

    // With nothing racing, the atomic push of both lands.
    await gitOk(['push', '--quiet', '--atomic', '--force', repo, 'main', 'main:b1'], { cwd: work, home });
    expect(await remoteRefs(repo, home)).toEqual(
      new Map([
        ['refs/heads/b1', mine],
        ['refs/heads/main', mine],
      ]),
    );
  });
});

describe('--force-with-lease', () => {
  it('rewrites a branch when the lease holds, and refuses when it does not (seen by git, or only by the server)', async () => {
    const work = await workRepo(home, 2, 'lease');
    const repo = url('lease/repo');
    await gitOk(['push', '--quiet', repo, 'main'], { cwd: work, home });
    const pushed = await revParse(work, home, 'HEAD');

    await gitOk(['commit', '-q', '--amend', '-m', 'rewritten'], { cwd: work, home });
    const rewritten = await revParse(work, home, 'HEAD');
    await gitOk(['push', '--quiet', `--force-with-lease=main:${pushed}`, repo, 'main'], { cwd: work, home });
    expect((await remoteRefs(repo, home)).get('refs/heads/main')).toBe(rewritten);

    // The lease names a value the branch no longer has: git refuses before sending anything.
    await gitOk(['commit', '-q', '--amend', '-m', 'rewritten twice'], { cwd: work, home });
    const stale = await git(['push', `--force-with-lease=main:${pushed}`, repo, 'main'], { cwd: work, home });
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toContain('stale info');
    expect((await remoteRefs(repo, home)).get('refs/heads/main')).toBe(rewritten);

    // The lease holds when git reads the refs, then the branch moves: only the server can refuse.
    const other = join(await tempDir('lease'), 'other');
    await gitOk(['clone', '--quiet', repo, other], { home });
    const theirs = await commitFile(other, home, 'theirs.txt', 'theirs\n');
    const hooks = await prePushHook(`git -C '${other}' push --quiet '${repo}' main`);
    const raced = await git(
      ['-c', `core.hooksPath=${hooks}`, 'push', `--force-with-lease=main:${rewritten}`, repo, 'main'],
      { cwd: work, home },
    );
    expect(raced.code).not.toBe(0);
    expect(raced.stderr).toMatch(/main.*fetch first/);
    expect((await remoteRefs(repo, home)).get('refs/heads/main')).toBe(theirs);
  });
});

describe('a push bigger than http.postBuffer', () => {
  it('arrives as git probe POST and then a chunked request, and every byte lands', async () => {
    const work = await workRepo(home, 1, 'big');
    const data = randomBytes(4 * 1024 * 1024);
    await commitFile(work, home, 'random.bin', data.toString('base64'));
    const trace = join(await tempDir('trace'), 'curl');
    await gitOk(['-c', 'http.postBuffer=65536', 'push', '--quiet', url('big/repo'), 'main'], {
      cwd: work,
      home,
      env: { GIT_TRACE_CURL: trace, GIT_TRACE_CURL_NO_DATA: '1' },
    });
    const sent = await readFile(trace, 'utf8');
    const posts = sent.split('=> Send header: POST ').slice(1);
    const receivePosts = posts.filter((p) => p.startsWith('/big/repo.git/git-receive-pack'));
    // gitprotocol-http(5) via remote-curl.c: the 4-byte probe (a flush-pkt), then the pack chunked.
    expect(receivePosts).toHaveLength(2);
    expect(receivePosts[0]).toMatch(/Content-Length: 4\r?\n/);
    expect(receivePosts[1]).toMatch(/Transfer-Encoding: chunked\r?\n/);

    const clone = join(await tempDir('big'), 'c');
    await gitOk(['clone', '--quiet', url('big/repo'), clone], { home });
    const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
    expect(sha(await readFile(join(clone, 'random.bin')))).toBe(sha(data.toString('base64')));
    expect(await revParse(clone, home, 'HEAD')).toBe(await revParse(work, home, 'HEAD'));
    await fsckClean(clone, home);
  });
});

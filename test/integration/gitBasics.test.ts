/**
 * The real git CLI against narwal on the embedded store: the everyday operations, each checked
 * both from git's side and in the log.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
});

async function logOf(repo: string) {
  const loaded = await server.app.wal.readIndex(repo);
  if (!loaded) throw new Error(`no repo ${repo}`);
  return { index: loaded.index, items: await server.app.wal.itemsAfter(loaded.index, 0) };
}

async function remoteRefs(url: string, extra: string[] = []): Promise<Map<string, string>> {
  const out = await gitOk([...extra, 'ls-remote', url], { home });
  return new Map(
    out
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const [oid = '', ref = ''] = l.split('\t');
        return [ref, oid];
      }),
  );
}

describe('git over narwal', () => {
  it('clones an empty repository, then pushes into it and clones the result', async () => {
    await server.app.wal.createRepo('team/empty', { public: false });
    const dir = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), 'empty');
    const cloned = await git(['clone', `${server.authUrl}/team/empty.git`, dir], { home });
    expect(cloned.code).toBe(0);
    expect(cloned.stderr).toContain('empty repository');
    const head = await commitFile(dir, home, 'readme.md', 'hello\n');
    await gitOk(['push', 'origin', 'HEAD:main'], { cwd: dir, home });
    const again = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), 'again');
    await gitOk(['clone', `${server.authUrl}/team/empty.git`, again], { home });
    expect((await gitOk(['rev-parse', 'HEAD'], { cwd: again, home })).trim()).toBe(head);
    const { items } = await logOf('team/empty');
    expect(items).toHaveLength(1);
    expect(items[0]?.updates).toEqual([{ ref: 'refs/heads/main', old: '0'.repeat(40), new: head }]);
    expect(items[0]?.who.token).toBe('admin');
  });

  it('creates a repository on first push, and fetch brings new commits', async () => {
    const work = await workRepo(home, 3);
    const url = `${server.authUrl}/alice/created.git`;
    await gitOk(['push', url, 'main'], { cwd: work, home });
    const clone = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), 'c');
    await gitOk(['clone', url, clone], { home });
    const next = await commitFile(work, home, 'more.txt', 'more\n');
    await gitOk(['push', url, 'main'], { cwd: work, home });
    await gitOk(['fetch', 'origin'], { cwd: clone, home });
    expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone, home })).trim()).toBe(next);
    const { index } = await logOf('alice/created');
    expect(index.seq).toBe(2);
    expect(index.head).toBe('refs/heads/main');
  });

  it('force-pushes, deletes branches, and pushes tags', async () => {
    const work = await workRepo(home, 2);
    const url = `${server.authUrl}/alice/history.git`;
    await gitOk(['push', url, 'main', 'main:feature'], { cwd: work, home });
    await gitOk(['tag', '-a', 'v1.0', '-m', 'release 1.0'], { cwd: work, home });
    await gitOk(['tag', 'light'], { cwd: work, home });
    await gitOk(['push', url, '--tags'], { cwd: work, home });
    let refs = await remoteRefs(url);
    expect(refs.has('refs/tags/v1.0')).toBe(true);
    expect(refs.has('refs/tags/v1.0^{}')).toBe(true);
    expect(refs.has('refs/tags/light')).toBe(true);

    // Rewrite history: a plain push is refused by git, a forced one lands.
    await gitOk(['reset', '--hard', 'HEAD~1'], { cwd: work, home });
    const rewritten = await commitFile(work, home, 'other.txt', 'other\n');
    const refused = await git(['push', url, 'main'], { cwd: work, home });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/non-fast-forward|rejected/);
    await gitOk(['push', '--force', url, 'main'], { cwd: work, home });
    await gitOk(['push', url, '--delete', 'feature'], { cwd: work, home });
    refs = await remoteRefs(url);
    expect(refs.get('refs/heads/main')).toBe(rewritten);
    expect(refs.has('refs/heads/feature')).toBe(false);

    const { items } = await logOf('alice/history');
    const last = items[items.length - 1];
    expect(last?.updates).toEqual([
      { ref: 'refs/heads/feature', old: expect.any(String), new: '0'.repeat(40) },
    ]);
  });

  it('lands an --atomic push as one entry, and refuses all of it when one ref is stale', async () => {
    const work = await workRepo(home, 1);
    const url = `${server.authUrl}/alice/atomic.git`;
    await gitOk(['push', url, 'main'], { cwd: work, home });
    await commitFile(work, home, 'a.txt', 'a\n');
    await gitOk(['push', '--atomic', url, 'main', 'main:b1', 'main:b2'], { cwd: work, home });
    let log = await logOf('alice/atomic');
    expect(log.items).toHaveLength(2);
    expect(log.items[1]?.updates.map((u) => u.ref).sort()).toEqual([
      'refs/heads/b1',
      'refs/heads/b2',
      'refs/heads/main',
    ]);
    expect(log.items[1]?.atomic).toBe(true);

    // Someone else moves b1; an atomic push of main + b1 from the stale clone changes nothing.
    const other = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), 'o');
    await gitOk(['clone', url, other], { home });
    await gitOk(['checkout', '-q', 'b1'], { cwd: other, home });
    await commitFile(other, home, 'theirs.txt', 'theirs\n');
    await gitOk(['push', 'origin', 'b1'], { cwd: other, home });
    await commitFile(work, home, 'mine.txt', 'mine\n');
    const refused = await git(['push', '--atomic', url, 'main', 'main:b1'], { cwd: work, home });
    expect(refused.code).not.toBe(0);
    log = await logOf('alice/atomic');
    expect(log.items).toHaveLength(3);
  });

  it('answers the same refs over protocol v0, v1 and v2', async () => {
    const work = await workRepo(home, 2);
    const url = `${server.authUrl}/alice/protocols.git`;
    await gitOk(['push', url, 'main', 'main:dev'], { cwd: work, home });
    const v0 = await remoteRefs(url, ['-c', 'protocol.version=0']);
    const v1 = await remoteRefs(url, ['-c', 'protocol.version=1']);
    const v2 = await remoteRefs(url, ['-c', 'protocol.version=2']);
    expect(v0.get('refs/heads/dev')).toBeDefined();
    expect(v1).toEqual(v0);
    expect(v2).toEqual(v0);
    for (const version of ['0', '2']) {
      const dir = join(await mkdtemp(join(tmpdir(), 'narwal-clone-')), `v${version}`);
      await gitOk(['-c', `protocol.version=${version}`, 'clone', url, dir], { home });
      await gitOk(['fsck', '--strict'], { cwd: dir, home });
      expect(await gitOk(['log', '--oneline'], { cwd: dir, home })).toContain('add file-1.txt');
    }
  });

  it('treats a push of refs that already hold the pushed values as a no-op without an entry', async () => {
    const work = await workRepo(home, 1);
    const url = `${server.authUrl}/alice/redeliver.git`;
    await gitOk(['push', url, 'main'], { cwd: work, home });
    const before = (await logOf('alice/redeliver')).index.seq;
    const again = await git(['push', url, 'main'], { cwd: work, home });
    expect(again.code).toBe(0);
    expect((await logOf('alice/redeliver')).index.seq).toBe(before);
  });
});

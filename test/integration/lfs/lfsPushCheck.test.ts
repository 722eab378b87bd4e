/**
 * A push whose new commits point at Git LFS objects the store lacks is refused, ref by ref, with
 * the objects named and `git lfs push --all origin` (git-lfs's pre-push upload skipped with
 * GIT_LFS_SKIP_PUSH, as a client without git-lfs installed would push); once the objects are
 * uploaded it lands. The per-repository setting turns the refusal off, and is an entry of the log.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import { lfsObjectKey } from '../../../lib/wal/keys.js';
import { REFRESH_AFTER_MS } from '../../../lib/wal/putImmutable.js';
import { commitFile, git, gitOk } from '../../helpers/gitClient.js';
import { fileSha256, makeLfsHome, useToken } from '../../helpers/lfsClient.js';
import { narwalCli } from '../../helpers/narwalCli.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let dataDir: string;
let home: string;
const dirs: string[] = [];
const SKIP = { GIT_LFS_SKIP_PUSH: '1' };
const auth = { authorization: `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}` };

beforeAll(async () => {
  dataDir = await tempDataDir();
  server = await startInProcess({ dataDir });
  home = await makeLfsHome();
});
afterAll(async () => {
  await server?.stop();
  for (const dir of [home, dataDir, ...dirs]) if (dir) await rm(dir, { recursive: true, force: true });
});

/** A repository with `origin` at `repo` on the server and `*.bin` tracked by LFS. */
async function lfsWork(repo: string): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'narwal-lfs-check-'));
  dirs.push(work);
  await gitOk(['init', '-q', '-b', 'main', work], { home });
  await useToken(work, home, ADMIN_TOKEN);
  await gitOk(['remote', 'add', 'origin', `${server.url}/${repo}.git`], { cwd: work, home });
  await gitOk(['lfs', 'track', '*.bin'], { cwd: work, home });
  await gitOk(['add', '.gitattributes'], { cwd: work, home });
  await gitOk(['commit', '-q', '-m', 'track'], { cwd: work, home });
  return work;
}

async function addBinary(work: string, name: string): Promise<string> {
  await writeFile(join(work, name), randomBytes(4000));
  await gitOk(['add', name], { cwd: work, home });
  await gitOk(['commit', '-q', '-m', `add ${name}`], { cwd: work, home });
  return fileSha256(join(work, name));
}

const seqOf = async (repo: string) => (await server.app.wal.readIndexFully(repo))?.index.seq ?? null;

describe('the LFS push check', () => {
  it('refuses a push pointing at objects the store lacks, naming them and the fix; creates nothing', async () => {
    const work = await lfsWork('check/new');
    const oid = await addBinary(work, 'model.bin');
    const refused = await git(['push', 'origin', 'main'], { cwd: work, home, env: SKIP });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `! [remote rejected] main -> main (narwal: LFS objects missing on the server: model.bin (sha256:${oid.slice(0, 12)}); upload them with git lfs push --all origin, then push again)`,
    );
    // The push was to a repository that did not exist: it still does not.
    expect(await seqOf('check/new')).toBeNull();

    await gitOk(['lfs', 'push', '--all', 'origin'], { cwd: work, home });
    await gitOk(['push', 'origin', 'main'], { cwd: work, home, env: SKIP });
    const loaded = await server.app.wal.readIndexFully('check/new');
    if (!loaded) throw new Error('no repository');
    await server.app.store.stat(lfsObjectKey('check/new', oid));
    // The entry records the objects its packs point at.
    const [item] = await server.app.wal.itemsAfter(loaded.index, 0);
    expect(item?.lfs).toBe(1);
    expect((await server.app.wal.entry(item?.key ?? '')).lfs).toEqual([oid]);
  });

  it('refuses only the refs that reach a missing object, and a whole atomic push', async () => {
    const work = await lfsWork('check/refs');
    await addBinary(work, 'first.bin');
    await gitOk(['push', 'origin', 'main'], { cwd: work, home });
    const before = await seqOf('check/refs');
    await gitOk(['checkout', '-q', '-b', 'docs'], { cwd: work, home });
    await commitFile(work, home, 'README.md', 'no binaries here\n');
    await gitOk(['checkout', '-q', 'main'], { cwd: work, home });
    const missing = await addBinary(work, 'second.bin');

    const atomic = await git(['push', '--atomic', 'origin', 'main', 'docs'], { cwd: work, home, env: SKIP });
    expect(atomic.code).not.toBe(0);
    expect(atomic.stderr).toContain(
      `main -> main (narwal: LFS objects missing on the server: second.bin (sha256:${missing.slice(0, 12)})`,
    );
    expect(atomic.stderr).toMatch(/docs -> docs \(atomic push failure\)/);
    expect(await seqOf('check/refs')).toBe(before);

    const split = await git(['push', 'origin', 'main', 'docs'], { cwd: work, home, env: SKIP });
    expect(split.code).not.toBe(0);
    expect(split.stderr).toMatch(/\* \[new branch\]\s+docs -> docs/);
    expect(split.stderr).toContain(
      '! [remote rejected] main -> main (narwal: LFS objects missing on the server: second.bin',
    );
    const loaded = await server.app.wal.readIndexFully('check/refs');
    if (!loaded) throw new Error('no repository');
    expect([...(await server.app.wal.allRefs(loaded.index)).keys()].sort()).toEqual([
      'refs/heads/docs',
      'refs/heads/main',
    ]);
    expect(loaded.index.seq).toBe((before ?? 0) + 1);
  });

  it('lets pushes through when the repository turns the check off, and records who did', async () => {
    const repo = 'check/off';
    const work = await lfsWork(repo);
    await gitOk(['push', 'origin', 'main'], { cwd: work, home });
    const settingsUrl = `${server.url}/api/v1/repos/${repo}/-/settings`;
    const put = (body: string, headers: Record<string, string> = auth) =>
      fetch(settingsUrl, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
    expect(await (await fetch(settingsUrl, { headers: auth })).json()).toMatchObject({
      settings: { lfsPushCheck: true },
    });
    const writer = (
      await server.app.tokens.create({ name: 'writer', grants: [{ scope: 'write', pattern: 'check/*' }] })
    ).token;
    const denied = await put('{"lfsPushCheck":false}', {
      authorization: `Basic ${Buffer.from(`x:${writer}`).toString('base64')}`,
    });
    expect(denied.status).toBe(403);
    expect((await put('{"lfsPushCheck":"no"}')).status).toBe(400);
    expect((await put('{"lfsPushChecks":false}')).status).toBe(400);
    const changed = await put('{"lfsPushCheck":false}');
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({ settings: { lfsPushCheck: false }, entry: 2 });

    const oid = await addBinary(work, 'unchecked.bin');
    await gitOk(['push', 'origin', 'main'], { cwd: work, home, env: SKIP });
    const loaded = await server.app.wal.readIndexFully(repo);
    if (!loaded) throw new Error('no repository');
    const items = await server.app.wal.itemsAfter(loaded.index, 0);
    expect(items.map((i) => i.kind ?? 'push')).toEqual(['push', 'settings', 'push']);
    expect(items[1]?.settings).toEqual({ lfsPushCheck: false });
    expect(items[2]?.lfs).toBe(1);
    expect((await server.app.wal.entry(items[2]?.key ?? '')).lfs).toEqual([oid]);
    const log = await narwalCli(['log', repo], { dataDir });
    expect(log.stdout).toMatch(/#2 \S+ admin settings\n {4}settings: LFS push check off/);

    const cli = await narwalCli(['lfs', 'check', repo, 'on'], { dataDir });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toBe('LFS push check on\n');
    expect(cli.stderr).toBe(`${repo}: changed by log entry #4\n`);
    const again = await addBinary(work, 'checked.bin');
    const refused = await git(['push', 'origin', 'main'], { cwd: work, home, env: SKIP });
    expect(refused.stderr).toContain(`checked.bin (sha256:${again.slice(0, 12)})`);
  });

  it('renews an old object a push points at, with the check off too, so the sweep keeps it', async () => {
    const repo = 'check/renew';
    const work = await lfsWork(repo);
    await gitOk(['push', 'origin', 'main'], { cwd: work, home });
    expect((await narwalCli(['lfs', 'check', repo, 'off'], { dataDir })).code).toBe(0);
    // Uploaded long ago and never pushed: the sweep judges such an object by its age.
    const oid = await addBinary(work, 'old.bin');
    await gitOk(['lfs', 'push', '--all', 'origin'], { cwd: work, home });
    const path = join(dataDir, 'store', 'objects', ...lfsObjectKey(repo, oid).split('/'));
    const long = new Date(Date.now() - 2 * REFRESH_AFTER_MS);
    await utimes(path, long, long);
    await gitOk(['push', 'origin', 'main'], { cwd: work, home, env: SKIP });
    expect(Date.now() - (await stat(path)).mtimeMs).toBeLessThan(REFRESH_AFTER_MS);
  });
});

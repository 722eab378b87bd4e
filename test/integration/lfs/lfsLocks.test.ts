/**
 * Git LFS file locking with git-lfs 3.3 and two tokens: one takes a lock, the other cannot take
 * it nor release it, an admin can force it free, a read-only token can take none; every lock and
 * unlock is an entry of the log, shown by `narwal log`, the JSON API and the log page.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import type { LogItem } from '../../../lib/wal/types.js';
import { commitFile, git, gitOk } from '../../helpers/gitClient.js';
import { makeLfsHome, useToken, withToken } from '../../helpers/lfsClient.js';
import { narwalCli } from '../../helpers/narwalCli.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../../helpers/narwalServer.js';

const REPO = 'team/art';

let server: RunningNarwal & { app: App };
let dataDir: string;
let home: string;
const tokens: Record<string, string> = {};
const clones: Record<string, string> = {};

beforeAll(async () => {
  dataDir = await tempDataDir();
  server = await startInProcess({ dataDir });
  for (const [name, scope] of [
    ['alice', 'write'],
    ['bob', 'write'],
    ['reader', 'read'],
  ] as const)
    tokens[name] = (await server.app.tokens.create({ name, grants: [{ scope, pattern: 'team/*' }] })).token;
  tokens.admin = ADMIN_TOKEN;
  home = await makeLfsHome();
  const work = await mkdtemp(join(tmpdir(), 'narwal-lfs-locks-'));
  await gitOk(['init', '-q', '-b', 'main', work], { home });
  await useToken(work, home, ADMIN_TOKEN);
  await gitOk(['lfs', 'track', '--lockable', '*.psd'], { cwd: work, home });
  await commitFile(work, home, 'art/a.psd', 'layers\n');
  await gitOk(['push', '-q', `${server.url}/${REPO}.git`, 'main'], { cwd: work, home });
  for (const name of Object.keys(tokens)) {
    const dir = join(work, '..', `${name}-${Date.now()}`);
    await gitOk(['clone', '-q', `${server.url}/${REPO}.git`, dir], { home, env: withToken(ADMIN_TOKEN) });
    await useToken(dir, home, tokens[name] as string);
    clones[name] = dir;
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  for (const dir of [home, dataDir, ...Object.values(clones)])
    if (dir) await rm(dir, { recursive: true, force: true });
});

const lfs = (who: string, args: string[]) => git(['lfs', ...args], { cwd: clones[who] as string, home });

async function lockItems(): Promise<LogItem[]> {
  const loaded = await server.app.wal.readIndexFully(REPO);
  if (loaded === null) throw new Error('no repository');
  return (await server.app.wal.itemsAfter(loaded.index, 0)).filter((i) => i.kind === 'lock');
}

describe('git lfs locks', () => {
  it('lets one token hold a path, refuses the other, and lets an admin force it free', async () => {
    const taken = await lfs('alice', ['lock', 'art/a.psd']);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stdout).toMatch(/Locked art\/a\.psd/);

    const conflict = await lfs('bob', ['lock', 'art/a.psd']);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toMatch(/already locked by alice/);

    const listed = await lfs('bob', ['locks']);
    expect(listed.stdout).toMatch(/art\/a\.psd\s+alice\s+ID:[0-9a-f]{16}/);
    const id = /ID:([0-9a-f]{16})/.exec(listed.stdout)?.[1] ?? '';
    const json = JSON.parse((await lfs('alice', ['locks', '--verify', '--json'])).stdout) as {
      ours: { id: string }[];
      theirs: unknown[];
    };
    expect(json.ours.map((l) => l.id)).toEqual([id]);
    expect(json.theirs).toEqual([]);

    const notTheirs = await lfs('bob', ['unlock', 'art/a.psd']);
    expect(notTheirs.code).not.toBe(0);
    expect(notTheirs.stderr).toMatch(/locked by alice; only they may unlock it, or an admin with --force/);
    const notAdmin = await lfs('bob', ['unlock', '--force', 'art/a.psd']);
    expect(notAdmin.code).not.toBe(0);
    expect(notAdmin.stderr).toMatch(/token bob may not administer team\/art/);
    const readOnly = await lfs('reader', ['lock', 'art/b.psd']);
    expect(readOnly.code).not.toBe(0);
    expect(readOnly.stderr).toMatch(/token reader may not push to team\/art/);
    expect((await lockItems()).length).toBe(1);

    const released = await lfs('alice', ['unlock', 'art/a.psd']);
    expect(released.code, released.stderr).toBe(0);
    expect((await lfs('bob', ['lock', 'art/a.psd'])).code).toBe(0);
    const bobs = /ID:([0-9a-f]{16})/.exec((await lfs('alice', ['locks'])).stdout)?.[1] ?? '';
    const forced = await lfs('admin', ['unlock', '--force', '--id', bobs]);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await lfs('alice', ['locks'])).stdout.trim()).toBe('');

    // The log has each change, with who made it.
    const items = await lockItems();
    expect(
      items.map((i) => [i.who.token, i.lock?.action, i.lock?.path, i.lock?.owner.name, i.lock?.forced]),
    ).toEqual([
      ['alice', 'lock', 'art/a.psd', 'alice', undefined],
      ['alice', 'unlock', 'art/a.psd', 'alice', undefined],
      ['bob', 'lock', 'art/a.psd', 'bob', undefined],
      ['admin', 'unlock', 'art/a.psd', 'bob', true],
    ]);
    expect(items[0]?.lock?.id).toBe(id);
  }, 120_000);

  it('shows locks in narwal log, the JSON API and the log page', async () => {
    const cli = await narwalCli(['log', REPO], { dataDir });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/#\d+ \S+ admin lock\n {4}unlock art\/a\.psd \(held by bob, forced\)/);
    expect(cli.stdout).toMatch(/#\d+ \S+ alice lock\n {4}lock art\/a\.psd/);
    const auth = { authorization: `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}` };
    const api = (await (
      await fetch(`${server.url}/api/v1/repos/${REPO}/-/log`, { headers: auth })
    ).json()) as {
      items: LogItem[];
    };
    expect(api.items[0]?.kind).toBe('lock');
    expect(api.items[0]?.lock).toMatchObject({ action: 'unlock', path: 'art/a.psd', forced: true });
    const page = await (
      await fetch(`${server.url}/${REPO}/-/log`, { headers: { ...auth, accept: 'text/html' } })
    ).text();
    expect(page).toMatch(
      /<span class="tag lock">unlock<\/span> <code>art\/a\.psd<\/code> held by bob, forced/,
    );
    expect(page).toMatch(/<span class="tag lock">lock<\/span> <code>art\/a\.psd<\/code>/);
  });
});

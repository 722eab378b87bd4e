/**
 * Client matrix, isomorphic-git (pure JavaScript, its `http/node` client, protocol v1 for clone,
 * fetch and push; v2 only for ref listing): clone, fetch and push with credentials from onAuth,
 * and refusals - a read-only token (HTTP 403) and a ref that moved after the client read the refs
 * (`ng ... fetch first`) - each checked with the git CLI: refs, fsck, work tree.
 */
import * as fs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as igit from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import {
  expressRepo,
  fsckClean,
  localRefs,
  remoteRefs,
  revParse,
  tempDir,
} from '../../helpers/clientRepos.js';
import { commitFile, gitOk, makeHome } from '../../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
let express: string;
let readToken: string;

/** The plain URL: isomorphic-git gets its credentials from onAuth, after the server's 401. */
const url = (repo: string) => `${server.url}/${repo}.git`;
const authUrl = (repo: string) => `${server.authUrl}/${repo}.git`;
const EARLY = [
  '0.14.0^{commit}:refs/heads/main',
  '0.12.0^{commit}:refs/heads/old',
  'refs/tags/0.1*:refs/tags/0.1*',
];
const author = { name: 'Iso Git', email: 'iso@example.com', timestamp: 1_700_000_000, timezoneOffset: 0 };

/** onAuth with a given password; counts how often isomorphic-git asked. */
function credentials(password: string) {
  const asked: string[] = [];
  return {
    asked,
    onAuth: (forUrl: string) => {
      asked.push(forUrl);
      return { username: 'iso', password };
    },
  };
}

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  express = await expressRepo(home);
  // A real history, but only as much as isomorphic-git clones in seconds: express up to 0.14.0
  // (1,411 commits; all 6,413 take it about 25 s here), a second branch and tags.
  await gitOk(['push', '--quiet', authUrl('iso/express'), ...EARLY], { cwd: express, home });
  readToken = (
    await server.app.tokens.create({ name: 'iso-reader', grants: [{ scope: 'read', pattern: 'iso/*' }] })
  ).token;
});
afterAll(async () => {
  await server?.stop();
});

describe('isomorphic-git', () => {
  it('clones a real history with credentials from onAuth', async () => {
    const dir = join(await tempDir('iso-clone'), 'c');
    const auth = credentials(ADMIN_TOKEN);
    await igit.clone({ fs, http, dir, url: url('iso/express'), ...auth });
    expect(auth.asked.length).toBeGreaterThan(0);
    // Every branch and tag the server has, under isomorphic-git's names for them.
    const server = await remoteRefs(authUrl('iso/express'), home);
    const ours = await localRefs(dir, home);
    for (const [ref, oid] of server) {
      const local = ref.startsWith('refs/heads/') ? ref.replace('refs/heads/', 'refs/remotes/origin/') : ref;
      if (!ref.endsWith('^{}')) expect(ours.get(local), ref).toBe(oid);
    }
    expect(await revParse(dir, home, 'HEAD')).toBe(await revParse(express, home, '0.14.0^{commit}'));
    expect(await gitOk(['status', '--porcelain'], { cwd: dir, home })).toBe('');
    await fsckClean(dir, home);
  });

  it('clones the state after an earlier entry through REPO.git@SEQ', async () => {
    await gitOk(['push', '--quiet', authUrl('iso/past'), ...EARLY], { cwd: express, home });
    const past = (await server.app.wal.readIndexFully('iso/past'))?.index.seq ?? 0;
    const other = join(await tempDir('iso-later'), 'c');
    await gitOk(['clone', '--quiet', authUrl('iso/past'), other], { home });
    await commitFile(other, home, 'later.txt', 'after the state we clone\n');
    await gitOk(['push', '--quiet', 'origin', 'main'], { cwd: other, home });
    const dir = join(await tempDir('iso-past'), 'c');
    await igit.clone({ fs, http, dir, url: `${url('iso/past')}@${past}`, ...credentials(ADMIN_TOKEN) });
    expect(await revParse(dir, home, 'HEAD')).toBe(await revParse(express, home, '0.14.0^{commit}'));
    await fsckClean(dir, home);
  });

  it('cannot clone without credentials: the 401 reaches it as an HttpError', async () => {
    const dir = join(await tempDir('iso-anon'), 'c');
    const error = await igit.clone({ fs, http, dir, url: url('iso/express') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(igit.Errors.HttpError);
    expect((error as InstanceType<typeof igit.Errors.HttpError>).data.statusCode).toBe(401);
  });

  it('fetches new commits, and pushes its own commit that the git CLI then clones intact', async () => {
    await gitOk(['push', '--quiet', authUrl('iso/work'), '0.14.0^{commit}:refs/heads/main'], {
      cwd: express,
      home,
    });
    const dir = join(await tempDir('iso-work'), 'c');
    const auth = credentials(ADMIN_TOKEN);
    await igit.clone({ fs, http, dir, url: url('iso/work'), ...auth });

    // Someone pushes with git; isomorphic-git fetches it.
    const other = join(await tempDir('iso-other'), 'o');
    await gitOk(['clone', '--quiet', authUrl('iso/work'), other], { home });
    const theirs = await commitFile(other, home, 'theirs.txt', 'from git\n');
    await gitOk(['push', '--quiet', 'origin', 'main'], { cwd: other, home });
    const fetched = await igit.fetch({ fs, http, dir, ...auth });
    expect(fetched.fetchHead).toBe(theirs);
    expect(await revParse(dir, home, 'refs/remotes/origin/main')).toBe(theirs);
    await fsckClean(dir, home);

    // isomorphic-git merges (fast-forward), commits and pushes.
    await igit.merge({ fs, dir, ours: 'main', theirs: 'origin/main', fastForwardOnly: true, author });
    await igit.checkout({ fs, dir, ref: 'main' });
    await writeFile(join(dir, 'iso.txt'), 'from isomorphic-git\n');
    await igit.add({ fs, dir, filepath: 'iso.txt' });
    const mine = await igit.commit({ fs, dir, message: 'commit from isomorphic-git', author });
    const pushed = await igit.push({ fs, http, dir, ...auth });
    expect(pushed.ok).toBe(true);
    expect(pushed.refs['refs/heads/main']).toEqual({ ok: true, error: '' });
    expect((await remoteRefs(authUrl('iso/work'), home)).get('refs/heads/main')).toBe(mine);

    const check = join(await tempDir('iso-check'), 'k');
    await gitOk(['clone', '--quiet', authUrl('iso/work'), check], { home });
    expect(await revParse(check, home, 'HEAD~1')).toBe(theirs);
    expect(await gitOk(['show', 'HEAD:iso.txt'], { cwd: check, home })).toBe('from isomorphic-git\n');
    await fsckClean(check, home);
  });

  it('shows the 403 of a read-only token, and the push changes nothing', async () => {
    const dir = join(await tempDir('iso-ro'), 'c');
    const auth = credentials(readToken);
    await igit.clone({ fs, http, dir, url: url('iso/express'), ...auth });
    const before = await remoteRefs(authUrl('iso/express'), home);
    await writeFile(join(dir, 'ro.txt'), 'not allowed\n');
    await igit.add({ fs, dir, filepath: 'ro.txt' });
    await igit.commit({ fs, dir, message: 'refused', author });
    const error = await igit.push({ fs, http, dir, ...auth }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(igit.Errors.HttpError);
    const data = (error as InstanceType<typeof igit.Errors.HttpError>).data;
    expect(data.statusCode).toBe(403);
    expect(data.response).toBe('narwal: token iso-reader may not push to iso/express\n');
    expect(await remoteRefs(authUrl('iso/express'), home)).toEqual(before);
  });

  it('reports `fetch first` for a ref that moved after it read the refs, and the other push stands', async () => {
    await gitOk(['push', '--quiet', authUrl('iso/race'), '0.14.0^{commit}:refs/heads/main'], {
      cwd: express,
      home,
    });
    const dir = join(await tempDir('iso-race'), 'c');
    const auth = credentials(ADMIN_TOKEN);
    await igit.clone({ fs, http, dir, url: url('iso/race'), ...auth });
    await writeFile(join(dir, 'mine.txt'), 'mine\n');
    await igit.add({ fs, dir, filepath: 'mine.txt' });
    await igit.commit({ fs, dir, message: 'mine', author });

    const other = join(await tempDir('iso-race-other'), 'o');
    await gitOk(['clone', '--quiet', authUrl('iso/race'), other], { home });
    const theirs = await commitFile(other, home, 'theirs.txt', 'theirs\n');
    // onPrePush runs after isomorphic-git read the refs and before it sends: the ref moves then,
    // so only the server can see that the old value is stale.
    const error = await igit
      .push({
        fs,
        http,
        dir,
        ...auth,
        onPrePush: async () => {
          await gitOk(['push', '--quiet', 'origin', 'main'], { cwd: other, home });
          return true;
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(igit.Errors.GitPushError);
    const result = (error as InstanceType<typeof igit.Errors.GitPushError>).data.result;
    expect(result.refs['refs/heads/main']).toEqual({
      ok: false,
      error: expect.stringContaining('fetch first'),
    });
    expect((await remoteRefs(authUrl('iso/race'), home)).get('refs/heads/main')).toBe(theirs);
  });

  it('lists the refs over protocol v2 (ls-refs) as the git CLI sees them', async () => {
    const auth = credentials(ADMIN_TOKEN);
    const info = await igit.getRemoteInfo2({ http, url: url('iso/express'), protocolVersion: 2, ...auth });
    expect(info.protocolVersion).toBe(2);
    const listed = await igit.listServerRefs({
      http,
      url: url('iso/express'),
      protocolVersion: 2,
      peelTags: true,
      ...auth,
    });
    const expected = await remoteRefs(authUrl('iso/express'), home);
    const got = new Map<string, string>();
    for (const ref of listed) {
      if (ref.ref === 'HEAD') continue;
      got.set(ref.ref, ref.oid);
      if (ref.peeled) got.set(`${ref.ref}^{}`, ref.peeled);
    }
    expect(new Map([...got].sort(([a], [b]) => (a < b ? -1 : 1)))).toEqual(expected);
  });
});

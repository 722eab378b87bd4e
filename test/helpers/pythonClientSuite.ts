/**
 * The client-matrix checks shared by the Python clients (dulwich, pygit2): each test file calls
 * this with its client, so each client runs (and fails) on its own. Every result is checked with
 * the git CLI - refs, work tree, fsck - not from the client's word alone.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { expressRepo, fsckClean, remoteRefs, revParse, tempDir } from './clientRepos.js';
import { commitFile, gitOk, makeHome } from './gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from './narwalServer.js';
import { ensurePythonClient, type PythonClient, pythonClientOk, runPythonClient } from './pythonClients.js';
import { type RacingProxy, startRacingProxy } from './racingProxy.js';

/** A real history small enough for every client to clone in seconds: express up to 0.14.0. */
export const EARLY_EXPRESS = [
  '0.14.0^{commit}:refs/heads/main',
  '0.12.0^{commit}:refs/heads/old',
  'refs/tags/0.1*:refs/tags/0.1*',
];

/** How the client reports a refusal: neither shows the server's message, only the status. */
export interface ExpectedErrors {
  /** A clone with a wrong password (401 after 401). */
  readonly badCredentials: RegExp;
  /** A push with a read-only token (403). */
  readonly readOnlyPush: RegExp;
}

export function describePythonClient(client: PythonClient, expected: ExpectedErrors): void {
  let server: RunningNarwal & { app: App };
  let proxy: RacingProxy;
  let home: string;
  let express: string;
  let readToken: string;
  const admin = { user: client, password: ADMIN_TOKEN };
  const url = (repo: string) => `${server.url}/${repo}.git`;
  const authUrl = (repo: string) => `${server.authUrl}/${repo}.git`;

  async function seed(repo: string): Promise<void> {
    await gitOk(['push', '--quiet', authUrl(repo), ...EARLY_EXPRESS], { cwd: express, home });
  }

  async function cloneWith(repo: string, auth = admin): Promise<string> {
    const dir = join(await tempDir(client), 'c');
    await pythonClientOk(client, ['clone', url(repo), dir], auth);
    return dir;
  }

  beforeAll(async () => {
    await ensurePythonClient(client);
    server = await startInProcess();
    proxy = await startRacingProxy(server.url);
    home = await makeHome();
    express = await expressRepo(home);
    readToken = (
      await server.app.tokens.create({
        name: `${client}-reader`,
        grants: [{ scope: 'read', pattern: 'py/*' }],
      })
    ).token;
  });
  afterAll(async () => {
    await proxy?.stop();
    await server?.stop();
  });

  describe(client, () => {
    it('clones a real history with its own HTTP authentication, and fails with a wrong password', async () => {
      await seed('py/clone');
      const dir = join(await tempDir(client), 'c');
      const cloned = await pythonClientOk(client, ['clone', url('py/clone'), dir], admin);
      const main = await revParse(express, home, '0.14.0^{commit}');
      expect(cloned.head).toBe(main);
      const refs = cloned.refs as Record<string, string>;
      expect(refs['refs/remotes/origin/main']).toBe(main);
      expect(refs['refs/remotes/origin/old']).toBe(await revParse(express, home, '0.12.0^{commit}'));
      expect(refs['refs/tags/0.13.0']).toBe(await revParse(express, home, 'refs/tags/0.13.0'));
      expect(await revParse(dir, home, 'HEAD')).toBe(main);
      expect(await gitOk(['status', '--porcelain'], { cwd: dir, home })).toBe('');
      await fsckClean(dir, home);

      const refused = await runPythonClient(
        client,
        ['clone', url('py/clone'), join(await tempDir(client), 'x')],
        {
          user: client,
          password: 'not-a-token',
        },
      );
      expect(refused.code).toBe(1);
      expect(String(refused.json.message)).toMatch(expected.badCredentials);
    });

    it('clones the state after an earlier entry through REPO.git@SEQ', async () => {
      await seed('py/past');
      const past = (await server.app.wal.readIndexFully('py/past'))?.index.seq ?? 0;
      const other = join(await tempDir(client), 'later');
      await gitOk(['clone', '--quiet', authUrl('py/past'), other], { home });
      await commitFile(other, home, 'later.txt', 'after the state we clone\n');
      await gitOk(['push', '--quiet', 'origin', 'main'], { cwd: other, home });
      const dir = join(await tempDir(client), 'c');
      const cloned = await pythonClientOk(client, ['clone', `${url('py/past')}@${past}`, dir], admin);
      expect(cloned.head).toBe(await revParse(express, home, '0.14.0^{commit}'));
      await fsckClean(dir, home);
    });

    it('fetches what the git CLI pushed', async () => {
      await seed('py/fetch');
      const dir = await cloneWith('py/fetch');
      const other = join(await tempDir(client), 'o');
      await gitOk(['clone', '--quiet', authUrl('py/fetch'), other], { home });
      const theirs = await commitFile(other, home, 'theirs.txt', 'from git\n');
      await gitOk(['push', '--quiet', 'origin', 'main', 'main:refs/heads/added'], { cwd: other, home });
      await pythonClientOk(client, ['fetch', dir], admin);
      expect(await revParse(dir, home, 'refs/remotes/origin/main')).toBe(theirs);
      expect(await revParse(dir, home, 'refs/remotes/origin/added')).toBe(theirs);
      await fsckClean(dir, home);
    });

    it('pushes its own commit and a deletion, and the git CLI clones the result intact', async () => {
      await seed('py/push');
      const dir = await cloneWith('py/push');
      const made = await pythonClientOk(
        client,
        ['commit', dir, `${client}.txt`, `from ${client}\n`, `commit from ${client}`],
        admin,
      );
      const pushed = await pythonClientOk(
        client,
        ['push', dir, url('py/push'), 'refs/heads/main:refs/heads/main'],
        admin,
      );
      expect(pushed.refs).toEqual({ 'refs/heads/main': null });
      const refs = await remoteRefs(authUrl('py/push'), home);
      expect(refs.get('refs/heads/main')).toBe(made.oid);

      const deleted = await pythonClientOk(client, ['push', dir, url('py/push'), ':refs/heads/old'], admin);
      expect(deleted.refs).toEqual({ 'refs/heads/old': null });
      expect((await remoteRefs(authUrl('py/push'), home)).has('refs/heads/old')).toBe(false);

      const check = join(await tempDir(client), 'k');
      await gitOk(['clone', '--quiet', authUrl('py/push'), check], { home });
      expect(await gitOk(['show', `HEAD:${client}.txt`], { cwd: check, home })).toBe(`from ${client}\n`);
      expect(await revParse(check, home, 'HEAD~1')).toBe(await revParse(express, home, '0.14.0^{commit}'));
      await fsckClean(check, home);
    });

    it('is refused a push with a read-only token, and nothing changes', async () => {
      await seed('py/readonly');
      const reader = { user: client, password: readToken };
      const dir = await cloneWith('py/readonly', reader);
      await pythonClientOk(client, ['commit', dir, 'ro.txt', 'no\n', 'refused'], reader);
      const before = await remoteRefs(authUrl('py/readonly'), home);
      const refused = await runPythonClient(
        client,
        ['push', dir, url('py/readonly'), 'refs/heads/main:refs/heads/main'],
        reader,
      );
      expect(refused.code).toBe(1);
      expect(String(refused.json.message)).toMatch(expected.readOnlyPush);
      expect(await remoteRefs(authUrl('py/readonly'), home)).toEqual(before);
    });

    it('hears `fetch first` for a ref that moved after it read the refs', async () => {
      await seed('py/race');
      const dir = await cloneWith('py/race');
      const mine = await pythonClientOk(client, ['commit', dir, 'mine.txt', 'mine\n', 'mine'], admin);
      const other = join(await tempDir(client), 'o');
      await gitOk(['clone', '--quiet', authUrl('py/race'), other], { home });
      const theirs = await commitFile(other, home, 'theirs.txt', 'theirs\n');
      proxy.beforeNextPush(async () => {
        await gitOk(['push', '--quiet', 'origin', 'main'], { cwd: other, home });
      });
      const raced = await runPythonClient(
        client,
        ['push', dir, `${proxy.url}/py/race.git`, 'refs/heads/main:refs/heads/main'],
        admin,
      );
      expect(raced.json).toEqual({ refs: { 'refs/heads/main': 'fetch first' } });
      const refs = await remoteRefs(authUrl('py/race'), home);
      expect(refs.get('refs/heads/main')).toBe(theirs);
      expect(refs.get('refs/heads/main')).not.toBe(mine.oid);
    });
  });
}

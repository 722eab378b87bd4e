/**
 * Tokens as HTTP Basic passwords, through the real git client: what each scope may do, public and
 * private repositories, creating a repository by pushing to it, and revoked tokens. Every refusal
 * is checked from git's side (non-zero exit, a message) and from the log's (nothing moved).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import type { Grant } from '../../lib/auth/Principal.js';
import { commitFile, type GitOutput, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
let work: string;
const tokens: Record<string, string> = {};

function urlWith(token: string | null, repo: string): string {
  const base = token === null ? server.url : server.url.replace('://', `://user:${token}@`);
  return `${base}/${repo}.git`;
}

async function issue(name: string, grants: Grant[], extra: { owner?: string; create?: boolean } = {}) {
  tokens[name] = (await server.app.tokens.create({ name, grants, ...extra })).token;
}

const secret = (name: string): string => {
  const token = tokens[name];
  if (token === undefined) throw new Error(`no token ${name}`);
  return token;
};

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  work = await workRepo(home, 1);
  await issue('reader', [{ scope: 'read', pattern: 'team/*' }]);
  await issue('writer', [{ scope: 'write', pattern: 'team/*' }]);
  await issue('creator', [{ scope: 'write', pattern: 'carol/*' }], { owner: 'carol', create: true });
  await issue('other-reader', [{ scope: 'read', pattern: 'other/thing' }]);
  await issue('team-admin', [{ scope: 'admin', pattern: 'ops/*' }]);
  await gitOk(['push', `${server.authUrl}/team/private.git`, 'main'], { cwd: work, home });
  await gitOk(['push', `${server.authUrl}/other/thing.git`, 'main'], { cwd: work, home });
  await server.app.wal.createRepo('team/open', { public: true });
  await gitOk(['push', `${server.authUrl}/team/open.git`, 'main'], { cwd: work, home });
});
afterAll(async () => {
  await server?.stop();
});

async function cloneWith(token: string | null, repo: string): Promise<GitOutput> {
  const dir = join(await mkdtemp(join(tmpdir(), 'narwal-auth-')), 'c');
  return git(['clone', urlWith(token, repo), dir], { home });
}

async function logState(repo: string): Promise<string> {
  const loaded = await server.app.wal.readIndexFully(repo);
  return `${loaded?.index.seq}:${loaded?.etag}`;
}

/** Everything a client can try against a repository, each in protocol v2 and v0 where git has both. */
async function everything(token: string | null, repo: string, branch: string) {
  const url = urlWith(token, repo);
  const v0 = ['-c', 'protocol.version=0'];
  const dir = () => mkdtemp(join(tmpdir(), 'narwal-auth-')).then((d) => join(d, 'c'));
  return {
    clone: await git(['clone', url, await dir()], { home }),
    cloneV0: await git([...v0, 'clone', url, await dir()], { home }),
    fetch: await git(['fetch', url, 'main'], { cwd: work, home }),
    fetchV0: await git([...v0, 'fetch', url, 'main'], { cwd: work, home }),
    lsRemote: await git(['ls-remote', url], { home }),
    lsRemoteV0: await git([...v0, 'ls-remote', url], { home }),
    push: await git(['push', url, `main:${branch}`], { cwd: work, home }),
  };
}

describe('authentication and authorization', () => {
  it('lets anyone clone a public repository, and nobody push to it anonymously', async () => {
    expect((await cloneWith(null, 'team/open')).code).toBe(0);
    const before = await logState('team/open');
    const push = await git(['push', urlWith(null, 'team/open'), 'main:other'], { cwd: work, home });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toMatch(/Authentication failed|could not read Username|401/);
    expect(await logState('team/open')).toBe(before);
  });

  it('refuses anonymous clients everything on a private repository, asking for credentials', async () => {
    const before = await logState('team/private');
    const outcomes = await everything(null, 'team/private', 'anonymous');
    for (const [what, out] of Object.entries(outcomes)) {
      expect(out.code, what).not.toBe(0);
      expect(out.stderr, what).toMatch(/could not read Username|Authentication failed/);
      expect(out.stdout, what).not.toMatch(/[0-9a-f]{40}/);
    }
    expect(await logState('team/private')).toBe(before);
  });

  it('refuses a token of another repository everything, as if the repository did not exist', async () => {
    const before = await logState('team/private');
    const outcomes = await everything(secret('other-reader'), 'team/private', 'other-reader');
    for (const [what, out] of Object.entries(outcomes)) {
      expect(out.code, what).not.toBe(0);
      expect(out.stderr, what).toMatch(/not found/);
      expect(out.stdout, what).not.toMatch(/[0-9a-f]{40}/);
    }
    expect(await logState('team/private')).toBe(before);
    // The same token reads its own repository.
    expect((await cloneWith(secret('other-reader'), 'other/thing')).code).toBe(0);
  });

  it('lets a read token clone, fetch and list but not push, with a message saying why', async () => {
    const before = await logState('team/private');
    const outcomes = await everything(secret('reader'), 'team/private', 'reader');
    const { push, ...reads } = outcomes;
    for (const [what, out] of Object.entries(reads)) expect(out.code, `${what}: ${out.stderr}`).toBe(0);
    expect(outcomes.lsRemote.stdout).toContain('refs/heads/main');
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('narwal: token reader may not push to team/private');
    expect(await logState('team/private')).toBe(before);
  });

  it('lets a write token push, records its name, and hides repositories outside its patterns', async () => {
    await gitOk(['push', urlWith(secret('writer'), 'team/private'), 'main:from-writer'], { cwd: work, home });
    const loaded = await server.app.wal.readIndex('team/private');
    const last = loaded?.index.tail.at(-1);
    expect(last?.who.token).toBe('writer');
    expect(last?.who.agent).toMatch(/^git\//);
    const elsewhere = await cloneWith(secret('writer'), 'other/thing');
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain('not found');
  });

  it('creates a repository on push only for a token allowed to create it', async () => {
    const refused = await git(['push', urlWith(secret('writer'), 'team/brand-new'), 'main'], {
      cwd: work,
      home,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('may not create team/brand-new');
    expect(await server.app.wal.readIndex('team/brand-new')).toBeNull();
    await gitOk(['push', urlWith(secret('creator'), 'carol/notes'), 'main'], { cwd: work, home });
    const created = await server.app.wal.readIndex('carol/notes');
    expect(created?.index.seq).toBe(1);
    expect(created?.index.tail[0]?.who).toMatchObject({ token: 'creator', owner: 'carol' });
  });

  it('gives an admin scope on a pattern everything there and nothing elsewhere', async () => {
    await gitOk(['push', urlWith(secret('team-admin'), 'ops/tools'), 'main'], { cwd: work, home });
    expect((await server.app.wal.readIndex('ops/tools'))?.index.seq).toBe(1);
    expect((await cloneWith(secret('team-admin'), 'ops/tools')).code).toBe(0);
    const before = await logState('team/private');
    const push = await git(['push', urlWith(secret('team-admin'), 'team/private'), 'main:ops'], {
      cwd: work,
      home,
    });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('not found');
    expect(await logState('team/private')).toBe(before);
  });

  it('refuses a revoked token for every git operation', async () => {
    await issue('short-lived', [{ scope: 'write', pattern: 'team/*' }]);
    const token = secret('short-lived');
    expect((await cloneWith(token, 'team/private')).code).toBe(0);
    const [listed] = (await server.app.tokens.list()).filter((t) => t.name === 'short-lived');
    await server.app.tokens.revoke(listed?.id ?? 'missing');
    await commitFile(work, home, 'revoked.txt', 'x\n');
    const before = await logState('team/private');
    const outcomes = await everything(token, 'team/private', 'revoked');
    for (const [what, out] of Object.entries(outcomes)) {
      expect(out.code, what).not.toBe(0);
      expect(out.stderr, what).toMatch(/Authentication failed/);
    }
    expect(await logState('team/private')).toBe(before);
  });

  it('knows the configured admin token exactly, and nothing like it', async () => {
    expect((await cloneWith(ADMIN_TOKEN, 'team/private')).code).toBe(0);
    for (const near of [`${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1), ADMIN_TOKEN.toUpperCase()]) {
      const out = await git(['ls-remote', urlWith(near, 'team/private')], { home });
      expect(out.code).not.toBe(0);
      expect(out.stderr).toMatch(/Authentication failed/);
    }
  });
});

/**
 * Tokens as HTTP Basic passwords: what each kind of token may do, public repositories, and
 * creating a repository by pushing to it.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
let work: string;
const tokens: Record<string, string> = {};

function urlWith(token: string | null, repo: string): string {
  const base = token === null ? server.url : server.url.replace('://', `://user:${token}@`);
  return `${base}/${repo}.git`;
}

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  work = await workRepo(home, 1);
  tokens.reader = (await server.app.tokens.create({ name: 'reader', read: ['team/*'] })).secret;
  tokens.writer = (await server.app.tokens.create({ name: 'writer', write: ['team/*'] })).secret;
  tokens.creator = (
    await server.app.tokens.create({ name: 'creator', owner: 'carol', create: true, write: ['carol/*'] })
  ).secret;
  await gitOk(['push', `${server.authUrl}/team/private.git`, 'main'], { cwd: work, home });
  await server.app.wal.createRepo('team/open', { public: true });
  await gitOk(['push', `${server.authUrl}/team/open.git`, 'main'], { cwd: work, home });
});
afterAll(async () => {
  await server?.stop();
});

async function cloneWith(token: string | null, repo: string) {
  const dir = join(await mkdtemp(join(tmpdir(), 'narwal-auth-')), 'c');
  return git(['clone', urlWith(token, repo), dir], { home });
}

describe('authentication and authorization', () => {
  it('lets anyone clone a public repository, and nobody push to it anonymously', async () => {
    expect((await cloneWith(null, 'team/open')).code).toBe(0);
    const push = await git(['push', urlWith(null, 'team/open'), 'main:other'], { cwd: work, home });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toMatch(/Authentication failed|could not read Username|401/);
  });

  it('asks anonymous clients of a private repository for credentials', async () => {
    const out = await cloneWith(null, 'team/private');
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/could not read Username|Authentication failed/);
  });

  it('lets a read token clone but not push, with a message saying why', async () => {
    expect((await cloneWith(tokens.reader ?? '', 'team/private')).code).toBe(0);
    const push = await git(['push', urlWith(tokens.reader ?? '', 'team/private'), 'main:reader'], {
      cwd: work,
      home,
    });
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('may not push to team/private');
  });

  it('lets a write token push, records its name, and hides repositories outside its patterns', async () => {
    await gitOk(['push', urlWith(tokens.writer ?? '', 'team/private'), 'main:from-writer'], {
      cwd: work,
      home,
    });
    const loaded = await server.app.wal.readIndex('team/private');
    const last = loaded?.index.tail.at(-1);
    expect(last?.who.token).toBe('writer');
    expect(last?.who.agent).toMatch(/^git\//);
    const elsewhere = await cloneWith(tokens.writer ?? '', 'carol/notes');
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain('not found');
  });

  it('creates a repository on push only for a token allowed to create it', async () => {
    const refused = await git(['push', urlWith(tokens.writer ?? '', 'team/brand-new'), 'main'], {
      cwd: work,
      home,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('may not create team/brand-new');
    expect(await server.app.wal.readIndex('team/brand-new')).toBeNull();
    await gitOk(['push', urlWith(tokens.creator ?? '', 'carol/notes'), 'main'], { cwd: work, home });
    const created = await server.app.wal.readIndex('carol/notes');
    expect(created?.index.seq).toBe(1);
    expect(created?.index.tail[0]?.who).toMatchObject({ token: 'creator', owner: 'carol' });
  });
});

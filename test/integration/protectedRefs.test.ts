/**
 * Protected refs through the real git client: each rule refuses what it should with a git-level
 * `ng <ref> protected: ...` that git prints, changes nothing in the log, and allows the rest. The
 * JSON API and `narwal protect` manage the rules; every bad request is refused and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
const tokens: Record<string, { token: string; id: string }> = {};

const REPO = 'team/app';
const API = () => `${server.url}/api/v1/repos/${REPO}/-/protection`;

function remote(name: string, repo = REPO): string {
  const t = name === 'admin' ? ADMIN_TOKEN : tokens[name]?.token;
  if (t === undefined) throw new Error(`no token ${name}`);
  return `${server.url.replace('://', `://${name}:${t}@`)}/${repo}.git`;
}

function api(method: string, who: string | null, body?: unknown, query = ''): Promise<Response> {
  const t = who === null ? undefined : who === 'admin' ? ADMIN_TOKEN : tokens[who]?.token;
  return fetch(`${API()}${query}`, {
    method,
    headers: {
      ...(t ? { authorization: `Basic ${Buffer.from(`${who}:${t}`).toString('base64')}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

async function setRules(rules: unknown[]): Promise<void> {
  const response = await api('PUT', 'admin', { rules });
  expect(response.status, await response.clone().text()).toBe(200);
}

async function state(repo = REPO): Promise<{ seq: number; refs: Record<string, string> }> {
  const loaded = await server.app.wal.readIndexFully(repo);
  if (loaded === null) throw new Error('no index');
  const refs = await server.app.wal.allRefs(loaded.index);
  return { seq: loaded.index.seq, refs: Object.fromEntries([...refs].map(([k, v]) => [k, v.oid])) };
}

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  for (const name of ['dev', 'bot']) {
    const created = await server.app.tokens.create({ name, grants: [{ scope: 'write', pattern: 'team/*' }] });
    tokens[name] = { token: created.token, id: created.info.id };
  }
  const reader = await server.app.tokens.create({
    name: 'reader',
    grants: [{ scope: 'read', pattern: 'team/*' }],
  });
  tokens.reader = { token: reader.token, id: reader.info.id };
  const work = await workRepo(home, 2);
  await gitOk(['push', remote('admin'), 'main', 'main:refs/heads/release/1', 'main:refs/heads/topic'], {
    cwd: work,
    home,
  });
});
afterAll(async () => {
  await server?.stop();
});

async function clone(name: string): Promise<string> {
  const work = await workRepo(home, 0, 'clone');
  await gitOk(['fetch', '-q', remote(name), '+refs/heads/*:refs/remotes/origin/*'], { cwd: work, home });
  await gitOk(['checkout', '-q', '-B', 'main', 'origin/main'], { cwd: work, home });
  return work;
}

describe('protected refs through git', () => {
  it('refuses a force-push to a denyForce branch and allows a fast-forward', async () => {
    await setRules([{ pattern: 'refs/heads/main', denyForce: true }]);
    const work = await clone('dev');
    await gitOk(['reset', '-q', '--hard', 'HEAD~1'], { cwd: work, home });
    await commitFile(work, home, 'rewrite.txt', 'history rewritten\n');
    const before = await state();
    const forced = await git(['push', '--force', remote('dev'), 'main'], { cwd: work, home });
    expect(forced.code).not.toBe(0);
    expect(forced.stderr).toContain(
      '[remote rejected] main -> main (protected: refs/heads/main may not be force-pushed',
    );
    expect(await state()).toEqual(before);

    // Another branch is not protected: the same force-push lands there.
    await gitOk(['push', '--force', remote('dev'), 'main:topic'], { cwd: work, home });

    const ff = await clone('dev');
    const head = await commitFile(ff, home, 'forward.txt', 'forward\n');
    await gitOk(['push', remote('dev'), 'main'], { cwd: ff, home });
    expect((await state()).refs['refs/heads/main']).toBe(head);
  });

  it('refuses deleting a denyDelete branch', async () => {
    await setRules([{ pattern: 'refs/heads/release/*', denyDelete: true }]);
    const work = await clone('dev');
    const before = await state();
    const deleted = await git(['push', remote('dev'), ':refs/heads/release/1'], { cwd: work, home });
    expect(deleted.code).not.toBe(0);
    expect(deleted.stderr).toContain(
      '(protected: refs/heads/release/1 may not be deleted (rule refs/heads/release/*))',
    );
    expect(await state()).toEqual(before);
    // Creating and updating match the rule but are allowed; deleting an unprotected branch too.
    await gitOk(['push', remote('dev'), 'main:refs/heads/release/2', ':refs/heads/topic'], {
      cwd: work,
      home,
    });
    const after = await state();
    expect(after.refs['refs/heads/release/2']).toBeDefined();
    expect(after.refs['refs/heads/topic']).toBeUndefined();
  });

  it('lets only the named tokens push, by name or by id', async () => {
    await setRules([{ pattern: 'refs/heads/main', pushers: ['bot'] }]);
    const work = await clone('dev');
    await commitFile(work, home, 'by-dev.txt', 'dev\n');
    const before = await state();
    const refused = await git(['push', remote('dev'), 'main'], { cwd: work, home });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      '(protected: only bot may push to refs/heads/main (rule refs/heads/main))',
    );
    expect(await state()).toEqual(before);
    // The admin token is not named either: protection binds every token.
    expect((await git(['push', remote('admin'), 'main'], { cwd: work, home })).code).not.toBe(0);
    await gitOk(['push', remote('bot'), 'main'], { cwd: work, home });

    await setRules([{ pattern: 'refs/heads/main', pushers: [tokens.dev?.id ?? ''] }]);
    const next = await commitFile(work, home, 'by-dev-id.txt', 'dev by id\n');
    await gitOk(['push', remote('dev'), 'main'], { cwd: work, home });
    expect((await state()).refs['refs/heads/main']).toBe(next);
  });

  it('fails a whole --atomic push when one ref is protected', async () => {
    await setRules([{ pattern: 'refs/heads/main', denyDelete: true }]);
    const work = await clone('dev');
    const before = await state();
    const atomic = await git(['push', '--atomic', remote('dev'), 'main:refs/heads/new-one', ':main'], {
      cwd: work,
      home,
    });
    expect(atomic.code).not.toBe(0);
    expect(atomic.stderr).toContain('protected: refs/heads/main may not be deleted');
    expect(await state()).toEqual(before);
  });
});

describe('the protection API', () => {
  it('lists rules with read access and changes them with admin access only', async () => {
    await setRules([{ pattern: 'refs/heads/main', denyForce: true }]);
    const listed = await api('GET', 'reader');
    expect(listed.status).toBe(200);
    expect(await listed.json()).toMatchObject({
      repo: REPO,
      rules: [{ pattern: 'refs/heads/main', denyForce: true }],
    });
    const before = await state();
    for (const who of ['reader', 'dev']) {
      const put = await api('PUT', who, { rules: [] });
      expect(put.status).toBe(403);
      expect(((await put.json()) as { error: string }).error).toContain('narwal:');
    }
    expect((await api('PUT', null, { rules: [] })).status).toBe(401);
    expect((await api('GET', null)).status).toBe(401);
    expect(await state()).toEqual(before);
  });

  it('adds, replaces and removes single rules, recording each change in the log', async () => {
    await setRules([]);
    const added = await api('PUT', 'admin', {
      rule: { pattern: 'refs/tags/**', denyDelete: true, denyForce: true },
    });
    const body = (await added.json()) as { entry: number; rules: unknown[] };
    expect(body.rules).toEqual([{ pattern: 'refs/tags/**', denyForce: true, denyDelete: true }]);
    const loaded = await server.app.wal.readIndexFully(REPO);
    if (loaded === null) throw new Error('no index');
    const [item] = await server.app.wal.itemsAfter(loaded.index, body.entry - 1, body.entry);
    expect(item).toMatchObject({ seq: body.entry, kind: 'protect', who: { token: 'admin' }, updates: [] });
    const removed = await api('DELETE', 'admin', undefined, `?pattern=${encodeURIComponent('refs/tags/**')}`);
    expect(removed.status).toBe(200);
    expect(((await removed.json()) as { rules: unknown[] }).rules).toEqual([]);
    const missing = await api('DELETE', 'admin', undefined, '?pattern=refs/heads/nope');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toContain(
      'no protection rule for refs/heads/nope',
    );
  });

  it.each([
    ['not JSON', '{', 400, 'not valid JSON'],
    ['a bad pattern', { rule: { pattern: 'heads/main', denyForce: true } }, 400, 'must start with refs/'],
    ['a rule that protects nothing', { rule: { pattern: 'refs/heads/x' } }, 400, 'protects nothing'],
    [
      'too many rules',
      { rules: Array.from({ length: 65 }, (_, i) => ({ pattern: `refs/heads/b${i}`, denyDelete: true })) },
      400,
      'at most 64',
    ],
    ['an unknown shape', { rules: [], rule: {} }, 400, 'send {"rules"'],
  ])('refuses %s and changes nothing', async (_what, body, status, message) => {
    const before = await state();
    const response = await api('PUT', 'admin', body);
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: string }).error).toContain(message);
    expect(await state()).toEqual(before);
  });

  it('answers 404 for a missing repository, 405 for other methods, 415 without JSON', async () => {
    const response = await fetch(`${server.url}/api/v1/repos/team/nothing/-/protection`, {
      headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
    });
    expect(response.status).toBe(404);
    expect((await api('POST', 'admin', { rules: [] })).status).toBe(405);
    const plain = await fetch(API(), {
      method: 'PUT',
      headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
      body: '{"rules":[]}',
    });
    expect(plain.status).toBe(415);
  });
});

describe('narwal protect', () => {
  it('adds, lists and removes rules on the store, and the server enforces them at once', async () => {
    await setRules([]);
    const env = { dataDir: server.dataDir };
    const added = await narwalCli(
      ['protect', 'add', REPO, 'refs/heads/main', '--deny-delete', '--pusher', 'bot'],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('refs/heads/main  deny-delete pushers=bot');
    const listed = await narwalCli(['protect', 'list', REPO, '--json'], env);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      rules: [{ pattern: 'refs/heads/main', denyDelete: true, pushers: ['bot'] }],
    });
    const work = await clone('dev');
    await commitFile(work, home, 'cli.txt', 'cli\n');
    expect((await git(['push', remote('dev'), 'main'], { cwd: work, home })).stderr).toContain(
      'protected: only bot',
    );
    const removed = await narwalCli(['protect', 'remove', REPO, 'refs/heads/main'], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('no protection rules');
    await gitOk(['push', remote('dev'), 'main'], { cwd: work, home });
    const bad = await narwalCli(['protect', 'add', REPO, 'refs/heads/a..b', '--deny-force'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("contains '..'");
    expect((await narwalCli(['protect', 'add', REPO], env)).code).toBe(2);
  });
});

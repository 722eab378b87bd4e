/**
 * Tokens over HTTP (`/api/v1/tokens`), as the README documents them: a token with admin on `**`
 * lists, creates and revokes tokens; nobody else can, and nothing a refused request sends changes
 * a token. The secret comes back once, in the creation's answer, and never again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;

const basic = (token: string) => `Basic ${Buffer.from(`x:${token}`).toString('base64')}`;
const ADMIN = basic(ADMIN_TOKEN);

beforeAll(async () => {
  server = await startInProcess({ env: { NARWAL_TOKEN_CACHE_MS: '0' } });
  home = await makeHome();
  await gitOk(['push', '-q', `${server.authUrl}/team/app.git`, 'main'], {
    cwd: await workRepo(home, 1),
    home,
  });
});
afterAll(async () => {
  await server?.stop();
});

async function call(
  method: string,
  path: string,
  options: { auth?: string; json?: unknown; body?: string; type?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.body;
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: {
      ...(options.auth ? { authorization: options.auth } : {}),
      ...(body !== undefined ? { 'content-type': options.type ?? 'application/json' } : {}),
    },
    ...(body !== undefined ? { body } : {}),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

async function tokenKeys(): Promise<string[]> {
  return [...(await server.app.store.list('auth/tokens/')).keys];
}

describe('the token API', () => {
  it('creates a token whose secret is shown once, lists it without it, and revokes it', async () => {
    const created = await call('POST', '/tokens', {
      auth: ADMIN,
      json: { name: 'ci', owner: 'ana', grants: [{ scope: 'write', pattern: 'team/*' }], create: true },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toMatch(/no-store/);
    const { token, id } = created.body as { token: string; id: string };
    expect(token).toMatch(new RegExp(`^nwl_${id}_[A-Za-z0-9_-]{43}$`));
    expect(created.body).toEqual({
      id,
      name: 'ci',
      owner: 'ana',
      grants: [{ scope: 'write', pattern: 'team/*' }],
      create: true,
      created: expect.stringMatching(/Z$/),
      token,
    });
    const url = `${server.url.replace('://', `://x:${token}@`)}/team/app.git`;
    expect((await git(['ls-remote', url], { home })).code).toBe(0);

    const listed = await call('GET', '/tokens', { auth: ADMIN });
    expect(listed.status).toBe(200);
    expect(listed.body.tokens).toEqual([expect.objectContaining({ id, name: 'ci', owner: 'ana' })]);
    expect(JSON.stringify(listed.body)).not.toMatch(/salt|digest|hash|nwl_/);

    const revoked = await call('DELETE', '/tokens/ci', { auth: ADMIN });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ revoked: expect.objectContaining({ id, name: 'ci' }) });
    expect((await git(['ls-remote', url], { home })).code).not.toBe(0);
    expect((await call('GET', '/tokens', { auth: ADMIN })).body.tokens).toEqual([]);
  });

  it('is for a token with admin on ** only: others are refused and nothing changes', async () => {
    const { token: teamAdmin, info } = await server.app.tokens.create({
      name: 'team-admin',
      grants: [
        { scope: 'admin', pattern: 'team/*' },
        { scope: 'write', pattern: '**' },
      ],
    });
    const before = await tokenKeys();
    const attempts: [string, string, { json?: unknown }][] = [
      ['GET', '/tokens', {}],
      ['POST', '/tokens', { json: { name: 'x', grants: [{ scope: 'admin', pattern: '**' }] } }],
      ['DELETE', `/tokens/${info.id}`, {}],
    ];
    for (const [method, path, options] of attempts) {
      const anonymous = await call(method, path, options);
      expect(anonymous.status, `${method} anonymous`).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic /);
      const forbidden = await call(method, path, { ...options, auth: basic(teamAdmin) });
      expect(forbidden.status, `${method} team admin`).toBe(403);
      expect(forbidden.body.error).toBe(
        'narwal: token team-admin needs the admin scope on ** (global) for this',
      );
    }
    expect(await tokenKeys()).toEqual(before);
    await server.app.tokens.revoke(info.id);
  });

  it.each([
    ['not JSON', { body: '{"name":' }, 400, 'the body must be a JSON object'],
    ['a form', { body: 'name=x', type: 'application/x-www-form-urlencoded' }, 415, 'send application/json'],
    ['no grants', { json: { name: 'x', grants: [] } }, 400, 'a token needs at least one scope'],
    [
      'an unknown scope',
      { json: { name: 'x', grants: [{ scope: 'root', pattern: '**' }] } },
      400,
      'invalid scope "root"',
    ],
    [
      'a bad pattern',
      { json: { name: 'x', grants: [{ scope: 'read', pattern: 'a/b/c' }] } },
      400,
      'invalid repository pattern',
    ],
    [
      'a bad name',
      { json: { name: 'bad name', grants: [{ scope: 'read', pattern: '**' }] } },
      400,
      'invalid token name',
    ],
    [
      'an unknown field',
      { json: { name: 'x', grants: [{ scope: 'read', pattern: '**' }], admin: true } },
      400,
      'unknown field "admin"',
    ],
    [
      'create not a boolean',
      { json: { name: 'x', grants: [{ scope: 'read', pattern: '**' }], create: 'yes' } },
      400,
      '"create" must be true or false',
    ],
  ])('refuses a creation with %s, writing nothing', async (_what, options, status, message) => {
    const before = await tokenKeys();
    const refused = await call('POST', '/tokens', { auth: ADMIN, ...options });
    expect(refused.status).toBe(status);
    expect(String(refused.body.error)).toContain(message);
    expect(await tokenKeys()).toEqual(before);
  });

  it('answers a revocation of no token with 404, and of a name two tokens share with 409', async () => {
    expect((await call('DELETE', '/tokens/nobody', { auth: ADMIN })).status).toBe(404);
    for (let i = 0; i < 2; i++)
      await call('POST', '/tokens', {
        auth: ADMIN,
        json: { name: 'twin', grants: [{ scope: 'read', pattern: '**' }] },
      });
    const before = await tokenKeys();
    const ambiguous = await call('DELETE', '/tokens/twin', { auth: ADMIN });
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error).toMatch(/^narwal: 2 tokens are named "twin" .*: revoke by id$/);
    expect(await tokenKeys()).toEqual(before);
    expect((await call('PUT', '/tokens', { auth: ADMIN, json: {} })).status).toBe(405);
  });
});

/**
 * `narwal token create|list|revoke` as an operator runs them, against the data directory of a
 * running server: the secret is printed once, listings never show it, and scripts get JSON.
 */
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let dataDir: string;
let home: string;

const cli = (...args: string[]) => narwalCli(args, { dataDir });

beforeAll(async () => {
  dataDir = await tempDataDir();
  server = await startInProcess({ dataDir, env: { NARWAL_TOKEN_CACHE_MS: '0' } });
  home = await makeHome();
  await gitOk(['push', `${server.authUrl}/team/app.git`, 'main'], { cwd: await workRepo(home, 1), home });
});
afterAll(async () => {
  await server?.stop();
});

describe('narwal token', () => {
  it('creates a token, prints it once, and lists it without its secret', async () => {
    const created = await cli(
      'token',
      'create',
      'ci',
      '--owner',
      'ana',
      '--read',
      'team/*',
      '--write',
      'team/app',
      '--admin',
      'ops/*',
      '--create',
    );
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    const match = /^nwl_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(token);
    expect(match).not.toBeNull();
    const [, id = '', secret = ''] = match ?? [];
    expect(created.stderr).toBe(
      `created token ${id} (ci): read:team/* write:team/app admin:ops/* create; it is shown only this once\n`,
    );
    const listed = await cli('token', 'list');
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +OWNER +SCOPES +CREATED +LAST USED$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${id}  ci +ana +read:team/\\* write:team/app admin:ops/\\* create +\\d{4}-\\d\\d-\\d\\dT\\S+Z  never$`,
      ),
    );
    expect(listed.stdout).not.toContain(secret);

    const clone = join(await mkdtemp(join(tmpdir(), 'narwal-cli-')), 'c');
    await gitOk(['clone', `${server.url.replace('://', `://x:${token}@`)}/team/app.git`, clone], { home });
    const json = await cli('token', 'list', '--json');
    expect(json.code).toBe(0);
    const all = JSON.parse(json.stdout);
    expect(all).toEqual([
      {
        id,
        name: 'ci',
        owner: 'ana',
        grants: [
          { scope: 'read', pattern: 'team/*' },
          { scope: 'write', pattern: 'team/app' },
          { scope: 'admin', pattern: 'ops/*' },
        ],
        create: true,
        created: expect.stringMatching(/Z$/),
        lastUsed: expect.stringMatching(/Z$/),
      },
    ]);
    expect(json.stdout).not.toMatch(/salt|digest|hash|nwl_/);
  });

  it('gives scripts the new token and the revocation as JSON', async () => {
    const created = await cli('token', 'create', 'deploy', '--write', 'team/app', '--json');
    expect(created.code).toBe(0);
    const info = JSON.parse(created.stdout);
    expect(info).toMatchObject({
      name: 'deploy',
      grants: [{ scope: 'write', pattern: 'team/app' }],
      create: false,
    });
    expect(info.token).toMatch(new RegExp(`^nwl_${info.id}_`));
    const url = `${server.url.replace('://', `://x:${info.token}@`)}/team/app.git`;
    expect((await git(['ls-remote', url], { home })).code).toBe(0);
    const revoked = await cli('token', 'revoke', info.id, '--json');
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({
      revoked: expect.objectContaining({ id: info.id, name: 'deploy' }),
    });
    const refused = await git(['ls-remote', url], { home });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Authentication failed');
  });

  it('revokes by a unique name, and refuses a name two tokens share', async () => {
    for (let i = 0; i < 2; i++) expect((await cli('token', 'create', 'twin', '--read', '**')).code).toBe(0);
    const ambiguous = await cli('token', 'revoke', 'twin');
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(
      /^narwal: 2 tokens are named "twin" \([0-9a-f]{16}, [0-9a-f]{16}\): revoke by id\n$/,
    );
    expect((await cli('token', 'revoke', 'ci')).stdout).toMatch(/^revoked token [0-9a-f]{16} \(ci\)\n$/);
    const names = JSON.parse((await cli('token', 'list', '--json')).stdout).map(
      (t: { name: string }) => t.name,
    );
    expect(names).toEqual(['twin', 'twin']);
  });

  it('never makes an admin token of its own when NARWAL_ADMIN_TOKEN is not set', async () => {
    const unset = { NARWAL_ADMIN_TOKEN: '' };
    const file = join(dataDir, 'admin-token');
    expect(existsSync(file)).toBe(false);
    const created = await narwalCli(['token', 'create', 'no-admin', '--read', '**', '--json'], {
      dataDir,
      env: unset,
    });
    expect(created.code).toBe(0);
    const { id } = JSON.parse(created.stdout) as { id: string };
    for (const args of [
      ['token', 'list'],
      ['token', 'revoke', id],
      ['repo', 'list'],
      ['log', 'team/app'],
    ]) {
      expect((await narwalCli(args, { dataDir, env: unset })).code, args.join(' ')).toBe(0);
    }
    expect(existsSync(file)).toBe(false);
    // The server's own admin token is still the only one.
    const listed = JSON.parse((await cli('token', 'list', '--json')).stdout) as { name: string }[];
    expect(listed.map((t) => t.name)).not.toContain('admin');
  });

  it.each([
    [['token', 'create'], 2, /^narwal: usage:/],
    [['token', 'frobnicate'], 2, /^narwal: usage:/],
    [['token', 'revoke'], 2, /^narwal: usage:/],
    [['token', 'create', 'x'], 1, /^narwal: a token needs at least one scope\n$/],
    [['token', 'create', 'x', '--read', 'a/b/c'], 1, /^narwal: invalid repository pattern "a\/b\/c"/],
    [['token', 'create', 'bad name', '--read', '**'], 1, /^narwal: invalid token name "bad name"/],
    [['token', 'create', 'x', '--admin'], 1, /^narwal: .*--admin/],
    [['token', 'revoke', 'nobody'], 1, /^narwal: no token with id or name "nobody"\n$/],
  ])('refuses %j with exit %i and a message', async (args, code, message) => {
    const before = (await cli('token', 'list', '--json')).stdout;
    const out = await cli(...args);
    expect(out.code).toBe(code);
    expect(out.stderr).toMatch(message);
    expect(out.stdout).toBe('');
    expect((await cli('token', 'list', '--json')).stdout).toBe(before);
  });
});

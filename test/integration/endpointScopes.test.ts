/**
 * No endpoint outside git is reachable without the right scope either: the JSON API under
 * /api/v1, the monitor pages, the repository lists of both, protection rules and rewind (dry run
 * and real, through the API and the monitor's form). A private repository is invisible to
 * anonymous clients (401, asking for credentials) and to a token of another repository (404, as
 * if it did not exist): none of its data is in any answer, and it is missing from the lists. A
 * read token reads but cannot rewind (403); a write token can. Refused rewinds write nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { indexKey } from '../../lib/wal/keys.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const PRIVATE = 'team/private';
let server: RunningNarwal & { app: App };
let firstHead: string;
let secondHead: string;
let firstSeq: number;
const tokens: Record<'otherReader' | 'reader' | 'writer' | 'globalReader', string> = {
  otherReader: '',
  reader: '',
  writer: '',
  globalReader: '',
};

const basic = (token: string) => `Basic ${Buffer.from(`x:${token}`).toString('base64')}`;

beforeAll(async () => {
  server = await startInProcess();
  const home = await makeHome();
  const work = await workRepo(home, 1, 'private');
  firstHead = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
  await gitOk(['push', `${server.authUrl}/${PRIVATE}.git`, 'main'], { cwd: work, home });
  secondHead = await commitFile(work, home, 'secret.txt', 'private data\n');
  await gitOk(['push', `${server.authUrl}/${PRIVATE}.git`, 'main'], { cwd: work, home });
  const other = await workRepo(home, 1, 'other');
  await gitOk(['push', `${server.authUrl}/team/other.git`, 'main'], { cwd: other, home });
  const create = async (name: string, scope: 'read' | 'write', pattern: string) =>
    (await server.app.tokens.create({ name, grants: [{ scope, pattern }] })).token;
  tokens.otherReader = await create('other-reader', 'read', 'team/other');
  tokens.reader = await create('private-reader', 'read', PRIVATE);
  tokens.writer = await create('private-writer', 'write', PRIVATE);
  tokens.globalReader = await create('global-reader', 'read', '**');
  const log = await call('GET', `/api/v1/repos/${PRIVATE}/-/log`, tokens.reader);
  const entries = (JSON.parse(log.text) as { items: { seq: number }[] }).items;
  firstSeq = Math.min(...entries.map((e) => e.seq));
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function call(
  method: string,
  path: string,
  token: string | null,
  options: { html?: boolean; json?: unknown; form?: Record<string, string> } = {},
): Promise<{ status: number; text: string; type: string }> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = basic(token);
  if (options.html) headers.accept = 'text/html';
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  }
  const response = await fetch(`${server.url}${path}`, { method, headers, body });
  return {
    status: response.status,
    text: await response.text(),
    type: response.headers.get('content-type') ?? '',
  };
}

/** Every read endpoint of the private repository, JSON API and monitor. */
const readEndpoints = () => [
  { path: `/api/v1/repos/${PRIVATE}`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/log`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/entries/${firstSeq + 1}`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/refs`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/refs?at=${firstSeq}`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/who?ref=refs/heads/main`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/diff?from=${firstSeq}&to=${firstSeq + 1}`, html: false },
  { path: `/api/v1/repos/${PRIVATE}/-/protection`, html: false },
  { path: `/${PRIVATE}`, html: true },
  { path: `/${PRIVATE}/-/entry/${firstSeq + 1}`, html: true },
  { path: `/${PRIVATE}/-/diff?from=${firstSeq}&to=${firstSeq + 1}`, html: true },
  { path: `/${PRIVATE}/-/who?ref=refs/heads/main`, html: true },
];

function leaks(text: string): boolean {
  return text.includes(firstHead) || text.includes(secondHead) || text.includes('secret.txt');
}

async function indexEtag(): Promise<string> {
  return (await server.app.store.head(indexKey(PRIVATE))).etag;
}

describe('scopes on the JSON API and the monitor', () => {
  it('serves every read endpoint of a private repository to a read token (and to a global one)', async () => {
    for (const token of [tokens.reader, tokens.globalReader]) {
      for (const { path, html } of readEndpoints()) {
        const response = await call('GET', path, token, { html });
        expect(response.status, path).toBe(200);
      }
    }
    expect((await call('GET', `/api/v1/repos/${PRIVATE}/-/refs`, tokens.reader)).text).toContain(secondHead);
  });

  it('asks anonymous clients for credentials and shows them none of the data', async () => {
    for (const { path, html } of readEndpoints()) {
      const response = await call('GET', path, null, { html });
      expect(response.status, path).toBe(401);
      expect(leaks(response.text), path).toBe(false);
      if (path.startsWith('/api/')) expect(JSON.parse(response.text).error, path).toMatch(/^narwal: /);
    }
  });

  it('answers a token of another repository as if the repository did not exist', async () => {
    const missing = await call('GET', '/api/v1/repos/team/never-was', tokens.otherReader);
    for (const { path, html } of readEndpoints()) {
      const response = await call('GET', path, tokens.otherReader, { html });
      expect(response.status, path).toBe(404);
      expect(leaks(response.text), path).toBe(false);
    }
    expect(missing.status).toBe(404);
    expect(
      (await call('GET', `/api/v1/repos/${PRIVATE}`, tokens.otherReader)).text.replace(PRIVATE, 'X'),
    ).toBe(missing.text.replace('team/never-was', 'X'));
  });

  it('leaves the private repository out of both repository lists for anonymous and other tokens', async () => {
    for (const token of [null, tokens.otherReader]) {
      const api = await call('GET', '/api/v1/repos', token);
      expect(api.status).toBe(200);
      const names = (JSON.parse(api.text) as { repos: { name: string }[] }).repos.map((r) => r.name);
      expect(names).not.toContain(PRIVATE);
      const page = await call('GET', '/', token, { html: true });
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(PRIVATE);
    }
    const api = await call('GET', '/api/v1/repos', tokens.otherReader);
    expect(api.text).toContain('team/other');
    expect((await call('GET', '/api/v1/repos', tokens.reader)).text).toContain(PRIVATE);
    expect((await call('GET', '/', tokens.reader, { html: true })).text).toContain(PRIVATE);
  });

  it('rewinds (dry run or real, API or monitor) only with write access, writing nothing otherwise', async () => {
    const before = await indexEtag();
    const apiRewind = (token: string | null, dryRun: boolean) =>
      call('POST', `/api/v1/repos/${PRIVATE}/-/rewind`, token, { json: { to: firstSeq, dryRun } });
    const formRewind = (token: string | null) =>
      call('POST', `/${PRIVATE}/-/rewind`, token, {
        html: true,
        form: { to: String(firstSeq), expect: String(firstSeq + 1) },
      });
    const preview = (token: string | null) =>
      call('GET', `/${PRIVATE}/-/rewind?to=${firstSeq}`, token, { html: true });
    for (const [token, status] of [
      [null, 401],
      [tokens.otherReader, 404],
      [tokens.reader, 403],
      [tokens.globalReader, 403],
    ] as const) {
      for (const response of [
        await apiRewind(token, true),
        await apiRewind(token, false),
        await formRewind(token),
        await preview(token),
      ]) {
        expect(response.status).toBe(status);
        // JSON {"error": "narwal: ..."} from the API, an error page with the message from the monitor.
        expect(response.text).toMatch(/narwal: |<div class="box error">[^<\s]/);
      }
    }
    expect(await indexEtag()).toBe(before);
    // The same endpoints work with write access, so the refusals above are the scopes' doing.
    expect((await preview(tokens.writer)).status).toBe(200);
    expect((await apiRewind(tokens.writer, true)).status).toBe(200);
    expect(await indexEtag()).toBe(before);
  });

  it('changes protection rules only with admin access', async () => {
    const before = await indexEtag();
    for (const [token, status] of [
      [null, 401],
      [tokens.otherReader, 404],
      [tokens.reader, 403],
      [tokens.writer, 403],
    ] as const) {
      const put = await call('PUT', `/api/v1/repos/${PRIVATE}/-/protection`, token, {
        json: { rules: [{ pattern: 'refs/heads/main', denyForce: true }] },
      });
      expect(put.status).toBe(status);
      const del = await call('DELETE', `/api/v1/repos/${PRIVATE}/-/protection`, token);
      expect(del.status).toBe(status);
    }
    expect(await indexEtag()).toBe(before);
  });
});

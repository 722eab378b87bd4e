/**
 * What the LFS routes answer to bad input, over HTTP against a real server: each refusal is LFS's
 * JSON error (`{"message", "request_id"}` as `application/vnd.git-lfs+json`, or a per-object error
 * in a batch answer), and nothing of a refused upload is left in the store. Also byte ranges of a
 * download, which git-lfs uses to resume one.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import { lfsPrefix } from '../../../lib/wal/keys.js';
import { git, gitOk } from '../../helpers/gitClient.js';
import { makeLfsHome, useToken } from '../../helpers/lfsClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../../helpers/narwalServer.js';

const REPO = 'team/app';
const MAX = 1024 * 1024;
const LFS_JSON = 'application/vnd.git-lfs+json';

let server: RunningNarwal & { app: App };
let writer: string;
let reader: string;

beforeAll(async () => {
  server = await startInProcess({ env: { NARWAL_LFS_MAX_OBJECT_BYTES: String(MAX) } });
  writer = (
    await server.app.tokens.create({ name: 'writer', grants: [{ scope: 'write', pattern: 'team/*' }] })
  ).token;
  reader = (
    await server.app.tokens.create({ name: 'reader', grants: [{ scope: 'read', pattern: 'team/*' }] })
  ).token;
  await server.app.wal.createRepo(REPO, { public: false });
});
afterAll(async () => {
  await server?.stop();
});

const basic = (token: string) => `Basic ${Buffer.from(`lfs:${token}`).toString('base64')}`;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const lfsUrl = (rest: string, repo = REPO) => `${server.url}/${repo}.git/info/lfs${rest}`;

async function batch(
  operation: string,
  objects: unknown[],
  token: string | null = writer,
  repo = REPO,
): Promise<Response> {
  return fetch(lfsUrl('/objects/batch', repo), {
    method: 'POST',
    headers: {
      accept: LFS_JSON,
      'content-type': LFS_JSON,
      ...(token === null ? {} : { authorization: basic(token) }),
    },
    body: JSON.stringify({ operation, transfers: ['basic'], objects, hash_algo: 'sha256' }),
  });
}

/** An LFS JSON error: the status, the content type, and the message git-lfs prints. */
async function lfsError(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe(LFS_JSON);
  const body = (await response.json()) as { message?: unknown; request_id?: unknown };
  expect(typeof body.message).toBe('string');
  expect(typeof body.request_id).toBe('string');
  return body.message as string;
}

/** Every store key under the repository's LFS prefix: nothing refused may be left there. */
async function lfsKeys(): Promise<string[]> {
  return (await server.app.store.list(lfsPrefix(REPO))).keys.slice();
}

interface UploadAction {
  href: string;
  header?: Record<string, string>;
}

async function uploadActionFor(data: Buffer, repo = REPO): Promise<UploadAction> {
  const answer = (await (
    await batch('upload', [{ oid: sha256(data), size: data.length }], writer, repo)
  ).json()) as {
    objects: { actions?: { upload?: UploadAction } }[];
  };
  const action = answer.objects[0]?.actions?.upload;
  if (action === undefined) throw new Error(`no upload action: ${JSON.stringify(answer)}`);
  return action;
}

describe('LFS bad input', () => {
  it('refuses an upload of another size than the batch announced, storing nothing', async () => {
    const data = randomBytes(5000);
    const action = await uploadActionFor(data);
    const sent = Buffer.concat([data, Buffer.from('extra')]);
    const res = await fetch(action.href, { method: 'PUT', headers: action.header, body: sent });
    expect(await lfsError(res, 422)).toMatch(/announced 5000 bytes .* 5005/);
    expect(await lfsKeys()).toEqual([]);
  });

  it('refuses bytes whose SHA-256 is not the oid, storing nothing', async () => {
    const data = randomBytes(5000);
    const action = await uploadActionFor(data);
    const res = await fetch(action.href, { method: 'PUT', headers: action.header, body: randomBytes(5000) });
    expect(await lfsError(res, 422)).toMatch(/SHA-256/);
    expect(await lfsKeys()).toEqual([]);
    // The store's staging directory holds nothing of it either.
    const tmp = await readdir(join(server.dataDir, 'store', 'tmp')).catch(() => []);
    expect(tmp).toEqual([]);
  });

  it('answers an oid that is not 64 hex digits with an error for that object, and refuses it as a URL', async () => {
    const good = randomBytes(10);
    const res = await batch('upload', [
      { oid: 'abc123', size: 10 },
      { oid: sha256(good).toUpperCase(), size: 10 },
      { oid: sha256(good), size: 10 },
    ]);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as {
      objects: { oid: string; error?: { code: number; message: string } }[];
    };
    expect(answer.objects.map((o) => o.error?.code)).toEqual([422, 422, undefined]);
    expect(answer.objects[0]?.error?.message).toMatch(/64 lowercase hex/);
    const put = await fetch(lfsUrl('/objects/abc123'), {
      method: 'PUT',
      headers: { authorization: basic(writer) },
      body: good,
    });
    expect(await lfsError(put, 422)).toMatch(/64 lowercase hex/);
    const get = await fetch(lfsUrl('/objects/..%2f..%2fetc'), { headers: { authorization: basic(writer) } });
    expect(get.status).toBe(400);
    expect(await lfsKeys()).toEqual([]);
  });

  it('refuses an object larger than the configured maximum, in the batch and on upload', async () => {
    const res = await batch('upload', [{ oid: sha256(Buffer.from('big')), size: MAX + 1 }]);
    const answer = (await res.json()) as { objects: { error?: { code: number; message: string } }[] };
    expect(answer.objects[0]?.error?.code).toBe(422);
    expect(answer.objects[0]?.error?.message).toMatch(/larger than this server accepts/);
    const data = randomBytes(MAX + 1);
    const put = await fetch(lfsUrl(`/objects/${sha256(data)}`), {
      method: 'PUT',
      headers: { authorization: basic(writer) },
      body: data,
    });
    expect(await lfsError(put, 413)).toMatch(/larger than this server accepts \(1048576 bytes\)/);
    expect(await lfsKeys()).toEqual([]);
  });

  it('asks a client without credentials for them, as LFS JSON with LFS-Authenticate', async () => {
    const data = randomBytes(100);
    const res = await batch('upload', [{ oid: sha256(data), size: 100 }], null);
    expect(await lfsError(res, 401)).toMatch(/authentication required/);
    expect(res.headers.get('lfs-authenticate')).toMatch(/^Basic /);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
    const put = await fetch(lfsUrl(`/objects/${sha256(data)}`), { method: 'PUT', body: data });
    expect(await lfsError(put, 401)).toMatch(/authentication required/);
    const wrong = await batch('download', [{ oid: sha256(data), size: 100 }], 'nwl_0000000000000000_bogus');
    expect(await lfsError(wrong, 401)).toMatch(/invalid credentials/);
    expect(await lfsKeys()).toEqual([]);
  });

  it('refuses uploads by a read-only token, through the API and through git lfs', async () => {
    const data = randomBytes(100);
    expect(await lfsError(await batch('upload', [{ oid: sha256(data), size: 100 }], reader), 403)).toMatch(
      /token reader may not push to team\/app/,
    );
    const put = await fetch(lfsUrl(`/objects/${sha256(data)}`), {
      method: 'PUT',
      headers: { authorization: basic(reader) },
      body: data,
    });
    expect(await lfsError(put, 403)).toMatch(/may not push/);
    const home = await makeLfsHome();
    try {
      const work = await mkdtemp(join(tmpdir(), 'narwal-lfs-ro-'));
      await gitOk(['init', '-q', '-b', 'main', work], { home });
      await useToken(work, home, reader);
      await gitOk(['lfs', 'track', '*.bin'], { cwd: work, home });
      await gitOk(['add', '.gitattributes'], { cwd: work, home });
      await writeFile(join(work, 'a.bin'), randomBytes(2000));
      await gitOk(['add', 'a.bin'], { cwd: work, home });
      await gitOk(['commit', '-q', '-m', 'a'], { cwd: work, home });
      const pushed = await git(['push', `${server.url}/${REPO}.git`, 'main'], { cwd: work, home });
      expect(pushed.code).not.toBe(0);
      expect(pushed.stderr).toMatch(/token reader may not push to team\/app/);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    expect(await lfsKeys()).toEqual([]);
  });

  it('refuses a batch that is not one: bad JSON, another media type, another hash algorithm', async () => {
    const post = (body: string, type = LFS_JSON) =>
      fetch(lfsUrl('/objects/batch'), {
        method: 'POST',
        headers: { 'content-type': type, authorization: basic(writer) },
        body,
      });
    expect(await lfsError(await post('{"operation":'), 422)).toMatch(/not valid JSON/);
    expect(await lfsError(await post('{"operation":"delete","objects":[]}'), 422)).toMatch(/operation/);
    expect(await lfsError(await post('{}', 'text/plain'), 415)).toMatch(/application\/vnd\.git-lfs\+json/);
    const md5 = await post(
      JSON.stringify({ operation: 'upload', objects: [{ oid: 'a', size: 1 }], hash_algo: 'md5' }),
    );
    expect(await lfsError(md5, 409)).toMatch(/only sha256/);
    const verify = await fetch(lfsUrl('/verify'), {
      method: 'POST',
      headers: { 'content-type': LFS_JSON, authorization: basic(writer) },
      body: JSON.stringify({ oid: sha256(Buffer.from('never uploaded')), size: 14 }),
    });
    expect(await lfsError(verify, 404)).toMatch(/not on the server/);
  });

  it('serves byte ranges of a stored object, so an interrupted download resumes', async () => {
    // In a repository of its own: the others check that nothing was stored in theirs.
    const repo = 'team/ranges';
    await server.app.wal.createRepo(repo, { public: false });
    const data = randomBytes(300_000);
    const oid = sha256(data);
    const action = await uploadActionFor(data, repo);
    expect((await fetch(action.href, { method: 'PUT', headers: action.header, body: data })).status).toBe(
      200,
    );
    const auth = { authorization: basic(ADMIN_TOKEN) };
    const url = lfsUrl(`/objects/${oid}`, repo);
    const tail = await fetch(url, { headers: { ...auth, range: 'bytes=100000-' } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(`bytes 100000-299999/300000`);
    expect(Buffer.from(await tail.arrayBuffer()).equals(data.subarray(100_000))).toBe(true);
    const middle = await fetch(url, { headers: { ...auth, range: 'bytes=10-19' } });
    expect(Buffer.from(await middle.arrayBuffer()).equals(data.subarray(10, 20))).toBe(true);
    const beyond = await fetch(url, { headers: { ...auth, range: 'bytes=300000-' } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe('bytes */300000');
    const whole = await fetch(url, { headers: auth });
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(data)).toBe(true);
  });
});

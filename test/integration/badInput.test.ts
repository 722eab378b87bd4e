/**
 * Bad input gets a clear error and changes nothing: each case checks the answer a client sees and
 * that the log did not move.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
let head: string;
const repo = 'bad/input';
const ZERO = '0'.repeat(40);
const auth = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;

beforeAll(async () => {
  server = await startInProcess({ env: { NARWAL_MAX_PUSH_BYTES: String(256 * 1024) } });
  home = await makeHome();
  const work = await workRepo(home, 2);
  await gitOk(['push', `${server.authUrl}/${repo}.git`, 'main'], { cwd: work, home });
  head = (await gitOk(['rev-parse', 'main'], { cwd: work, home })).trim();
});
afterAll(async () => {
  await server?.stop();
});

/** A GET with the path exactly as given (fetch would normalize away the dot segments). */
function rawGet(path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}/`, { path, headers: { authorization: auth } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => {
        text += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

function pkt(line: string): Buffer {
  const body = Buffer.from(line);
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}

function emptyPack(): Buffer {
  const header = Buffer.from('5041434b0000000200000000', 'hex');
  return Buffer.concat([header, createHash('sha1').update(header).digest()]);
}

async function receivePack(body: Buffer, target = repo): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.url}/${target}.git/git-receive-pack`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-git-receive-pack-request' },
    body: new Uint8Array(body),
  });
  return { status: response.status, text: Buffer.from(await response.arrayBuffer()).toString('latin1') };
}

async function seq(): Promise<number> {
  return (await server.app.wal.readIndexFully(repo))?.index.seq ?? -1;
}

describe('bad input', () => {
  it.each([
    ['a path with ..', '/bad/../input.git/info/refs?service=git-upload-pack'],
    ['an encoded ..', '/bad/%2e%2e/input.git/info/refs?service=git-upload-pack'],
    ['three segments', '/a/b/c.git/info/refs?service=git-upload-pack'],
    ['odd characters', '/bad/in$put.git/info/refs?service=git-upload-pack'],
    ['a leading dot', '/bad/.input.git/info/refs?service=git-upload-pack'],
    ['a NUL byte', '/bad/in%00put.git/info/refs?service=git-upload-pack'],
  ])('refuses a repository name with %s', async (_, path) => {
    const response = await rawGet(path);
    expect(response.status).toBe(400);
    expect(response.text).toMatch(/narwal: /);
  });

  it('refuses a clone of an invalid repository name with a message git prints', async () => {
    const out = await git(['clone', `${server.authUrl}/a/b/c.git`, '/tmp/narwal-never'], { home });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain('invalid repository name');
  });

  it('asks for credentials without a token, and refuses a wrong one', async () => {
    const anonymous = await fetch(`${server.url}/${repo}.git/info/refs?service=git-upload-pack`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic/);
    const wrong = await fetch(`${server.url}/${repo}.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from('x:nope').toString('base64')}` },
    });
    expect(wrong.status).toBe(401);
    const push = await git(['push', `${server.url}/${repo}.git`, 'main'], {
      home,
      cwd: await workRepo(home, 1),
    });
    expect(push.code).not.toBe(0);
  });

  it('answers ng for an invalid ref name and writes nothing', async () => {
    const before = await seq();
    const body = Buffer.concat([
      pkt(`${ZERO} ${head} refs/heads/bad..name\0report-status side-band-64k`),
      Buffer.from('0000'),
      emptyPack(),
    ]);
    const { status, text } = await receivePack(body);
    expect(status).toBe(200);
    expect(text).toContain('ng refs/heads/bad..name funny refname');
    expect(await seq()).toBe(before);
  });

  it('refuses malformed pkt-lines with 400', async () => {
    const before = await seq();
    const { status, text } = await receivePack(Buffer.from('zz12this is not a pkt-line'));
    expect(status).toBe(400);
    expect(text).toMatch(/narwal: .*pkt-line/);
    expect(await seq()).toBe(before);
  });

  it('refuses a request cut off in the middle of its commands', async () => {
    const before = await seq();
    const whole = pkt(`${head} ${ZERO} refs/heads/main\0report-status`);
    const { status, text } = await receivePack(whole.subarray(0, whole.length - 10));
    expect(status).toBe(400);
    expect(text).toContain('narwal: ');
    expect(await seq()).toBe(before);
  });

  it('reports an unpack error for a truncated or corrupt pack and writes nothing', async () => {
    const before = await seq();
    const pack = emptyPack();
    const commands = Buffer.concat([
      pkt(`${ZERO} ${head} refs/heads/truncated\0report-status`),
      Buffer.from('0000'),
    ]);
    const truncated = await receivePack(Buffer.concat([commands, pack.subarray(0, 20)]));
    expect(truncated.text).toMatch(/unpack (?!ok)/);
    const corrupt = Buffer.from(pack);
    corrupt[corrupt.length - 1] = (corrupt[corrupt.length - 1] ?? 0) ^ 0xff;
    const bad = await receivePack(Buffer.concat([commands, corrupt]));
    expect(bad.text).toMatch(/unpack (?!ok)/);
    expect(await seq()).toBe(before);
  });

  it('refuses a push naming objects it did not send', async () => {
    const before = await seq();
    const missing = 'f'.repeat(40);
    const body = Buffer.concat([
      pkt(`${ZERO} ${missing} refs/heads/phantom\0report-status`),
      Buffer.from('0000'),
      emptyPack(),
    ]);
    const { text } = await receivePack(body);
    expect(text).toMatch(/ng refs\/heads\/phantom (missing necessary objects|bad pack)/);
    expect(await seq()).toBe(before);
  });

  it('refuses a push over the configured size with 413', async () => {
    const before = await seq();
    const big = Buffer.alloc(300 * 1024, 1);
    const body = Buffer.concat([
      pkt(`${ZERO} ${head} refs/heads/huge\0report-status`),
      Buffer.from('0000'),
      big,
    ]);
    const { status, text } = await receivePack(body);
    expect(status).toBe(413);
    expect(text).toContain('larger than this server accepts');
    expect(await seq()).toBe(before);
  });

  it('refuses dumb-HTTP requests and unknown services', async () => {
    const dumb = await fetch(`${server.url}/${repo}.git/info/refs`, { headers: { authorization: auth } });
    expect(dumb.status).toBe(403);
    const other = await fetch(`${server.url}/${repo}.git/info/refs?service=git-upload-archive`, {
      headers: { authorization: auth },
    });
    expect(other.status).toBe(403);
  });

  it('refuses a wrong content type', async () => {
    const response = await fetch(`${server.url}/${repo}.git/git-upload-pack`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'text/plain' },
      body: '0000',
    });
    expect(response.status).toBe(400);
  });
});

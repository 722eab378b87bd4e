/**
 * One repository's data is never reachable through another's URL: dot segments, encoded dots
 * and slashes, doubled slashes, case and `.git` variants either name no repository (400), name a
 * different one (404 here), or name the same one, and are always authorized as the name they
 * resolve to. Naming another repository's objects from inside one's own gets nothing either.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };
let home: string;
let alphaHead: string;
let betaHead: string;
let betaReader: string;
let betaWriter: string;
const ZERO = '0'.repeat(40);

const basic = (token: string) => `Basic ${Buffer.from(`x:${token}`).toString('base64')}`;

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  const alpha = await workRepo(home, 1, 'alpha');
  alphaHead = await commitFile(alpha, home, 'secret.txt', 'only alpha has this\n');
  await gitOk(['push', `${server.authUrl}/team/alpha.git`, 'main'], { cwd: alpha, home });
  const beta = await workRepo(home, 1, 'beta');
  betaHead = (await gitOk(['rev-parse', 'HEAD'], { cwd: beta, home })).trim();
  await gitOk(['push', `${server.authUrl}/team/beta.git`, 'main'], { cwd: beta, home });
  betaReader = (
    await server.app.tokens.create({ name: 'beta-reader', grants: [{ scope: 'read', pattern: 'team/beta' }] })
  ).token;
  betaWriter = (
    await server.app.tokens.create({
      name: 'beta-writer',
      grants: [{ scope: 'write', pattern: 'team/beta' }],
    })
  ).token;
});
afterAll(async () => {
  await server?.stop();
});

/** A request with the path exactly as given (fetch would normalize the dot segments away). */
function raw(
  path: string,
  options: { token: string; method?: string; body?: Buffer; contentType?: string },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}/`,
      {
        path,
        method: options.method ?? 'GET',
        headers: {
          authorization: basic(options.token),
          ...(options.contentType ? { 'content-type': options.contentType } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d.toString('latin1');
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const refs = '/info/refs?service=git-upload-pack';

describe('repository isolation', () => {
  it.each([
    ['a dot-dot segment', `/team/beta/../alpha.git${refs}`],
    ['dot-dot past the root of the name', `/team/beta.git/../../team/alpha.git${refs}`],
    ['an encoded dot-dot', `/team/beta/%2e%2e/alpha.git${refs}`],
    ['an upper-case encoded dot-dot', `/team/beta/%2E%2E/alpha.git${refs}`],
    ['an encoded slash', `/team%2Falpha.git${refs}`],
    ['an encoded slash in lower case', `/team%2falpha.git${refs}`],
    ['an encoded backslash', `/team%5Calpha.git${refs}`],
    ['a leading double slash', `//team/alpha.git${refs}`],
    ['a double slash inside', `/team//alpha.git${refs}`],
    ['a dot segment', `/team/./alpha.git${refs}`],
    ['a leading dot segment', `/./team/alpha.git${refs}`],
    ['a doubled .git suffix', `/team/alpha.git.git${refs}`],
    ['a service path inside the name', `/team/beta.git/info/refs/../../alpha.git${refs}`],
  ])('refuses %s with 400, for any token', async (_, path) => {
    for (const token of [betaReader, ADMIN_TOKEN]) {
      const response = await raw(path, { token });
      expect(response.status).toBe(400);
      expect(response.text).toMatch(/^narwal: /);
      expect(response.text).not.toContain(alphaHead);
    }
  });

  it('refuses the same paths for the fetch and push requests themselves', async () => {
    for (const [service, type] of [
      ['git-upload-pack', 'application/x-git-upload-pack-request'],
      ['git-receive-pack', 'application/x-git-receive-pack-request'],
    ] as const) {
      for (const path of [`/team/beta/../alpha.git/${service}`, `/team/beta/%2e%2e/alpha.git/${service}`]) {
        const before = (await server.app.wal.readIndexFully('team/alpha'))?.etag;
        const response = await raw(path, {
          token: ADMIN_TOKEN,
          method: 'POST',
          body: Buffer.from('0000'),
          contentType: type,
        });
        expect(response.status).toBe(400);
        expect((await server.app.wal.readIndexFully('team/alpha'))?.etag).toBe(before);
      }
    }
  });

  it.each([
    ['upper case', `/TEAM/ALPHA.git${refs}`],
    ['mixed case', `/Team/Alpha.git${refs}`],
    ['an upper-case suffix', `/team/alpha.GIT${refs}`],
  ])('treats %s as another repository, which does not exist', async (_, path) => {
    for (const token of [betaReader, ADMIN_TOKEN]) {
      const response = await raw(path, { token });
      expect(response.status).toBe(404);
      expect(response.text).toMatch(/^narwal: repository \S+ not found/);
      expect(response.text).not.toContain(alphaHead);
    }
  });

  it('serves the same repository with or without .git, a trailing slash or an encoded dot', async () => {
    for (const path of [
      `/team/beta.git${refs}`,
      `/team/beta${refs}`,
      `/team/beta.git/info/refs/?service=git-upload-pack`,
      `/team/beta%2egit${refs}`,
    ]) {
      const response = await raw(path, { token: betaReader });
      expect(response.status, path).toBe(200);
      expect(response.text).toContain(betaHead);
      expect(response.text).not.toContain(alphaHead);
    }
    for (const path of [`/team/alpha${refs}`, `/team/alpha.git${refs}`, `/team/alpha%2egit${refs}`]) {
      const response = await raw(path, { token: betaReader });
      expect(response.status, path).toBe(404);
      expect(response.text).not.toContain(alphaHead);
    }
  });

  it("does not hand out another repository's objects when asked for them by id", async () => {
    const dir = await workRepo(home, 0, 'thief');
    const url = `${server.url.replace('://', `://x:${betaReader}@`)}/team/beta.git`;
    const out = await git(['-c', 'protocol.version=2', 'fetch', url, alphaHead], { cwd: dir, home });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/not our ref/);
    expect((await git(['cat-file', '-e', alphaHead], { cwd: dir, home })).code).not.toBe(0);
    // git refuses to send that want in protocol v0 itself; the server refuses it too.
    const want = `want ${alphaHead} side-band-64k\n`;
    const body = Buffer.from(`${(want.length + 4).toString(16).padStart(4, '0')}${want}00000009done\n`);
    const response = await raw('/team/beta.git/git-upload-pack', {
      token: betaReader,
      method: 'POST',
      body,
      contentType: 'application/x-git-upload-pack-request',
    });
    expect(response.text).toContain('not our ref');
    expect(response.text).not.toContain('PACK');
  });

  it("does not let a push to one repository claim another repository's objects", async () => {
    const before = (await server.app.wal.readIndexFully('team/beta'))?.etag;
    const header = Buffer.from('5041434b0000000200000000', 'hex');
    const emptyPack = Buffer.concat([header, createHash('sha1').update(header).digest()]);
    const line = `${ZERO} ${alphaHead} refs/heads/stolen\0report-status`;
    const body = Buffer.concat([
      Buffer.from((line.length + 4).toString(16).padStart(4, '0')),
      Buffer.from(line),
      Buffer.from('0000'),
      emptyPack,
    ]);
    const response = await raw('/team/beta.git/git-receive-pack', {
      token: betaWriter,
      method: 'POST',
      body,
      contentType: 'application/x-git-receive-pack-request',
    });
    expect(response.text).toMatch(/ng refs\/heads\/stolen (missing necessary objects|bad pack)/);
    expect((await server.app.wal.readIndexFully('team/beta'))?.etag).toBe(before);
  });
});

/**
 * Secrets never reach a log: everything two real `narwal serve` processes print (their banner
 * and every log line, with request logging on) through pushes, clones and fetches with tokens
 * in the URL, failed authentication of every kind, tokens typed into the path (plain and
 * percent-encoded), a revoked token,
 * and a node whose store fails while it checks a token.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { ADMIN_TOKEN, startProcess, tempDataDir } from '../helpers/narwalServer.js';

type Node = Awaited<ReturnType<typeof startProcess>>;
let dataDir: string;
let node: Node;
let failing: Node;
let home: string;
const secrets: string[] = [ADMIN_TOKEN];

const withToken = (base: string, token: string, repo: string) =>
  `${base.replace('://', `://someone:${token}@`)}/${repo}.git`;

async function issue(name: string, ...grants: string[]): Promise<string> {
  const out = await narwalCli(['token', 'create', name, ...grants], { dataDir });
  if (out.code !== 0) throw new Error(out.stderr);
  const token = out.stdout.trim();
  secrets.push(token, token.slice(21));
  return token;
}

beforeAll(async () => {
  dataDir = await tempDataDir();
  const env = { NARWAL_QUIET: '0', NARWAL_TOKEN_CACHE_MS: '0' };
  node = await startProcess({ dataDir, env });
  failing = await startProcess({ dataDir, env: { ...env, NARWAL_STORE_FAULTS: 'get503=1' } });
  home = await makeHome();
});
afterAll(async () => {
  await Promise.all([node?.stop(), failing?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
});

describe('secrets in logs', () => {
  it('never appear in anything a node prints, through a whole push, clone and failed-auth cycle', async () => {
    const work = await workRepo(home, 2);
    const writer = await issue('writer', '--write', 'team/*');
    const reader = await issue('reader', '--read', 'team/*');
    const leaving = await issue('leaving', '--read', 'team/*');
    await gitOk(['push', withToken(node.url, ADMIN_TOKEN, 'team/app'), 'main'], { cwd: work, home });
    await gitOk(['push', withToken(node.url, writer, 'team/app'), 'main:topic'], { cwd: work, home });
    const clone = join(await mkdtemp(join(tmpdir(), 'narwal-logs-')), 'c');
    await gitOk(['clone', withToken(node.url, reader, 'team/app'), clone], { home });
    await gitOk(['-c', 'protocol.version=0', 'fetch', withToken(node.url, reader, 'team/app')], {
      cwd: clone,
      home,
    });
    expect((await narwalCli(['token', 'revoke', 'leaving'], { dataDir })).code).toBe(0);

    const wrongSecret = `${writer.slice(0, -4)}${writer.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const unknownId = `nwl_${'0'.repeat(16)}_${writer.slice(21)}`;
    const refused = [wrongSecret, unknownId, leaving, `${ADMIN_TOKEN}-nope`, 'not-a-token-at-all-1234'];
    secrets.push(wrongSecret, `${ADMIN_TOKEN}-nope`, 'not-a-token-at-all-1234');
    for (const token of refused) {
      const out = await git(['ls-remote', withToken(node.url, token, 'team/app')], { home });
      expect(out.code).not.toBe(0);
      const push = await git(['push', withToken(node.url, token, 'team/app'), 'main:x'], { cwd: work, home });
      expect(push.code).not.toBe(0);
    }
    // A read token that tries to push, and secrets typed where a repository name goes.
    const push = await git(['push', withToken(node.url, reader, 'team/app'), 'main:y'], { cwd: work, home });
    expect(push.stderr).toContain('may not push');
    const encoded = (text: string) => [...Buffer.from(text)].map((b) => `%${b.toString(16)}`).join('');
    for (const path of [
      `/${writer}/info/refs`,
      `/team/${ADMIN_TOKEN}.git/info/refs`,
      `/${writer}`,
      `/${encoded(writer)}/info/refs`,
      `/team/${encoded(ADMIN_TOKEN)}.git/info/refs`,
      `/team/%6E${writer.slice(1).replaceAll('_', '%5F')}.git/info/refs`,
    ]) {
      const response = await fetch(`${node.url}${path}?service=git-upload-pack`, {
        headers: { authorization: `Basic ${Buffer.from(`x:${reader}`).toString('base64')}` },
      });
      expect(response.status).toBeGreaterThanOrEqual(400);
    }
    // A node whose store fails while it looks the token up logs the error.
    const down = await git(['ls-remote', withToken(failing.url, writer, 'team/app')], { home });
    expect(down.code).not.toBe(0);
    const lookup = await fetch(`${failing.url}/team/app.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`someone:${writer}`).toString('base64')}` },
    });
    expect(lookup.status).toBe(503);

    // Read only once both have exited: a log line may still be in the pipe after its response.
    await Promise.all([node.stop(), failing.stop()]);
    const printed = `${node.output()}\n${failing.output()}`;
    const lines = printed.split('\n').filter((l) => l.startsWith('{'));
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.message === 'request');
    // The capture saw the cycle: successes, refusals, and the failing node's error.
    expect(requests.filter((r) => r.status === 200).length).toBeGreaterThan(5);
    expect(requests.filter((r) => r.status === 401).length).toBeGreaterThan(5);
    expect(requests.some((r) => r.status === 403)).toBe(true);
    expect(requests.some((r) => String(r.path).includes('[redacted]'))).toBe(true);
    expect(printed).toContain('"message":"store unavailable"');
    expect(printed).toMatch(/injected 503 on get[^\n]*TokenStore/);
    // Percent-encoded text is read decoded, as a person reading the log would.
    const decoded = printed.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
      Buffer.from(run.replaceAll('%', ''), 'hex').toString('latin1'),
    );
    for (const secret of secrets) {
      expect(printed).not.toContain(secret);
      expect(decoded).not.toContain(secret);
      expect(printed).not.toContain(Buffer.from(`someone:${secret}`).toString('base64'));
      expect(printed).not.toContain(encodeURIComponent(secret));
    }
    // The banner's `admin:$NARWAL_ADMIN_TOKEN@` names a variable; no URL carries a real password.
    expect(printed).not.toMatch(/Basic [A-Za-z0-9+/=]{8,}|:\/\/[^/\s"]*:(?!\$)[^/\s"]*@/);
  });
});

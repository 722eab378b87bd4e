/**
 * The authorizer's picture of anonymous requests (lib/http/anonymousAccess.ts) against the real
 * core handler, request by request: whatever the handler answers 401, the classifier must call a
 * challenge (or a read of a repository that is not public), and the other way round. Otherwise a
 * request behind API Gateway would get the function's 401, whose `WWW-Authenticate` API Gateway
 * renames, and git would never ask for credentials; or a public repository would ask for them.
 */
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { anonymousAccess } from '../../lib/http/anonymousAccess.js';
import { startInProcess, tempDataDir } from '../helpers/narwalServer.js';

const REPOS = ['team/public', 'team/private', 'team/missing'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'];

function pathsFor(repo: string): string[] {
  return [
    `/${repo}`,
    `/${repo}/-/entry/1`,
    `/${repo}/-/who?ref=refs/heads/main`,
    `/${repo}/-/diff?from=0`,
    `/${repo}/-/rewind?to=0`,
    `/${repo}/-/nope`,
    `/${repo}/-/log`,
    `/${repo}/-/refs`,
    `/${repo}/-/tree/main`,
    `/${repo}/-/blob/main/README`,
    `/${repo}/-/raw/main/README`,
    `/${repo}/-/commits/main`,
    `/${repo}/-/archive/main.tar.gz`,
    `/api/v1/repos/${repo}`,
    `/api/v1/repos/${repo}/-/log`,
    `/api/v1/repos/${repo}/-/entries/1`,
    `/api/v1/repos/${repo}/-/refs`,
    `/api/v1/repos/${repo}/-/rewind`,
    `/api/v1/repos/${repo}/-/protection`,
    `/api/v1/repos/${repo}/-/nope`,
    `/${repo}.git/info/refs?service=git-upload-pack`,
    `/${repo}.git/info/refs?service=git-receive-pack`,
    `/${repo}.git/info/refs?service=bogus`,
    `/${repo}.git/info/refs`,
    `/${repo}.git@1/info/refs?service=git-upload-pack`,
    `/${repo}.git@1/info/refs?service=git-receive-pack`,
    `/${repo}.git/git-upload-pack`,
    `/${repo}.git/git-receive-pack`,
    `/${repo}.git@1/git-receive-pack`,
  ];
}

const HOST_PATHS = [
  '/',
  '/?sign-in',
  '/healthz',
  '/-/login',
  '/api/v1/repos',
  '/api/v1/nope',
  '/api/v1/tokens',
  '/api/v1/tokens/0123456789abcdef',
  '/team/..%2fx.git/info/refs?service=git-upload-pack',
  '/team/../x.git/info/refs?service=git-upload-pack',
  '/bad name/x',
];

let app: App;
let stop: () => Promise<void>;
let dataDir: string;

beforeAll(async () => {
  dataDir = await tempDataDir();
  const node = await startInProcess({ dataDir });
  app = node.app;
  stop = node.stop;
  await app.wal.createRepo('team/public', { public: true });
  await app.wal.createRepo('team/private', { public: false });
});
afterAll(async () => {
  await stop?.();
  await rm(dataDir, { recursive: true, force: true });
});

async function statusOf(method: string, url: string): Promise<number> {
  const parsed = new URL(url, 'http://narwal.test');
  // What git sends: a pkt-line body of the service's request type (a flush is enough to get past
  // the body checks to the access checks).
  const service = /\/(git-upload-pack|git-receive-pack)$/.exec(parsed.pathname)?.[1];
  const headers: Record<string, string> = { host: 'narwal.test' };
  if (service) headers['content-type'] = `application/x-${service}-request`;
  const response = await app.handler({
    method,
    path: parsed.pathname,
    query: parsed.searchParams,
    headers,
    body: Readable.from(method === 'POST' ? [Buffer.from('0000')] : []),
    requestId: 'anonymous-access-test',
  });
  if (!Buffer.isBuffer(response.body)) response.body.destroy();
  return response.status;
}

describe('anonymousAccess', () => {
  it('calls for credentials exactly where the core handler answers an anonymous request with 401', async () => {
    const urls = [...HOST_PATHS, ...REPOS.flatMap(pathsFor)];
    const mismatches: string[] = [];
    for (const url of urls) {
      for (const method of METHODS) {
        const status = await statusOf(method, url);
        const parsed = new URL(url, 'http://narwal.test');
        const access = anonymousAccess(method, parsed.pathname, parsed.searchParams);
        const challenges =
          access.kind === 'challenge' || (access.kind === 'read' && access.repo !== 'team/public');
        if (challenges !== (status === 401))
          mismatches.push(`${method} ${url}: handler ${status}, classifier ${JSON.stringify(access)}`);
      }
    }
    expect(mismatches).toEqual([]);
  });
});

/**
 * A revoked token stops working on every node within NARWAL_TOKEN_CACHE_MS: two server processes
 * that both used the token and cached it, a revocation through the CLI, and every request that
 * starts once the bound has passed is refused by both.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { type RunningNarwal, startProcess, tempDataDir } from '../helpers/narwalServer.js';

const CACHE_MS = 2_000;
let dataDir: string;
let a: RunningNarwal;
let b: RunningNarwal;
let home: string;
let work: string;

beforeAll(async () => {
  dataDir = await tempDataDir();
  const env = { NARWAL_TOKEN_CACHE_MS: String(CACHE_MS) };
  [a, b] = await Promise.all([startProcess({ dataDir, env }), startProcess({ dataDir, env })]);
  home = await makeHome();
  work = await workRepo(home, 1);
  await gitOk(['push', `${a.authUrl}/team/app.git`, 'main'], { cwd: work, home });
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
});

describe('revocation across nodes', () => {
  it('refuses the token on every node once the cache bound has passed', async () => {
    const created = await narwalCli(['token', 'create', 'leaving', '--write', 'team/*'], { dataDir });
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    const url = (node: RunningNarwal) => `${node.url.replace('://', `://x:${token}@`)}/team/app.git`;
    // Both nodes read and cache the record.
    for (const node of [a, b]) expect((await git(['ls-remote', url(node)], { home })).code).toBe(0);

    const revoked = await narwalCli(['token', 'revoke', 'leaving'], { dataDir });
    expect(revoked.code).toBe(0);
    // The record was deleted before the CLI returned: from here on the bound is CACHE_MS.
    const revokedAt = Date.now();
    const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
    const before = (await wal.readIndexFully('team/app'))?.etag;
    // Until the bound, a node may still accept the token; keep it busy meanwhile.
    while (Date.now() < revokedAt + CACHE_MS) await git(['ls-remote', url(b)], { home });

    for (const node of [a, b]) {
      const listing = await git(['ls-remote', url(node)], { home });
      expect(listing.code).not.toBe(0);
      expect(listing.stderr).toContain('Authentication failed');
      const push = await git(['push', url(node), 'main:after-revoke'], { cwd: work, home });
      expect(push.code).not.toBe(0);
      expect(push.stderr).toContain('Authentication failed');
    }
    expect((await wal.readIndexFully('team/app'))?.etag).toBe(before);
  });
});

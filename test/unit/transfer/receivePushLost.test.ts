/**
 * A push whose leased generation loses its files before the push's repository is made of them
 * (the cache deleted under the lease, between the lease's look at the generation and the links
 * of its refs): git has read nothing, so the push is received as into a cold cache (spooled, the
 * generation leased anew, which builds it again when it went). Here the repository cannot be
 * made on the second try either, so the quiet push is refused in git's protocol with words that
 * say to retry, every lease given back, and nothing left in the scratch directory; before, the
 * first failure went out as a 500.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CacheTarget, Generation } from '../../../lib/cache/RepoCache.js';
import type { ScratchRepo } from '../../../lib/git/scratchRepo.js';
import { type PushDeps, receivePush } from '../../../lib/transfer/receivePush.js';
import { FakeCache, loadedIndex, recordingLogger } from './fakeCache.js';

const ZERO = '0'.repeat(40);
const ONE = '1'.repeat(40);
const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
/** A quiet push (report-status, no sideband) of one new branch. */
const BODY = `${pkt(`${ZERO} ${ONE} refs/heads/topic\0report-status quiet\n`)}0000PACK-bytes`;

/** The cache as a push uses it: complete, nothing nearly complete, packs adopted as they come. */
class PushFakeCache extends FakeCache {
  async leaseIfComplete(target: CacheTarget): Promise<Generation | null> {
    return (await this.isComplete()) ? this.leaseComplete(target) : null;
  }
  async nearlyComplete(): Promise<Generation | null> {
    return null;
  }
  async adoptPacks(): Promise<void> {}
}

let scratch = '';
let generation = '';
beforeEach(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'narwal-lost-scratch-'));
  generation = await mkdtemp(join(tmpdir(), 'narwal-lost-generation-'));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
  await rm(generation, { recursive: true, force: true });
});

describe('a push whose generation lost its files under the lease', () => {
  it('is received as into a cold cache, and refused in git’s words when that fails too', async () => {
    const cache = new PushFakeCache(generation, { complete: true });
    const logger = recordingLogger();
    let creates = 0;
    const deps = {
      cache,
      ensureHooks: async () => {},
      scratchRoot: async () => scratch,
      scratchRepos: {
        // As ScratchRepos.create fails when the generation's packed-refs went after the lease.
        create: async (): Promise<ScratchRepo> => {
          creates++;
          throw Object.assign(
            new Error(
              `ENOENT: no such file or directory, link '${generation}/packed-refs' -> '${scratch}/x'`,
            ),
            { code: 'ENOENT', errno: -2, syscall: 'link', path: join(generation, 'packed-refs') },
          );
        },
        prepare: () => {},
      },
      maxHeadBytes: 65536,
      maxCommands: 100,
      logger,
      clientMessage: () => undefined,
    } as unknown as PushDeps;
    const answer = await receivePush(deps, {
      repo: 'team/app',
      loaded: loadedIndex(),
      body: Readable.from([Buffer.from(BODY)]),
      who: { token: 'admin' },
      owner: 'admin',
    });
    const report = (Buffer.isBuffer(answer) ? answer : await buffer(answer)).toString();
    const reason =
      "narwal: the server's cache of the repository changed during the push, which was not recorded; retry the push";
    expect(report).toContain(`unpack ${reason}`);
    expect(report).toContain(`ng refs/heads/topic ${reason}`);
    // Tried on the leased generation, then on the one leased for the cold path.
    expect(creates).toBe(2);
    expect(cache.leased).toBe(2);
    expect(cache.held).toBe(0);
    expect(await readdir(scratch)).toEqual([]);
    expect(logger.lines.map((line) => line.message)).toContain(
      'push repository not made, the cache changed under it; preparing it anew',
    );
  });
});

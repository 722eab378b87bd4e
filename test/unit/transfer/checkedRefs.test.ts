import { link, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Generation } from '../../../lib/cache/RepoCache.js';
import type { GitChild } from '../../../lib/git/ProcessSpawner.js';
import { checkedRefs } from '../../../lib/transfer/checkedRefs.js';
import { CacheChanged, GitRefused } from '../../../lib/transfer/errors.js';

let dir: string;
let generation: Generation;
let released: number;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'narwal-checked-refs-'));
  await writeFile(join(dir, 'packed-refs'), `${'a'.repeat(40)} refs/heads/main\n`);
  released = 0;
  generation = {
    dir,
    name: 'g',
    objects: join(dir, 'objects'),
    release: async () => {
      released++;
    },
  };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts a git child that prints `output` and exits with `code` once `meanwhile` has run. */
function git(
  output: string,
  code: number,
  meanwhile: () => Promise<void> = async () => {},
  stderr = 'fatal: no',
) {
  let started = false;
  const start = async () => {
    started = true;
    const stdout = new PassThrough();
    const exit = (async () => {
      stdout.end(output);
      await meanwhile();
      return { code, signal: null, stderr: code === 0 ? '' : stderr };
    })();
    return { child: { stdout } as unknown as GitChild, exit };
  };
  return { start, started: () => started };
}

describe('checkedRefs', () => {
  it("answers git's listing when the generation's refs stayed the file git read", async () => {
    // A push links the refs into its private repository and removes the link meanwhile.
    const { start } = git('0000', 0, async () => {
      await link(join(dir, 'packed-refs'), join(dir, 'linked'));
      await unlink(join(dir, 'linked'));
    });
    expect((await checkedRefs(generation, 'upload-pack', start)).toString()).toBe('0000');
  });

  it('refuses a listing when the refs went, or were made again, while git ran', async () => {
    const gone = git('0000', 0, () => unlink(join(dir, 'packed-refs')));
    await expect(checkedRefs(generation, 'upload-pack', gone.start)).rejects.toBeInstanceOf(CacheChanged);
    await writeFile(join(dir, 'packed-refs'), '');
    // The directory deleted and built again by another request: a packed-refs is there, another one.
    const remade = git('0000', 0, async () => {
      await unlink(join(dir, 'packed-refs'));
      await writeFile(join(dir, 'packed-refs'), `${'b'.repeat(40)} refs/heads/main\n`);
    });
    await expect(checkedRefs(generation, 'upload-pack', remade.start)).rejects.toBeInstanceOf(CacheChanged);
  });

  it('starts no git when the refs are gone already (and lets the generation go), and passes on git refusing', async () => {
    await unlink(join(dir, 'packed-refs'));
    const never = git('0000', 0);
    await expect(checkedRefs(generation, 'upload-pack', never.start)).rejects.toBeInstanceOf(CacheChanged);
    expect(never.started()).toBe(false);
    expect(released).toBe(1);
    const failed = git('', 128);
    await expect(checkedRefs(null, 'upload-pack', failed.start)).rejects.toBeInstanceOf(GitRefused);
  });

  it('takes git finding no repository where it was started for the directory gone, not the request wrong', async () => {
    // The empty repository a v2 advertisement is made in (no generation to check), deleted with
    // the cache just as git started: its words name the server's path.
    for (const stderr of [
      "fatal: '/srv/narwal/cache/empty.git' does not appear to be a git repository\n",
      "fatal: not a git repository: '.'\n",
    ]) {
      const gone = git('', 128, async () => {}, stderr);
      await expect(checkedRefs(null, 'upload-pack', gone.start)).rejects.toBeInstanceOf(CacheChanged);
    }
  });
});

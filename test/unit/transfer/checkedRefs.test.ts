import type { ChildProcess } from 'node:child_process';
import { link, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Generation } from '../../../lib/cache/RepoCache.js';
import { checkedRefs, refsStamp } from '../../../lib/transfer/checkedRefs.js';
import { CacheChanged, GitRefused } from '../../../lib/transfer/errors.js';

let dir: string;
let generation: Generation;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'narwal-checked-refs-'));
  await writeFile(join(dir, 'packed-refs'), `${'a'.repeat(40)} refs/heads/main\n`);
  generation = { dir, name: 'g', objects: join(dir, 'objects'), release: async () => {} };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A git child that prints `output` and exits with `code` once `meanwhile` has run. */
function child(output: string, code: number, meanwhile: () => Promise<void> = async () => {}) {
  const stdout = new PassThrough();
  const process = { stdout } as unknown as ChildProcess;
  const exit = (async () => {
    stdout.end(output);
    await meanwhile();
    return { code, signal: null, stderr: code === 0 ? '' : 'fatal: no' };
  })();
  return { process, exit };
}

describe('checkedRefs', () => {
  it("answers git's listing when the generation's refs stayed the file git read", async () => {
    const before = await refsStamp(generation);
    // A push links the refs into its private repository and removes the link meanwhile.
    const { process, exit } = child('0000', 0, async () => {
      await link(join(dir, 'packed-refs'), join(dir, 'linked'));
      await unlink(join(dir, 'linked'));
    });
    expect((await checkedRefs(process, exit, generation, 'upload-pack', before)).toString()).toBe('0000');
  });

  it('refuses a listing when the refs went, or were made again, while git ran', async () => {
    const stamped = await refsStamp(generation);
    const gone = child('0000', 0, () => unlink(join(dir, 'packed-refs')));
    await expect(
      checkedRefs(gone.process, gone.exit, generation, 'upload-pack', stamped),
    ).rejects.toBeInstanceOf(CacheChanged);
    await writeFile(join(dir, 'packed-refs'), '');
    // The directory deleted and built again by another request: a packed-refs is there, another one.
    const before = await refsStamp(generation);
    const remade = child('0000', 0, async () => {
      await unlink(join(dir, 'packed-refs'));
      await writeFile(join(dir, 'packed-refs'), `${'b'.repeat(40)} refs/heads/main\n`);
    });
    await expect(
      checkedRefs(remade.process, remade.exit, generation, 'upload-pack', before),
    ).rejects.toBeInstanceOf(CacheChanged);
  });

  it('refuses before git starts when the refs are gone already, and passes on git refusing', async () => {
    await unlink(join(dir, 'packed-refs'));
    await expect(refsStamp(generation)).rejects.toBeInstanceOf(CacheChanged);
    expect(await refsStamp(null)).toBeNull();
    const failed = child('', 128);
    await expect(checkedRefs(failed.process, failed.exit, null, 'upload-pack', null)).rejects.toBeInstanceOf(
      GitRefused,
    );
  });
});

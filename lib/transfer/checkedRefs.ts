import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Generation } from '../cache/RepoCache.js';
import { type ChildExit, saysNotARepository } from '../git/childOutput.js';
import type { GitChild } from '../git/ProcessSpawner.js';
import { CacheChanged, GitRefused } from './errors.js';

/**
 * Which file a generation's `packed-refs` is: its inode and when it was written. Not its ctime,
 * which every push's hard link to it (and the link's removal) moves; the file itself is never
 * written again, and one made later in its place has a later mtime even on a reused inode.
 */
interface RefsStamp {
  readonly ino: bigint;
  readonly mtimeNs: bigint;
}

/**
 * Runs a git child that lists a generation's refs (`start`, which spawns it) and returns its
 * output once it exits, checked against the generation: a cache directory deleted while git read
 * it leaves a directory with no packed-refs, which git lists as no refs at all and exit 0, and a
 * client would take that for the repository's state. The file must still be the one stamped
 * before git started, not only be there: the directory may have been deleted and made again
 * (another request rebuilding it) between git's read and this look. Ref listings are O(refs),
 * so holding one whole is cheap. The generation is released here when git never starts.
 */
export async function checkedRefs(
  generation: Generation | null,
  service: string,
  start: () => Promise<{ child: GitChild; exit: Promise<ChildExit> }>,
): Promise<Buffer> {
  const before = generation ? await stampOf(generation) : null;
  if (generation && before === null) {
    await generation.release();
    throw new CacheChanged();
  }
  const { child, exit } = await start();
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = await exit;
  if (generation && before) {
    const after = await stampOf(generation);
    if (after === null || after.ino !== before.ino || after.mtimeNs !== before.mtimeNs)
      throw new CacheChanged();
  }
  if (finished.code !== 0) {
    // The generation, or the empty repository a v2 advertisement is made in, went under git.
    if (saysNotARepository(finished.stderr)) throw new CacheChanged();
    throw new GitRefused(service, finished.stderr);
  }
  return Buffer.concat(chunks);
}

async function stampOf(generation: Generation): Promise<RefsStamp | null> {
  return stat(join(generation.dir, 'packed-refs'), { bigint: true }).then(
    (s) => ({ ino: s.ino, mtimeNs: s.mtimeNs }),
    () => null,
  );
}

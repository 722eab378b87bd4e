/**
 * Keeps object lookups in a repository's shared object store cheap as packs accumulate. Every
 * push adds a pack (receive.unpackLimit=1 keeps it whole, so it can be stored as is), and git
 * looks an object up in pack after pack: with a thousand packs every git process of a push
 * (advertisement, receive-pack, index-pack, connectivity) spent tens of milliseconds more on
 * objects it does not have. A multi-pack-index (git-multi-pack-index(1)) makes a lookup one
 * binary search over every pack it covers. It is written beside the packs, atomically, never
 * removes anything, and git ignores a stale one for the packs it does not name - so it is
 * rewritten in the background once enough packs are outside it.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitRunner } from '../git/GitRunner.js';
import { type Logger, serializeError } from '../log.js';

/** Schedules a multi-pack-index for an object store when it needs one; never waits, never throws. */
export type PackIndexer = (objectsDir: string) => void;

/** Packs an object store may hold outside its multi-pack-index before it is rewritten. */
export const UNINDEXED_PACKS = 16;

/** Object stores whose covered count one process remembers. */
const MAX_KNOWN = 4096;

/** Beside the multi-pack-index: how many packs it covered when it was written. */
const COVERED = 'narwal-midx-packs';

export function multiPackIndexer(options: {
  git: GitRunner;
  /** Any repository (git insists on one); the object store stands in for its objects. */
  gitDir: () => Promise<string>;
  logger: Logger;
  unindexed?: number;
  /** Told when a write finished (tests wait on it). */
  onWritten?: (objectsDir: string, packs: number) => void;
}): PackIndexer {
  const threshold = options.unindexed ?? UNINDEXED_PACKS;
  const running = new Set<string>();
  /**
   * What each object store's file said (or this process wrote) last. An object store only gains
   * packs and its index only grows, so the file says at least as much now: while the packs are
   * within the threshold of that, the file need not be read again (two reads per push).
   */
  const known = new Map<string, number>();
  return (objectsDir) => {
    if (running.has(objectsDir)) return;
    running.add(objectsDir);
    void (async () => {
      const packDir = join(objectsDir, 'pack');
      const packs = (await readdir(packDir)).filter((n) => n.endsWith('.idx')).length;
      const remembered = known.get(objectsDir);
      // Fewer packs than covered: the object store was made again (evicted, deleted by hand).
      if (remembered !== undefined && packs >= remembered && packs - remembered < threshold) return;
      const covered = Number((await readFile(join(packDir, COVERED), 'utf8').catch(() => '0')).trim()) || 0;
      if (known.size >= MAX_KNOWN) known.clear();
      known.set(objectsDir, covered);
      if (packs - covered < threshold) return;
      // git writes a multi-pack-index only for its repository's own object directory.
      const result = await options.git.run(
        ['--git-dir', await options.gitDir(), 'multi-pack-index', `--object-dir=${objectsDir}`, 'write'],
        { env: { GIT_OBJECT_DIRECTORY: objectsDir }, background: true },
      );
      // Another node writing the same index at once holds its lock: that one will do.
      if (result.code !== 0) {
        options.logger.info('multi-pack-index not written', { objectsDir, stderr: result.stderr.trim() });
        return;
      }
      await writeFile(join(packDir, COVERED), `${packs}\n`);
      known.set(objectsDir, packs);
      options.onWritten?.(objectsDir, packs);
    })()
      .catch((error: unknown) =>
        options.logger.warn('multi-pack-index failed', { objectsDir, error: serializeError(error) }),
      )
      .finally(() => running.delete(objectsDir));
  };
}

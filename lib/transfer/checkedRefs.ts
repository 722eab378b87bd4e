import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Generation } from '../cache/RepoCache.js';
import type { ChildExit } from '../git/childOutput.js';
import { CacheChanged, GitRefused } from './errors.js';

/**
 * The output of a git child that lists a generation's refs, once it exits, checked against the
 * generation: a cache directory deleted while git read it leaves a directory with no packed-refs,
 * which git lists as no refs at all and exit 0, and a client would take that for the repository's
 * state. Ref listings are O(refs), so holding one whole is cheap.
 */
export async function checkedRefs(
  child: ChildProcess,
  exit: Promise<ChildExit>,
  generation: Generation | null,
  service: string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = await exit;
  if (generation && !(await exists(join(generation.dir, 'packed-refs')))) throw new CacheChanged();
  if (finished.code !== 0) throw new GitRefused(service, finished.stderr);
  return Buffer.concat(chunks);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

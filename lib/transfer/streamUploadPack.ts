import type { Readable } from 'node:stream';
import { exists, type Generation } from '../cache/RepoCache.js';
import { type ChildExit, exitCause, firstOutput, saysNotARepository } from '../git/childOutput.js';
import { onBodyError } from '../util/onBodyError.js';
import { CacheChanged, GitRefused } from './errors.js';
import { spawnUploadPack, type UploadPackDeps, type UploadPackOptions } from './uploadPackChild.js';

const GENERATION_GONE =
  "narwal: the server's cache of the repository changed during the fetch; retry the fetch";

/** What the client reads when upload-pack stops after its answer has begun (pktChildBody). */
export function stoppedMidway(exit: ChildExit): string {
  return `narwal: git upload-pack stopped before its answer was whole (${exitCause(exit)}); retry the fetch`;
}

/**
 * Runs upload-pack on a leased, complete generation with `body` as its request and streams its
 * answer; the lease goes when git exits. A request git refuses without answering is an error
 * (GitRefused), so the client gets a status and git's reason rather than an empty answer; one
 * that stops after its answer has begun ends it with a message the client prints (stoppedMidway).
 */
export async function streamUploadPack(
  deps: UploadPackDeps,
  generation: Generation,
  body: Readable,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  const { child, exit } = await spawnUploadPack(deps, generation, options);
  options.packing?.(exit);
  let inputError: Error | undefined;
  onBodyError(body, (error) => {
    inputError ??= error;
    child.kill('SIGKILL');
  });
  child.stdin?.on('error', () => {});
  body.pipe(child.stdin as NodeJS.WritableStream);
  const first = await firstOutput(child, exit, stoppedMidway);
  if (first.started && inputError === undefined) return first.body;
  if (inputError) throw inputError;
  const finished = first.started ? await exit : first.exit;
  if (finished.code === 0) return Buffer.alloc(0);
  // A generation deleted under it (evicted past its lease, or the cache lost) is no fault of the
  // request, and its path is no business of the client's. git may say so itself when the
  // directory is back by the time it is looked at (made again by another request's build).
  if (!(await exists(generation.dir)) || saysNotARepository(finished.stderr))
    throw new CacheChanged(GENERATION_GONE);
  throw new GitRefused('upload-pack', finished.stderr);
}

import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { lsRefsAnswer } from '../protocol/lsRefsAnswer.js';
import { checkedRefs } from './checkedRefs.js';
import { StateAnswers } from './StateAnswers.js';
import { spawnUploadPack, type UploadPackDeps } from './uploadPackChild.js';

export interface LsRefsDeps extends UploadPackDeps {
  readonly cache: { leaseRefs(target: CacheTarget): Promise<Generation> };
  readonly refAnswers: StateAnswers;
}

/**
 * A v2 `ls-refs` about `target`: the answer given to the same request about the same state, the
 * answer written from the state's refs (protocol/lsRefsAnswer.ts), or git's answer on a generation
 * whose refs are written, whole once checked (checkedRefs.ts).
 */
export async function answerLsRefs(
  deps: LsRefsDeps,
  target: CacheTarget,
  request: Buffer,
  options: { readonly protocol: string | undefined; readonly owner: string },
): Promise<Buffer> {
  const key = StateAnswers.key(target, 'ls-refs', options.protocol, request);
  const known = deps.refAnswers.get(key);
  if (known !== undefined) return known;
  // Written from the state's refs, as git would write them from the generation (no process, no
  // generation to wait for); git answers what that does not cover.
  const written = lsRefsAnswer(request, await target.refs(), target.head);
  if (written !== null) {
    deps.refAnswers.set(key, written);
    return written;
  }
  const generation = await deps.cache.leaseRefs(target);
  const refs = await checkedRefs(generation, 'upload-pack', async () => {
    const started = await spawnUploadPack(deps, generation, options);
    started.child.stdin?.on('error', () => {});
    started.child.stdin?.end(request);
    return started;
  });
  deps.refAnswers.set(key, refs);
  return refs;
}

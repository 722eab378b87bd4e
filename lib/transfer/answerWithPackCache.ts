import { Readable } from 'node:stream';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { type ClonePacking, cachedFetchOf, clonePackBody, keepLinesBeforePack } from './clonePack.js';
import { streamUploadPack } from './streamUploadPack.js';
import type { UploadPackDeps, UploadPackOptions } from './uploadPackChild.js';

export interface PackCacheDeps extends UploadPackDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
  /** Repeatable fetches being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: Pick<ClonePacking, 'open'>;
}

/**
 * A fetch of a complete generation with the pack cache on. A repeatable fetch (no haves: a full
 * clone, or a shallow or filtered fetch) whose answer upload-pack already gave for this
 * generation (or is giving, on this node) is answered from the kept files, without git; anything
 * else runs upload-pack, and the first answer to a repeatable fetch is kept for the next ones:
 * its pack by the hook (git/packCacheHook.ts), the lines before it here (clonePack.ts).
 */
export async function answerWithPackCache(
  deps: PackCacheDeps,
  target: CacheTarget,
  request: Buffer,
  fetch: RepeatableFetch | null,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  return answerOnGeneration(deps, await deps.cache.leaseComplete(target), request, fetch, options);
}

/** The same on a complete generation already leased, whose lease it takes over. */
export async function answerOnGeneration(
  deps: UploadPackDeps & Pick<PackCacheDeps, 'clonePacking'>,
  generation: Generation,
  request: Buffer,
  fetch: RepeatableFetch | null,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  const shape = fetch ? cachedFetchOf(fetch) : null;
  const cached = shape ? await deps.clonePacking.open(generation.dir, shape) : { pack: null };
  if (shape && cached.pack)
    return clonePackBody(shape, cached.pack, () => void generation.release(), cached.lines);
  // Identical fetches wait until git is done and the lines before its pack are kept.
  let settleKept = () => {};
  const kept = new Promise<void>((resolve) => {
    settleKept = resolve;
  });
  const packing = cached.packing;
  try {
    const answer = await streamUploadPack(deps, generation, Readable.from([request]), {
      ...options,
      ...(packing ? { packing: (exit: Promise<unknown>) => packing(Promise.all([exit, kept])) } : {}),
    });
    const linesSuffix = shape?.linesSuffix ?? null;
    if (shape === null || linesSuffix === null || Buffer.isBuffer(answer)) {
      settleKept();
      return answer;
    }
    const keeping = keepLinesBeforePack(answer, generation.dir, { ...shape, linesSuffix });
    void keeping.kept.finally(settleKept);
    return keeping.body;
  } catch (error) {
    settleKept();
    packing?.(Promise.resolve());
    throw error;
  }
}

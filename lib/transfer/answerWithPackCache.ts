import { Readable } from 'node:stream';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import type { FullClone } from '../protocol/fullClone.js';
import { type ClonePacking, clonePackBody } from './clonePack.js';
import { streamUploadPack } from './streamUploadPack.js';
import type { UploadPackDeps, UploadPackOptions } from './uploadPackChild.js';

export interface PackCacheDeps extends UploadPackDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
  /** Full clones being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: Pick<ClonePacking, 'open'>;
}

/**
 * A fetch of a complete generation with the pack cache on. A full clone whose pack upload-pack
 * already made for this generation (or is making, on this node) is answered from that file,
 * without git; anything else runs upload-pack, and the first full clone's pack is kept for the
 * next ones (git/packCacheHook.ts).
 */
export async function answerWithPackCache(
  deps: PackCacheDeps,
  target: CacheTarget,
  request: Buffer,
  clone: FullClone | null,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  const generation = await deps.cache.leaseComplete(target);
  const cached = clone ? await deps.clonePacking.open(generation.dir, clone) : { pack: null };
  if (clone && cached.pack) return clonePackBody(clone, cached.pack, () => void generation.release());
  try {
    return await streamUploadPack(deps, generation, Readable.from([request]), {
      ...options,
      ...(cached.packing ? { packing: cached.packing } : {}),
    });
  } catch (error) {
    cached.packing?.(Promise.resolve());
    throw error;
  }
}

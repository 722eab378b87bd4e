import { Readable } from 'node:stream';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import {
  type CachedFetch,
  type ClonePacking,
  cachedFetchOf,
  clonePackBody,
  keepLinesBeforePack,
  wholeAnswerBytes,
  wholeClonePackAnswer,
} from './clonePack.js';
import { type AnsweredState, StateAnswers } from './StateAnswers.js';
import { streamUploadPack } from './streamUploadPack.js';
import type { UploadPackDeps, UploadPackOptions } from './uploadPackChild.js';

export interface PackCacheDeps extends UploadPackDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
  /** Repeatable fetches being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: Pick<ClonePacking, 'open'>;
  /** Small kept answers, whole in memory: the next identical fetch reads no file. */
  readonly packAnswers: StateAnswers;
}

/** The key of the whole answer to `fetch` about `state` (packAnswers): what names it and its framing. */
export function packAnswerKey(state: AnsweredState, fetch: CachedFetch): string {
  // The kept files are named by what the pack holds (a full clone's by its key alone); an answer
  // in memory is framed too, so its key holds what frames it: the protocol, the sideband size.
  const frame = `${fetch.version} ${fetch.preamble.trim()} ${fetch.sidebandData}`;
  return StateAnswers.key(state, `pack ${fetch.key} ${fetch.linesSuffix ?? '-'} ${frame}`, undefined);
}

/**
 * A fetch of a complete generation with the pack cache on. A repeatable fetch (no haves: a full
 * clone, or a shallow or filtered fetch) whose answer upload-pack already gave for this
 * generation (or is giving, on this node) is answered from the kept files, without git; anything
 * else runs upload-pack, and the first answer to a repeatable fetch is kept for the next ones:
 * its pack by the hook (git/packCacheHook.ts), the lines before it here (clonePack.ts). A kept
 * answer of at most packAnswers' answer size is read whole once and kept in memory too, keyed by
 * the state (which never changes) and what names and frames it: identical fetches of the state
 * are then answered from memory, by answerFetch before it looks at the cache at all.
 */
export async function answerWithPackCache(
  deps: PackCacheDeps,
  target: CacheTarget,
  request: Buffer,
  fetch: RepeatableFetch | null,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  return answerOnGeneration(deps, await deps.cache.leaseComplete(target), target, request, fetch, options);
}

/** The same on a complete generation already leased (of `state`), whose lease it takes over. */
export async function answerOnGeneration(
  deps: UploadPackDeps & Pick<PackCacheDeps, 'clonePacking' | 'packAnswers'>,
  generation: Generation,
  state: AnsweredState,
  request: Buffer,
  fetch: RepeatableFetch | null,
  options: UploadPackOptions,
): Promise<Readable | Buffer> {
  const shape = fetch ? cachedFetchOf(fetch) : null;
  const inMemory = shape ? deps.packAnswers.get(packAnswerKey(state, shape)) : undefined;
  if (inMemory) {
    await generation.release();
    return inMemory;
  }
  const cached = shape ? await deps.clonePacking.open(generation.dir, shape) : { pack: null };
  if (shape && cached.pack) {
    const { pack, size, lines } = cached;
    if (deps.packAnswers.accepts(wholeAnswerBytes(shape, size, lines))) {
      // Identical fetches that waited for the same pack read it once between them.
      const whole = await deps.packAnswers
        .made(packAnswerKey(state, shape), () => wholeClonePackAnswer(shape, pack, size, lines))
        .catch(() => null);
      if (whole) {
        await pack.close();
        await generation.release();
        return whole;
      }
    }
    return clonePackBody(shape, pack, () => void generation.release(), lines);
  }
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

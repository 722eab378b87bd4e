import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { settledWithin } from '../util/settledWithin.js';
import {
  type CachedFetch,
  type ClonePacking,
  cachedFetchOf,
  clonePackBody,
  keepLinesBeforePack,
  openCachedAnswer,
  wholeAnswerBytes,
  wholeClonePackAnswer,
} from './clonePack.js';
import { type AnsweredState, type PromisedAnswer, StateAnswers } from './StateAnswers.js';
import { streamUploadPack } from './streamUploadPack.js';
import type { UploadPackDeps, UploadPackOptions } from './uploadPackChild.js';

export interface PackCacheDeps extends UploadPackDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
  /** Repeatable fetches being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: Pick<ClonePacking, 'open' | 'maxWaitMs'>;
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
  promised?: PromisedAnswer,
): Promise<Readable | Buffer> {
  const generation = await deps.cache.leaseComplete(target);
  return answerOnGeneration(deps, generation, target, request, fetch, options, promised);
}

/** The same on a complete generation already leased (of `state`), whose lease it takes over. */
export async function answerOnGeneration(
  deps: UploadPackDeps & Pick<PackCacheDeps, 'clonePacking' | 'packAnswers'>,
  generation: Generation,
  state: AnsweredState,
  request: Buffer,
  fetch: RepeatableFetch | null,
  options: UploadPackOptions,
  /** The answer this fetch promised the identical ones (answerFetch): kept here when it is whole. */
  promised?: PromisedAnswer,
): Promise<Readable | Buffer> {
  const shape = fetch ? cachedFetchOf(fetch) : null;
  const memoryKey = shape ? packAnswerKey(state, shape) : null;
  const inMemory = memoryKey ? deps.packAnswers.get(memoryKey) : undefined;
  if (inMemory) {
    promised?.keep(inMemory);
    await generation.release();
    return inMemory;
  }
  const cached = shape ? await deps.clonePacking.open(generation.dir, shape) : { pack: null };
  if (shape && memoryKey && cached.pack) {
    const { pack, size, lines } = cached;
    if (deps.packAnswers.accepts(wholeAnswerBytes(shape, size, lines))) {
      // Read once by the fetches that got here together, or left in memory by the one they waited for.
      const whole = await keepWhole(deps.packAnswers, memoryKey, shape, { pack, size, lines }).catch(
        () => null,
      );
      if (whole) {
        promised?.keep(whole);
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
  let packed = (_done: Promise<unknown>) => {};
  const done = new Promise<unknown>((resolve) => {
    packed = resolve;
  });
  // Identical fetches arriving while git packs wait for this answer in memory (answerFetch), read
  // once for all of them when git is done, not each from the files it leaves (nor git again).
  const whole = async (): Promise<Buffer | undefined> => {
    if (!(shape && memoryKey)) return undefined;
    if (!(await settledWithin(done, deps.clonePacking.maxWaitMs))) return undefined;
    if (!(promised?.asked() || cached.waited?.())) return undefined;
    const found = await openCachedAnswer(generation.dir, shape);
    if (!found) return undefined;
    try {
      if (!deps.packAnswers.accepts(wholeAnswerBytes(shape, found.size, found.lines))) return undefined;
      return await keepWhole(deps.packAnswers, memoryKey, shape, found);
    } finally {
      await found.pack.close();
    }
  };
  const shared = packing ? whole().catch(() => undefined) : undefined;
  promised?.keep(shared);
  // Those that came to the files first are let go once the answer is in memory too.
  const release = (finished: Promise<unknown>) => {
    packed(finished);
    packing?.(shared ? finished.then(() => shared) : finished);
  };
  try {
    const answer = await streamUploadPack(deps, generation, Readable.from([request]), {
      ...options,
      ...(packing ? { packing: (exit: Promise<unknown>) => release(Promise.all([exit, kept])) } : {}),
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
    release(Promise.resolve());
    throw error;
  }
}

/** The whole answer of a kept pack in memory under `key`, read once however many ask at a time. */
function keepWhole(
  answers: StateAnswers,
  key: string,
  shape: CachedFetch,
  found: { readonly pack: FileHandle; readonly size: number; readonly lines: Buffer },
): Promise<Buffer> {
  return answers.made(key, () => wholeClonePackAnswer(shape, found.pack, found.size, found.lines));
}

/**
 * A fetch or clone (`POST git-upload-pack`): every read is answered from a generation built for
 * exactly the index etag just read (docs/architecture.md invariant 5). Which way depends on the
 * request and the cache:
 *
 * - a v2 `ls-refs`: the refs git listed for this state before, or git on its refs (lsRefs.ts);
 * - a v2 `bundle-uri`: narwal's bundle list, when bundle links are given (answerBundleUri.ts);
 * - a complete generation, a v2 full clone whose client accepts packfile URIs: stored packs as
 *   URIs and the rest inline, when a stored pack qualifies (answerWithPackUris.ts);
 * - a complete generation, no pack cache: upload-pack streams the request (streamUploadPack.ts);
 * - pack cache on, a small answer to an identical repeatable fetch of this state kept in memory:
 *   that answer, before any look at the cache;
 * - a complete generation, pack cache on: the kept answer to an identical repeatable fetch (a
 *   full clone, or a shallow or filtered fetch with no haves), or upload-pack
 *   (answerWithPackCache.ts);
 * - a generation still to be completed: answered at once with progress when git's first bytes
 *   are known, else after the wait (answerCold.ts).
 */
import { Readable } from 'node:stream';
import type { CacheTarget, Generation, Progress } from '../cache/RepoCache.js';
import type { GitRunner } from '../git/GitRunner.js';
import { wantsProtocolV2 } from '../git/uploadPack.js';
import { type Logger, serializeError } from '../log.js';
import { repeatableFetchOf } from '../protocol/repeatableFetch.js';
import { classifyUploadPackRequest } from '../protocol/uploadPackRequest.js';
import { type ByteAccount, readAll } from '../util/readAll.js';
import type { LoadedIndex } from '../wal/types.js';
import { answerBundleUri } from './answerBundleUri.js';
import { answerCold } from './answerCold.js';
import { answerWithPackCache, packAnswerKey } from './answerWithPackCache.js';
import { answerWithPackUris, type PackLink } from './answerWithPackUris.js';
import { type ClonePacking, cachedFetchOf } from './clonePack.js';
import type { ClientMessage } from './errors.js';
import { answerLsRefs } from './lsRefs.js';
import type { PromisedAnswer, StateAnswers } from './StateAnswers.js';
import { streamUploadPack } from './streamUploadPack.js';
import { type StateTargets, targetFor } from './targetFor.js';
import type { UploadPackDeps } from './uploadPackChild.js';

/** The cache as a fetch uses it (RepoCache). */
export interface FetchCache extends StateTargets {
  /** Whether the generation of `target` is complete already (a reader will not wait for it). */
  isComplete(target: CacheTarget): Promise<boolean>;
  leaseRefs(target: CacheTarget): Promise<Generation>;
  leaseComplete(target: CacheTarget, progress?: Progress): Promise<Generation>;
}

export interface FetchDeps extends UploadPackDeps {
  /** git, and scripts of git commands for the packfile-URI plan (uriPlan.ts). */
  readonly git: Pick<GitRunner, 'spawn' | 'check' | 'checkScript'>;
  readonly cache: FetchCache;
  /** Answers upload-pack gave about immutable states, for the same questions again. */
  readonly refAnswers: StateAnswers;
  /** Repeatable fetches being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: Pick<ClonePacking, 'open' | 'maxWaitMs'>;
  /** Small answers to repeatable fetches, whole in memory (answerWithPackCache.ts). */
  readonly packAnswers: StateAnswers;
  readonly logger: Logger;
  readonly clientMessage: ClientMessage;
}

export interface FetchRequest {
  /** The index read (and authorized) for this request. */
  readonly loaded: LoadedIndex;
  /** The entry of a fetch of the past (`REPO.git@SEQ`). */
  readonly at?: number | undefined;
  /** The request body, decoded and bounded. */
  readonly body: Readable;
  /** The client's `Git-Protocol` header. */
  readonly protocol: string | undefined;
  /** Whom the git slots are counted against (see GitSpawnOptions.owner). */
  readonly owner: string;
  /** Where the request bytes read into memory are charged. */
  readonly memory: ByteAccount;
  readonly requestId: string;
  /** How this request's client may be sent stored packs as URIs; without it, it is not. */
  readonly packLink?: PackLink | undefined;
  /** How the `bundle-uri` command names bundles; without it, the command goes to git. */
  readonly bundleLink?: PackLink | undefined;
}

/** The answer to a fetch: git's, or narwal's in git's words. */
export async function answerFetch(deps: FetchDeps, request: FetchRequest): Promise<Readable | Buffer> {
  const { body, protocol, owner, memory } = request;
  const target = await targetFor(deps.cache, request.loaded, request.at);
  const v2 = wantsProtocolV2(protocol);
  // A v2 request is small and may be ls-refs, whose answer is checked (checkedRefs.ts).
  const early = v2 ? await readAll(body, memory) : null;
  const command = early === null ? null : classifyUploadPackRequest(early, v2).command;
  if (early !== null && command === 'ls-refs') return answerLsRefs(deps, target, early, { protocol, owner });
  if (command === 'bundle-uri' && request.bundleLink)
    return answerBundleUri(deps, target, request.bundleLink, owner);
  const repeatable = early === null ? null : repeatableFetchOf(early, v2);
  const packLink = request.packLink;
  const withUris = repeatable?.full === true && repeatable.uriProtocols.length > 0 ? packLink : undefined;
  let promised: PromisedAnswer | undefined;
  if (repeatable !== null && withUris === undefined && deps.packObjectsHook !== null) {
    // The same question about the same state: the answer kept whole needs no file and no lease,
    // nor does one that an identical fetch arrived before it has promised. The first to ask
    // promises its answer before any await, so a storm arriving at once waits for that one.
    const key = packAnswerKey(target, cachedFetchOf(repeatable));
    const now = deps.packAnswers.answer(key);
    if (Buffer.isBuffer(now)) return now;
    if (now === undefined) promised = deps.packAnswers.promise(key);
    else {
      const shared = await now;
      if (shared) return shared;
    }
  }
  try {
    const complete = await deps.cache.isComplete(target);
    if (repeatable !== null && withUris !== undefined && complete) {
      const answer = await answerWithPackUris(deps, target, repeatable, withUris, owner).catch(
        (error: unknown) => {
          // The client still gets its clone: the whole pack, as without packfile URIs.
          deps.logger.warn('packfile URIs failed', { repo: target.repo, error: serializeError(error) });
          return null;
        },
      );
      if (answer) return answer;
    }
    if (complete && deps.packObjectsHook === null) {
      const generation = await deps.cache.leaseComplete(target);
      return streamUploadPack(deps, generation, early ? Readable.from([early]) : body, { protocol, owner });
    }
    // The request is small: read it to learn what it needs.
    const bytes = early ?? (await readAll(body, memory));
    const fetch = deps.packObjectsHook === null ? null : (repeatable ?? repeatableFetchOf(bytes, v2));
    const env: Record<string, string> = fetch ? { NARWAL_CLONE_KEY: fetch.key } : {};
    if (complete)
      return await answerWithPackCache(deps, target, bytes, fetch, { protocol, owner, env }, promised);
    return await answerCold(deps, target, bytes, {
      protocol,
      owner,
      env,
      v2,
      requestId: request.requestId,
      fetch,
    });
  } finally {
    // Each way that has an answer to share has kept the promise by now; the others share none.
    promised?.keep(undefined);
  }
}

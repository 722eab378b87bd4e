import { Readable } from 'node:stream';
import type { CacheTarget, Generation, Progress } from '../cache/RepoCache.js';
import { pktChildBody } from '../git/childOutput.js';
import type { Logger } from '../log.js';
import type { RefValue } from '../protocol/refValue.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { classifyUploadPackRequest, predictedPrefix } from '../protocol/uploadPackRequest.js';
import { answerWhilePreparing } from './answerWhilePreparing.js';
import { answerOnGeneration, type PackCacheDeps } from './answerWithPackCache.js';
import type { ClientMessage } from './errors.js';
import { stoppedMidway, streamUploadPack } from './streamUploadPack.js';
import { spawnUploadPack, type UploadPackOptions } from './uploadPackChild.js';

export interface ColdFetchDeps extends PackCacheDeps {
  readonly cache: { leaseComplete(target: CacheTarget, progress?: Progress): Promise<Generation> };
  readonly logger: Logger;
  readonly clientMessage: ClientMessage;
}

/**
 * A fetch whose generation must be completed first. When git's answer is known to start with
 * certain bytes (protocol/uploadPackRequest.ts), the answer starts at once and reports the
 * preparation as progress, as git reports its own while it counts and compresses objects;
 * otherwise the fetch waits for the generation and then runs upload-pack. A repeatable fetch,
 * once the generation is ready, is answered as on a complete one: identical fetches that met the
 * same cold state share one upload-pack and its kept answer.
 */
export async function answerCold(
  deps: ColdFetchDeps,
  target: CacheTarget,
  request: Buffer,
  options: UploadPackOptions & {
    readonly v2: boolean;
    readonly requestId: string;
    /**
     * The request as a repeatable fetch, when the pack cache is on: once the generation is ready,
     * it is answered as on a complete one (answerWithPackCache.ts), so identical fetches that
     * arrived while it was prepared share one upload-pack and its kept answer.
     */
    readonly fetch?: RepeatableFetch | null;
  },
): Promise<Readable | Buffer> {
  const kind = classifyUploadPackRequest(request, options.v2);
  const refs = kind.wantRefs.length > 0 ? await target.refs() : new Map<string, RefValue>();
  const prefix = predictedPrefix(
    kind,
    options.v2,
    (ref) => refs.get(ref === 'HEAD' ? target.head : ref)?.oid,
  );
  const git = {
    protocol: options.protocol,
    owner: options.owner,
    ...(options.env ? { env: options.env } : {}),
  };
  if (prefix === null) {
    const generation = await deps.cache.leaseComplete(target);
    if (!options.fetch) return streamUploadPack(deps, generation, Readable.from([request]), git);
    return answerOnGeneration(deps, generation, target, request, options.fetch, git);
  }
  return answerWhilePreparing(
    {
      prefix,
      prepare: (progress) => deps.cache.leaseComplete(target, progress),
      answer: async (generation, answer) => {
        if (answer.closed) {
          await generation.release();
          return;
        }
        if (options.fetch) {
          const shared = await answerOnGeneration(deps, generation, target, request, options.fetch, git);
          const body = Buffer.isBuffer(shared) ? Readable.from([shared]) : shared;
          answer.body.once('close', () => body.destroy());
          await answer.relay(body);
          return;
        }
        const { child, exit } = await spawnUploadPack(deps, generation, git);
        const output = pktChildBody(child, exit, stoppedMidway);
        // Destroying the output stops git (pktChildBody).
        answer.body.once('close', () => output.destroy());
        child.stdin?.on('error', () => {});
        child.stdin?.end(request);
        await answer.relay(output);
      },
    },
    {
      logger: deps.logger,
      event: 'fetch failed while preparing the repository',
      repo: target.repo,
      clientMessage: deps.clientMessage,
      otherwise: `narwal: the repository could not be prepared; retry the fetch (request ${options.requestId})`,
    },
  );
}

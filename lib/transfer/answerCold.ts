import { Readable } from 'node:stream';
import type { CacheTarget, Generation, Progress } from '../cache/RepoCache.js';
import type { Logger } from '../log.js';
import type { RefValue } from '../protocol/refValue.js';
import { classifyUploadPackRequest, predictedPrefix } from '../protocol/uploadPackRequest.js';
import { answerWhilePreparing } from './answerWhilePreparing.js';
import type { ClientMessage } from './errors.js';
import { streamUploadPack } from './streamUploadPack.js';
import { spawnUploadPack, type UploadPackDeps, type UploadPackOptions } from './uploadPackChild.js';

export interface ColdFetchDeps extends UploadPackDeps {
  readonly cache: { leaseComplete(target: CacheTarget, progress?: Progress): Promise<Generation> };
  readonly logger: Logger;
  readonly clientMessage: ClientMessage;
}

/**
 * A fetch whose generation must be completed first. When git's answer is known to start with
 * certain bytes (protocol/uploadPackRequest.ts), the answer starts at once and reports the
 * preparation as progress, as git reports its own while it counts and compresses objects;
 * otherwise the fetch waits for the generation and then runs upload-pack.
 */
export async function answerCold(
  deps: ColdFetchDeps,
  target: CacheTarget,
  request: Buffer,
  options: UploadPackOptions & { readonly v2: boolean; readonly requestId: string },
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
    return streamUploadPack(deps, await deps.cache.leaseComplete(target), Readable.from([request]), git);
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
        const { child } = await spawnUploadPack(deps, generation, git);
        answer.body.once('close', () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        });
        child.stdin?.on('error', () => {});
        child.stdin?.end(request);
        if (child.stdout) await answer.relay(child.stdout);
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

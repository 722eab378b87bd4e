/**
 * An answer that starts at once while the repository is prepared. git reads the progress narwal
 * sends on its sideband (band 2) as it reads its own while it counts and compresses objects, so a
 * client that finds the repository cold sees `remote: narwal: replaying 12/40 entries` instead of
 * a silent wait, and its HTTP request never idles long enough to be cut off. Once prepared, git's
 * real answer is relayed; a failure after the answer has started can only be reported on band 3,
 * which git prints as `remote error: ...` and fails on (gitprotocol-pack(5), "Packfile Data").
 */
import type { Readable } from 'node:stream';
import type { Progress } from '../cache/RepoCache.js';
import { type Logger, serializeError } from '../log.js';
import type { ClientMessage } from './errors.js';
import { SidebandProgress } from './sidebandProgress.js';

export interface Preparation<T> {
  /** The bytes git's answer is known to start with (see protocol/uploadPackRequest.ts), or none. */
  readonly prefix: Buffer;
  /** Prepares what git needs (leases a complete generation), reporting progress. */
  readonly prepare: (progress: Progress) => Promise<T>;
  /** Relays git's answer from what was prepared into `answer`, or fails it. */
  readonly answer: (prepared: T, answer: SidebandProgress) => Promise<void>;
}

export interface PreparationFailure {
  readonly logger: Logger;
  /** What the log says failed, e.g. `fetch failed while preparing the repository`. */
  readonly event: string;
  readonly repo: string;
  readonly clientMessage: ClientMessage;
  /** What the client reads when the failure has no words for it. */
  readonly otherwise: string;
  /** Undoes what the caller set up for the answer (a spooled body, say). */
  readonly cleanup?: () => Promise<void>;
}

export function answerWhilePreparing<T>(work: Preparation<T>, failure: PreparationFailure): Readable {
  const answer = new SidebandProgress(work.prefix);
  void (async () => {
    const prepared = await work.prepare((message, final) => answer.progress(message, final));
    await work.answer(prepared, answer);
  })().catch((error: unknown) => {
    void failure.cleanup?.();
    failure.logger.warn(failure.event, { repo: failure.repo, error: serializeError(error) });
    answer.fail(failure.clientMessage(error) ?? failure.otherwise);
  });
  return answer.body;
}

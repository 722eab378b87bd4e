/** The transfers' failures; lib/http/errorResponse.ts turns each into its answer. */
import { lastLine } from '../util/lastLine.js';

/** git refused the request (it exited non-zero without answering): its last line of stderr says why. */
export class GitRefused extends Error {
  readonly code = 'GitRefused';
  constructor(service: string, stderr: string) {
    const line = lastLine(stderr);
    super(`narwal: git ${service} refused the request${line ? `: ${line}` : ''}`);
  }
}

/**
 * The generation was deleted while git read it: git lists a directory without packed-refs as no
 * refs at all, which a client would take for the repository's state, and refuses a fetch in a
 * directory that is gone as if the request were wrong. Retryable.
 */
export class CacheChanged extends Error {
  readonly code = 'CacheChanged';
  constructor(message = 'narwal: the cache changed while the refs were read; retry') {
    super(message);
  }
}

/**
 * A push's repository could not be made from its leased generation, whose files went before it
 * was (the cache deleted under the lease): git has read nothing of the push, which may be
 * received again on a generation built anew. Retryable.
 */
export class GenerationLost extends Error {
  readonly code = 'GenerationLost';
  constructor(cause: unknown) {
    super("narwal: the server's cache of the repository changed before the push was read; retry the push", {
      cause,
    });
  }
}

/** A push found its repository created by another request that has not published its index yet. */
export class RepoBeingCreated extends Error {
  readonly code = 'RepoBeingCreated';
  constructor(repo: string) {
    super(`narwal: repository ${repo} is being created; retry`);
  }
}

/**
 * The words a failure from outside the transfer (the request body, say) has for the client, or
 * undefined when it has none: the adapter that made the failure knows (lib/http/gitRoutes.ts).
 */
export type ClientMessage = (error: unknown) => string | undefined;

/** A stored pack was asked for by a link that names one the log does not name for that state. */
export class PackNotInLog extends Error {
  readonly code = 'PackNotInLog';
  constructor(repo: string, pack: string, seq: number) {
    super(`narwal: ${repo} has no pack ${pack} in its state after entry ${seq}`);
  }
}

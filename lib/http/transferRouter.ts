/**
 * Applies the transfer route at `GET info/refs`: reads what the log says about the repository,
 * asks the pure policy (transferRoute.ts), logs the decision, and answers a redirect to the pool
 * or nothing (serve it here).
 *
 * It runs before authentication on purpose: curl sends credentials only to the host that asked
 * for them, so a redirect after a 401 would reach the pool without them, and git, holding
 * credentials it believes were sent, gives up. Redirected anonymously, git asks for credentials
 * for the pool's URL. An anonymous client therefore learns which repositories the pool serves,
 * and nothing more: the pool authenticates every request.
 */
import type { Logger } from '../log.js';
import type { Wal } from '../wal/Wal.js';
import type { ChunkedPushNotes } from './chunkedPushes.js';
import { badRequest } from './HttpError.js';
import {
  CLIENT_ROUTE_HEADER,
  decideTransferRoute,
  parseClientRoute,
  poolLocation,
  RECENT_PUSHES,
  type RouteLimits,
  type TransferService,
} from './transferRoute.js';
import type { CoreRequest, CoreResponse } from './types.js';

/** A redirect to the pool, or null to serve the transfer here. */
export type TransferRouter = (
  request: CoreRequest,
  repo: string,
  service: TransferService,
) => Promise<CoreResponse | null>;

export interface TransferRouterDeps {
  readonly wal: Wal;
  readonly logger: Logger;
  readonly poolUrl: string;
  readonly limits: RouteLimits;
  /** Repositories whose chunked pushes were refused lately, when the gateway refuses them. */
  readonly chunkedPushes?: ChunkedPushNotes | undefined;
}

export function createTransferRouter(deps: TransferRouterDeps): TransferRouter {
  return async (request, repo, service) => {
    const asked = parseClientRoute(request.headers[CLIENT_ROUTE_HEADER]);
    if (asked === 'invalid') throw badRequest('narwal: the X-Narwal-Route header accepts only "pool"');
    // The current index, not one this process saw recently: the push that makes the next one go
    // to the pool usually landed on the pool. A conditional GET, and a warm one for what follows.
    const loaded = await deps.wal.readIndex(repo);
    const index = loaded?.index ?? null;
    const fetch = service === 'git-upload-pack';
    // Pages, chunks and entries are immutable, so a warm node reads only what is new.
    const items =
      index !== null && asked === null
        ? await deps.wal.itemsAfter(
            index,
            fetch ? (index.checkpoint?.seq ?? 0) : Math.max(0, index.seq - RECENT_PUSHES),
          )
        : [];
    const chunkedPushNoted =
      !fetch && asked === null && index !== null && deps.chunkedPushes !== undefined
        ? await deps.chunkedPushes.noted(repo)
        : false;
    const decision = decideTransferRoute({
      service,
      index,
      chunkedPushNoted,
      itemsAfterCheckpoint: fetch ? items : [],
      recentItems: fetch ? [] : items,
      clientAsked: asked === 'pool',
      limits: deps.limits,
    });
    deps.logger.info('transfer route', {
      requestId: request.requestId,
      repo,
      service,
      target: decision.target,
      reason: decision.reason,
    });
    if (decision.target === 'lambda') return null;
    const location = poolLocation(deps.poolUrl, request.path, request.query);
    return {
      status: 307,
      headers: {
        location,
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-cache',
      },
      body: Buffer.from(`narwal: this transfer is served by ${deps.poolUrl} (${decision.reason})\n`),
    };
  };
}

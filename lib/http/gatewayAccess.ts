/**
 * The decision API Gateway's REQUEST authorizer makes before the git function runs
 * (functions/authorizer.ts): let the request through, or refuse it so that API Gateway answers
 * with its UNAUTHORIZED gateway response, the only 401 that can carry `WWW-Authenticate` to the
 * client (the function's own is renamed `x-amzn-Remapped-WWW-Authenticate`, and git then never
 * sends credentials). https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html
 *
 * It refuses what the core handler would answer 401 and nothing else:
 * - credentials that are not a valid token (the core's "invalid credentials");
 * - no credentials, for a request the core answers 401 without them (anonymousAccess.ts): a
 *   push, a rewind, a sign-in, or a read of a repository that is not public.
 * Scopes and owner rules are not decided here: the core decides them as it always does, so a
 * token that may not push is still told so (403) by the function.
 */
import { Readable } from 'node:stream';
import { tokenFromAuthorization } from '../auth/basicAuth.js';
import type { TokenStore } from '../auth/TokenStore.js';
import { TtlCache } from '../auth/TtlCache.js';
import type { Wal } from '../wal/Wal.js';
import { anonymousAccess, type Transfer } from './anonymousAccess.js';
import type { TransferRouter } from './transferRouter.js';
import type { CoreRequest } from './types.js';

const ANONYMOUS: GatewayDecision = { allow: true, principal: 'anonymous' };

export interface GatewayRequest {
  readonly method: string;
  /** Without the stage. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly requestId: string;
}

export type GatewayDecision =
  | { readonly allow: true; readonly principal: string }
  | { readonly allow: false };

export interface GatewayAccessOptions {
  readonly tokens: TokenStore;
  readonly wal: Wal;
  /** How long a repository's public flag is trusted once read (as token records are). */
  readonly cacheMs: number;
  /** The git function's routing of long transfers, when it has a pool. */
  readonly routeTransfer?: TransferRouter | undefined;
  readonly now?: () => number;
}

export class GatewayAccess {
  readonly #tokens: TokenStore;
  readonly #wal: Wal;
  readonly #public: TtlCache<string, boolean>;
  readonly #route: TransferRouter | undefined;
  readonly #now: () => number;

  constructor(options: GatewayAccessOptions) {
    this.#tokens = options.tokens;
    this.#wal = options.wal;
    this.#now = options.now ?? Date.now;
    this.#route = options.routeTransfer;
    this.#public = new TtlCache({ ttlMs: options.cacheMs, maxEntries: 10_000, now: this.#now });
  }

  async decide(request: GatewayRequest): Promise<GatewayDecision> {
    const authorization = request.headers.authorization;
    if (authorization !== undefined) {
      const token = tokenFromAuthorization(authorization);
      const principal = token === null ? null : await this.#tokens.find(token);
      return principal === null ? { allow: false } : { allow: true, principal: principal.name };
    }
    const access = anonymousAccess(request.method, request.path, request.query);
    if (access.kind === 'open') return ANONYMOUS;
    if (access.transfer && (await this.#routed(request, access.transfer))) return ANONYMOUS;
    if (access.kind === 'challenge') return { allow: false };
    return (await this.#isPublic(access.repo)) ? ANONYMOUS : { allow: false };
  }

  /**
   * Whether the function will redirect this transfer to the pool. It does so before asking for
   * credentials (transferRouter.ts explains why), so such a request must reach it without them;
   * a router that refuses the request (a bad X-Narwal-Route) leaves the answer to the function.
   */
  async #routed(request: GatewayRequest, transfer: Transfer): Promise<boolean> {
    if (this.#route === undefined) return false;
    const core: CoreRequest = { ...request, body: Readable.from([]) };
    try {
      return (await this.#route(core, transfer.repo, transfer.service)) !== null;
    } catch {
      return true;
    }
  }

  async #isPublic(repo: string): Promise<boolean> {
    const cached = this.#public.get(repo);
    if (cached !== undefined) return cached;
    const readAt = this.#now();
    const loaded = await this.#wal.readIndex(repo);
    const isPublic = loaded?.index.public ?? false;
    this.#public.set(repo, isPublic, readAt);
    return isPublic;
  }
}

/**
 * Tokens over HTTP, for a token with admin on `**` (the configured admin token has it), the same
 * operations as `narwal token`:
 *
 *   GET    /api/v1/tokens            every token, oldest first: what it may do, never a secret or hash
 *   POST   /api/v1/tokens            {"name", "owner"?, "grants": [{"scope", "pattern"}], "create"?}:
 *                                    201 with the token's listing and "token", the only time it is shown
 *   DELETE /api/v1/tokens/ID|NAME    revokes it (a name only one token has): {"revoked": ...}
 *
 * Like every state-changing request, a POST or DELETE from another site is refused before it gets
 * here (sameOrigin.ts); a POST takes JSON only.
 */
import { authorize } from '../auth/authorize.js';
import { type Grant, InvalidGrant, type Principal, parsePattern, parseScope } from '../auth/Principal.js';
import type { TokenSpec, TokenStore } from '../auth/TokenStore.js';
import { json } from './errorResponse.js';
import { badRequest, methodNotAllowed, notFound } from './HttpError.js';
import { postFields } from './historyParams.js';
import type { BodyPace } from './requestBody.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface TokenRouteDeps {
  readonly tokens: TokenStore;
  /** How a request body must keep arriving (else 408). */
  readonly bodyPace: BodyPace;
}

const PREFIX = '/api/v1/tokens';

/** Whether the router should hand this path to `tokenRoute`. */
export function isTokensPath(path: string): boolean {
  return path === PREFIX || path.startsWith(`${PREFIX}/`);
}

export async function tokenRoute(
  deps: TokenRouteDeps,
  request: CoreRequest,
  path: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  // Managing tokens is an operation on the host: admin on ** (authorize.ts, repository null).
  authorize(principal, null, 'admin');
  if (path === PREFIX) {
    if (request.method === 'GET' || request.method === 'HEAD')
      return json(200, { tokens: await deps.tokens.list() });
    if (request.method !== 'POST') throw methodNotAllowed('narwal: use GET or POST on /api/v1/tokens');
    const spec = tokenSpec(await postFields(request, deps.bodyPace, { forms: false }));
    const { token, info } = await deps.tokens.create(spec);
    return json(201, { ...info, token });
  }
  const ref = path.slice(PREFIX.length + 1);
  if (ref === '' || ref.includes('/')) throw notFound(`narwal: no such API ${path}`);
  if (request.method !== 'DELETE') throw methodNotAllowed('narwal: use DELETE to revoke a token');
  return json(200, { revoked: await deps.tokens.revoke(ref) });
}

const FIELDS = new Set(['name', 'owner', 'grants', 'create']);

/** The new token's spec from a JSON body; anything unexpected is refused rather than ignored. */
function tokenSpec(fields: Record<string, unknown>): TokenSpec {
  const unknown = Object.keys(fields).find((field) => !FIELDS.has(field));
  if (unknown !== undefined) throw badRequest(`narwal: unknown field ${JSON.stringify(unknown)}`);
  const { name, owner, grants, create } = fields;
  if (typeof name !== 'string') throw badRequest('narwal: "name" must be a string');
  if (owner !== undefined && typeof owner !== 'string') throw badRequest('narwal: "owner" must be a string');
  if (create !== undefined && typeof create !== 'boolean')
    throw badRequest('narwal: "create" must be true or false');
  if (!Array.isArray(grants))
    throw badRequest('narwal: "grants" must be a list of {"scope": "read|write|admin", "pattern": "..."}');
  return {
    name,
    ...(owner !== undefined ? { owner } : {}),
    grants: grants.map(grantOf),
    create: create ?? false,
  };
}

function grantOf(value: unknown): Grant {
  const { scope, pattern } = (value ?? {}) as { scope?: unknown; pattern?: unknown };
  if (typeof scope !== 'string' || typeof pattern !== 'string')
    throw new InvalidGrant('each grant is {"scope": "read|write|admin", "pattern": "..."}');
  return { scope: parseScope(scope), pattern: parsePattern(pattern) };
}

/**
 * What a request without credentials may expect from the core handler, decided from its method,
 * path and query alone: `open` (it is answered without asking for credentials, whatever the
 * answer is), `challenge` (it is answered 401), or `read` of one repository (answered if the
 * repository is public, 401 otherwise: a private or missing repository asks for credentials).
 *
 * API Gateway's REQUEST authorizer uses it (functions/authorizer.ts): a 401 with
 * `WWW-Authenticate` can only come from a gateway response there, so the authorizer must refuse
 * exactly the anonymous requests the core would refuse with 401, and let the others through
 * (public repositories stay readable without a token). It reads paths as the router in
 * createHandler.ts does (routeOf.ts) and mirrors the routes it calls;
 * test/integration/anonymousAccess.test.ts holds the two together, request by request, against
 * the real handler.
 */
import { gitRepoFromPath, repoFromPath } from './repoPath.js';
import { decodePath, type GitSuffix, routeOf } from './routeOf.js';
import type { TransferService } from './transferRoute.js';

export type AnonymousAccess =
  | { readonly kind: 'open' }
  | { readonly kind: 'challenge'; readonly transfer?: Transfer }
  | { readonly kind: 'read'; readonly repo: string; readonly transfer?: Transfer };

/**
 * The transfer a `GET info/refs` starts. Its route to the pool is decided before credentials
 * (transferRouter.ts), so a transfer that goes to the pool is redirected even without them.
 */
export interface Transfer {
  readonly repo: string;
  readonly service: TransferService;
}

const OPEN: AnonymousAccess = { kind: 'open' };
const CHALLENGE: AnonymousAccess = { kind: 'challenge' };

export function anonymousAccess(method: string, rawPath: string, query: URLSearchParams): AnonymousAccess {
  let path: string;
  try {
    path = decodePath(rawPath);
  } catch {
    // What the router refuses (400) needs no credentials.
    return OPEN;
  }
  const to = routeOf(path);
  switch (to.kind) {
    case 'health':
      return OPEN;
    case 'protection': {
      const repo = validRepo(to.repoPart);
      if (repo === undefined) return OPEN;
      if (isGet(method)) return { kind: 'read', repo };
      return method === 'PUT' || method === 'DELETE' ? CHALLENGE : OPEN;
    }
    case 'tokens':
      // Managing tokens needs an admin token, whatever the method.
      return CHALLENGE;
    case 'settings': {
      const repo = validRepo(to.repoPart);
      if (repo === undefined) return OPEN;
      if (isGet(method)) return { kind: 'read', repo };
      return method === 'PUT' ? CHALLENGE : OPEN;
    }
    case 'lfs':
      return lfsAccess(method, to.repoPart, to.rest);
    case 'uriPack':
      // The signature in the URL is the grant: a bad one is 4xx, never a request for credentials.
      return OPEN;
    case 'front':
      return query.has('sign-in') ? CHALLENGE : OPEN;
    case 'login':
      return CHALLENGE;
    case 'api':
      return apiAccess(method, to.path);
    case 'page':
      return pageAccess(method, to.path);
    case 'git':
      return gitAccess(method, to.suffix, to.repoPart, query);
  }
}

function gitAccess(
  method: string,
  suffix: GitSuffix,
  repoPart: string,
  query: URLSearchParams,
): AnonymousAccess {
  let target: { repo: string; at?: number };
  try {
    target = gitRepoFromPath(repoPart);
  } catch {
    return OPEN;
  }
  if (suffix === '/info/refs') {
    if (!isGet(method)) return OPEN;
    const service = query.get('service');
    if (service === 'git-upload-pack')
      return { kind: 'read', repo: target.repo, transfer: { repo: target.repo, service } };
    return service === 'git-receive-pack' && target.at === undefined
      ? { kind: 'challenge', transfer: { repo: target.repo, service } }
      : OPEN;
  }
  if (method !== 'POST') return OPEN;
  if (suffix === '/git-upload-pack') return { kind: 'read', repo: target.repo };
  return target.at === undefined ? CHALLENGE : OPEN;
}

function apiAccess(method: string, path: string): AnonymousAccess {
  if (!path.startsWith('/repos/')) return OPEN;
  const rest = path.slice('/repos/'.length);
  const split = rest.indexOf('/-/');
  const repo = validRepo(split < 0 ? rest : rest.slice(0, split));
  if (repo === undefined) return OPEN;
  // The API's rewind is a POST (anything else is 405); it needs write access.
  if (split >= 0 && rest.slice(split + 3) === 'rewind') return method === 'POST' ? CHALLENGE : OPEN;
  return isGet(method) ? { kind: 'read', repo } : OPEN;
}

function lfsAccess(method: string, repoPart: string, rest: string): AnonymousAccess {
  const repo = validRepo(repoPart);
  if (repo === undefined) return OPEN;
  if (rest === '/objects/batch') return method === 'POST' ? { kind: 'read', repo } : OPEN;
  if (/^\/objects\/[^/]+$/.test(rest)) {
    if (isGet(method)) return { kind: 'read', repo };
    return method === 'PUT' ? CHALLENGE : OPEN;
  }
  if (rest === '/verify') return method === 'POST' ? CHALLENGE : OPEN;
  if (rest === '/locks') {
    if (isGet(method)) return { kind: 'read', repo };
    return method === 'POST' ? CHALLENGE : OPEN;
  }
  if (rest === '/locks/verify' || /^\/locks\/[A-Za-z0-9_-]{1,64}\/unlock$/.test(rest))
    return method === 'POST' ? CHALLENGE : OPEN;
  return OPEN;
}

function pageAccess(method: string, path: string): AnonymousAccess {
  const split = path.indexOf('/-/');
  const repo = validRepo(split < 0 ? path : path.slice(0, split));
  if (repo === undefined) return OPEN;
  // The rewind page previews (GET) and confirms (POST); both need write access.
  if (split >= 0 && path.slice(split + 3) === 'rewind')
    return method === 'POST' || isGet(method) ? CHALLENGE : OPEN;
  return isGet(method) ? { kind: 'read', repo } : OPEN;
}

function isGet(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/** The repository a path part names; a name the router refuses (400) needs no credentials. */
function validRepo(part: string): string | undefined {
  try {
    return repoFromPath(part);
  } catch {
    return undefined;
  }
}

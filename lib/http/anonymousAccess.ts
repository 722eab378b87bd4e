/**
 * What a request without credentials may expect from the core handler, decided from its method,
 * path and query alone: `open` (it is answered without asking for credentials, whatever the
 * answer is), `challenge` (it is answered 401), or `read` of one repository (answered if the
 * repository is public, 401 otherwise: a private or missing repository asks for credentials).
 *
 * API Gateway's REQUEST authorizer uses it (functions/authorizer.ts): a 401 with
 * `WWW-Authenticate` can only come from a gateway response there, so the authorizer must refuse
 * exactly the anonymous requests the core would refuse with 401, and let the others through
 * (public repositories stay readable without a token). It mirrors the router in
 * createHandler.ts and the routes it calls; test/unit/http/anonymousAccess.test.ts holds the two
 * together, request by request, against the real handler.
 */
import { isProtectionPath } from './protectionRoutes.js';
import { gitRepoFromPath, repoFromPath } from './repoPath.js';
import { isTokensPath } from './tokenRoutes.js';
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
const GIT_SUFFIXES = ['/info/refs', '/git-upload-pack', '/git-receive-pack'] as const;

export function anonymousAccess(method: string, rawPath: string, query: URLSearchParams): AnonymousAccess {
  const path = decoded(rawPath);
  if (path === undefined || path === '/healthz') return OPEN;
  if (isProtectionPath(path)) {
    const repo = validRepo(path.slice('/api/v1/repos/'.length, -'/-/protection'.length));
    if (repo === undefined) return OPEN;
    if (isGet(method)) return { kind: 'read', repo };
    return method === 'PUT' || method === 'DELETE' ? CHALLENGE : OPEN;
  }
  const settings = /^\/api\/v1\/repos\/(.+)\/-\/settings$/.exec(path);
  if (settings) {
    const repo = validRepo(settings[1] ?? '');
    if (repo === undefined) return OPEN;
    if (isGet(method)) return { kind: 'read', repo };
    return method === 'PUT' ? CHALLENGE : OPEN;
  }
  // Managing tokens needs an admin token, whatever the method.
  if (isTokensPath(path)) return CHALLENGE;
  if (path === '/') return query.has('sign-in') ? CHALLENGE : OPEN;
  if (path === '/-/login') return CHALLENGE;
  if (path.startsWith('/api/v1/')) return apiAccess(method, path.slice('/api/v1'.length));
  const lfs = /^\/(.+)\.git\/info\/lfs(\/.*)?$/.exec(path);
  if (lfs) return lfsAccess(method, lfs[1] ?? '', lfs[2] ?? '');
  const suffix = GIT_SUFFIXES.find((s) => path.endsWith(s));
  if (suffix === undefined) return pageAccess(method, path.slice(1));
  let target: { repo: string; at?: number };
  try {
    target = gitRepoFromPath(path.slice(1, -suffix.length));
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

/**
 * Git LFS (lfsRoutes.ts): a batch is a read until its body says it is an upload, so anonymous
 * batches of a public repository pass and the core asks an anonymous upload for credentials
 * itself (git-lfs reads its LFS-Authenticate, which the gateway leaves alone). Uploads, verifies
 * and every change of a lock need write access.
 */
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

/** As the router decodes paths; what it refuses (400) needs no credentials. */
function decoded(raw: string): string | undefined {
  if (/%(2f|5c)/i.test(raw)) return undefined;
  try {
    const path = decodeURIComponent(raw);
    if (path.includes('\0') || path.includes('\\')) return undefined;
    return path.replace(/\/+$/, '') || '/';
  } catch {
    return undefined;
  }
}

/**
 * What a request path names, read the same way by the router (createHandler.ts) and by the
 * gateway's picture of anonymous requests (anonymousAccess.ts), so the two cannot drift apart:
 * the authorizer must refuse exactly what the router would answer 401.
 */
import { badRequest } from './HttpError.js';
import { lfsPathParts } from './lfsRoutes.js';
import { type UriPackPath, uriPackPathParts } from './packUriRoutes.js';
import { isProtectionPath } from './protectionRoutes.js';
import { isSettingsPath } from './settingsRoutes.js';
import { isTokensPath } from './tokenRoutes.js';

const GIT_SUFFIXES = ['/info/refs', '/git-upload-pack', '/git-receive-pack'] as const;
export type GitSuffix = (typeof GIT_SUFFIXES)[number];

export type Route =
  /** `/healthz`: answered before anything else, without credentials. */
  | { readonly kind: 'health' }
  /** `/api/v1/repos/REPO/-/protection` (protectionRoutes.ts). */
  | { readonly kind: 'protection'; readonly repoPart: string }
  /** `/api/v1/tokens[/ID]` (tokenRoutes.ts). */
  | { readonly kind: 'tokens' }
  /** `/api/v1/repos/REPO/-/settings` (settingsRoutes.ts). */
  | { readonly kind: 'settings'; readonly repoPart: string }
  /** Git LFS under a repository's git URL, `REPO.git/info/lfs/...` (lfsRoutes.ts). */
  | { readonly kind: 'lfs'; readonly repoPart: string; readonly rest: string }
  /** A stored pack a clone's `packfile-uris` answer named, `REPO.git/uri-packs/...` (packUriRoutes.ts). */
  | ({ readonly kind: 'uriPack' } & UriPackPath)
  /** `/`: the front page, or the repository list for a browser. */
  | { readonly kind: 'front' }
  /** `/-/login`. */
  | { readonly kind: 'login' }
  /** The rest of the JSON API: `path` follows `/api/v1`. */
  | { readonly kind: 'api'; readonly path: string }
  /** git's smart HTTP: `repoPart` is `OWNER/NAME.git` or `OWNER/NAME.git@SEQ`. */
  | { readonly kind: 'git'; readonly suffix: GitSuffix; readonly repoPart: string }
  /** A monitor page: `path` is a repository path, without the leading `/`, maybe with `/-/ACTION`. */
  | { readonly kind: 'page'; readonly path: string };

/** The route of a decoded path (see decodePath). */
export function routeOf(path: string): Route {
  if (path === '/healthz') return { kind: 'health' };
  if (isProtectionPath(path))
    return { kind: 'protection', repoPart: path.slice('/api/v1/repos/'.length, -'/-/protection'.length) };
  if (isTokensPath(path)) return { kind: 'tokens' };
  if (isSettingsPath(path))
    return { kind: 'settings', repoPart: path.slice('/api/v1/repos/'.length, -'/-/settings'.length) };
  if (path === '/') return { kind: 'front' };
  if (path === '/-/login') return { kind: 'login' };
  if (path.startsWith('/api/v1/')) return { kind: 'api', path: path.slice('/api/v1'.length) };
  const lfs = lfsPathParts(path);
  if (lfs !== null) return { kind: 'lfs', ...lfs };
  const uriPack = uriPackPathParts(path);
  if (uriPack !== null) return { kind: 'uriPack', ...uriPack };
  const suffix = gitSuffix(path);
  if (suffix !== undefined) return { kind: 'git', suffix, repoPart: path.slice(1, -suffix.length) };
  return { kind: 'page', path: path.slice(1) };
}

export function gitSuffix(path: string): GitSuffix | undefined {
  return GIT_SUFFIXES.find((s) => path.endsWith(s));
}

/**
 * The path as the router sees it. A percent-encoded `/` or `\` is refused rather than decoded:
 * it would let one repository be named by a URL whose segments say something else. What is left
 * is checked by parseRepoName, so `..`, `.`, empty segments and odd characters never reach a key.
 */
export function decodePath(raw: string): string {
  if (/%(2f|5c)/i.test(raw)) throw badRequest('narwal: encoded "/" or "\\" in the URL path');
  try {
    const path = decodeURIComponent(raw);
    if (path.includes('\0') || path.includes('\\'))
      throw badRequest('narwal: invalid characters in the URL path');
    return path.replace(/\/+$/, '') || '/';
  } catch (error) {
    if (error instanceof URIError) throw badRequest('narwal: malformed percent-encoding in the URL path');
    throw error;
  }
}

/**
 * The core request -> response handler: routing, authentication, and the one place errors are
 * turned into responses. The local server and the Lambda handlers are thin adapters around it.
 */
import { tokenFromAuthorization } from '../auth/basicAuth.js';
import type { Principal } from '../auth/Principal.js';
import type { TokenStore } from '../auth/TokenStore.js';
import type { Publisher } from '../wal/Publisher.js';
import { apiRoute } from './apiRoutes.js';
import { baseUrl } from './baseUrl.js';
import type { BrowseRouteDeps } from './browseRoutes.js';
import { asHtml, asJson, asLfsJson, asUploadPackError, errorResponse, text } from './errorResponse.js';
import { type GitRouteDeps, infoRefsRoute, receivePackRoute, uploadPackRoute } from './gitRoutes.js';
import { methodNotAllowed, unauthorized } from './HttpError.js';
import type { HealthCheck } from './health.js';
import { isLfsRequest, type LfsRouteDeps, lfsRoute } from './lfsRoutes.js';
import { loginPage, monitorRoute, repoListRoute, signInRoute, wantsHtml } from './monitorRoutes.js';
import { uriPackRoute } from './packUriRoutes.js';
import { type ProtectionRouteDeps, protectionRoute } from './protectionRoutes.js';
import { gitRepoFromPath } from './repoPath.js';
import { decodePath, type GitSuffix, gitSuffix, routeOf } from './routeOf.js';
import { requireSameOrigin } from './sameOrigin.js';
import { settingsRoute } from './settingsRoutes.js';
import { tokenRoute } from './tokenRoutes.js';
import type { CoreHandler, CoreRequest, CoreResponse } from './types.js';

export interface HandlerDeps
  extends Omit<GitRouteDeps, 'git'>,
    BrowseRouteDeps,
    ProtectionRouteDeps,
    LfsRouteDeps {
  readonly publisher: Publisher;
  readonly tokens: TokenStore;
  /** What `/healthz` asks; without it, `/healthz` answers as long as the process does. */
  readonly health?: HealthCheck;
}

export function createHandler(deps: HandlerDeps): CoreHandler {
  return async (request) => {
    try {
      return await route(deps, request);
    } catch (error) {
      const response = errorResponse(error, request.requestId, deps.logger);
      if (request.path.startsWith('/api/')) return asJson(response);
      if (isLfsRequest(request.path)) return asLfsJson(response, request.requestId);
      if (request.method === 'POST' && gitSuffix(request.path) === '/git-upload-pack')
        return asUploadPackError(response);
      // git and curl get the message as text; a browser gets it as a page.
      return wantsHtml(request) && !isGitPath(request.path) ? asHtml(response) : response;
    }
  };
}

async function route(deps: HandlerDeps, request: CoreRequest): Promise<CoreResponse> {
  const path = decodePath(request.path);
  const to = routeOf(path);
  if (to.kind === 'health') return healthz(deps);
  requireSameOrigin(request);
  if (to.kind === 'protection')
    return protectionRoute(deps, request, path, await authenticate(deps, request));
  if (to.kind === 'tokens') return tokenRoute(deps, request, path, await authenticate(deps, request));
  if (to.kind === 'settings') return settingsRoute(deps, request, path, await authenticate(deps, request));
  // git fetches these without credentials: the URL is signed.
  if (to.kind === 'uriPack') return uriPackRoute(deps, request, to);
  const principal = await authenticate(deps, request);
  switch (to.kind) {
    case 'front':
      if (request.query.has('sign-in')) return signInRoute(principal);
      return wantsHtml(request) ? repoListRoute(deps, request, principal) : frontPage(deps, request);
    case 'login':
      return loginPage(principal);
    case 'api':
      return apiRoute(deps, request, to.path, principal);
    case 'page':
      return monitorRoute(deps, request, to.path, principal);
    case 'lfs':
      return lfsRoute(deps, request, to, principal);
    case 'git':
      return gitRoute(deps, request, to.suffix, to.repoPart, principal);
  }
}

function gitRoute(
  deps: HandlerDeps,
  request: CoreRequest,
  suffix: GitSuffix,
  repoPart: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const { repo, at } = gitRepoFromPath(repoPart);
  if (suffix === '/info/refs') {
    if (request.method !== 'GET' && request.method !== 'HEAD')
      throw methodNotAllowed('narwal: use GET for info/refs');
    return infoRefsRoute(deps, request, repo, principal, at);
  }
  if (request.method !== 'POST') throw methodNotAllowed(`narwal: use POST for ${suffix.slice(1)}`);
  return suffix === '/git-upload-pack'
    ? uploadPackRoute(deps, request, repo, principal, at)
    : receivePackRoute(deps, request, repo, principal, at);
}

async function healthz(deps: HandlerDeps): Promise<CoreResponse> {
  if (!deps.health) return text(200, 'ok');
  const report = await deps.health();
  const lines = Object.entries(report.checks).map(([name, result]) => `${name}: ${result}`);
  return text(report.ok ? 200 : 503, `${report.ok ? 'ok' : 'narwal: unhealthy'}\n${lines.join('\n')}`);
}

function isGitPath(rawPath: string): boolean {
  return gitSuffix(rawPath.replace(/\/+$/, '')) !== undefined;
}

async function authenticate(deps: HandlerDeps, request: CoreRequest): Promise<Principal | null> {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const token = tokenFromAuthorization(header);
  const principal = token === null ? null : await deps.tokens.find(token);
  if (principal === null)
    throw unauthorized('narwal: invalid credentials (use a narwal token as the password)');
  return principal;
}

function frontPage(deps: HandlerDeps, request: CoreRequest): CoreResponse {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('narwal: use GET');
  const url = baseUrl(deps, request);
  return text(
    200,
    [
      'narwal: a git host whose only source of truth is a log in an object store.',
      '',
      `Push a repository:  git push ${url}/OWNER/NAME.git main`,
      `Clone it:           git clone ${url}/OWNER/NAME.git`,
      'Credentials: any user name, a narwal token as the password.',
      `The log, in a browser: ${url}/  (JSON: ${url}/api/v1/repos)`,
    ].join('\n'),
  );
}

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
import { asHtml, asJson, errorResponse, text } from './errorResponse.js';
import { type GitRouteDeps, infoRefsRoute, receivePackRoute, uploadPackRoute } from './gitRoutes.js';
import { badRequest, methodNotAllowed, unauthorized } from './HttpError.js';
import type { HealthCheck } from './health.js';
import type { HistoryRouteDeps } from './historyAccess.js';
import { loginPage, monitorRoute, repoListRoute, signInRoute, wantsHtml } from './monitorRoutes.js';
import { isProtectionPath, type ProtectionRouteDeps, protectionRoute } from './protectionRoutes.js';
import { gitRepoFromPath } from './repoPath.js';
import { requireSameOrigin } from './sameOrigin.js';
import { isTokensPath, tokenRoute } from './tokenRoutes.js';
import type { CoreHandler, CoreRequest, CoreResponse } from './types.js';

export interface HandlerDeps extends GitRouteDeps, HistoryRouteDeps, ProtectionRouteDeps {
  readonly publisher: Publisher;
  readonly tokens: TokenStore;
  /** What `/healthz` asks; without it, `/healthz` answers as long as the process does. */
  readonly health?: HealthCheck;
}

const GIT_SUFFIXES = ['/info/refs', '/git-upload-pack', '/git-receive-pack'] as const;

export function createHandler(deps: HandlerDeps): CoreHandler {
  return async (request) => {
    try {
      return await route(deps, request);
    } catch (error) {
      const response = errorResponse(error, request.requestId, deps.logger);
      if (request.path.startsWith('/api/')) return asJson(response);
      // git and curl get the message as text; a browser gets it as a page.
      return wantsHtml(request) && !isGitPath(request.path) ? asHtml(response) : response;
    }
  };
}

async function route(deps: HandlerDeps, request: CoreRequest): Promise<CoreResponse> {
  const path = decodePath(request.path);
  if (path === '/healthz') return healthz(deps);
  requireSameOrigin(request);
  if (isProtectionPath(path)) return protectionRoute(deps, request, path, await authenticate(deps, request));
  if (isTokensPath(path)) return tokenRoute(deps, request, path, await authenticate(deps, request));
  const principal = await authenticate(deps, request);
  if (path === '/' || path === '') {
    if (request.query.has('sign-in')) return signInRoute(principal);
    return wantsHtml(request) ? repoListRoute(deps, request, principal) : frontPage(deps, request);
  }
  if (path === '/-/login') return loginPage(principal);
  if (path.startsWith('/api/v1/')) return apiRoute(deps, request, path.slice('/api/v1'.length), principal);
  const suffix = gitSuffix(path);
  if (suffix === undefined) return monitorRoute(deps, request, path.slice(1), principal);
  const { repo, at } = gitRepoFromPath(path.slice(1, -suffix.length));
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

function gitSuffix(path: string): (typeof GIT_SUFFIXES)[number] | undefined {
  return GIT_SUFFIXES.find((s) => path.endsWith(s));
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

/**
 * The path as the router sees it. A percent-encoded `/` or `\` is refused rather than decoded:
 * it would let one repository be named by a URL whose segments say something else. What is left
 * is checked by parseRepoName, so `..`, `.`, empty segments and odd characters never reach a key.
 */
function decodePath(raw: string): string {
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

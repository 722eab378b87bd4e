/**
 * The core request -> response handler: routing, authentication, and the one place errors are
 * turned into responses. The local server and the Lambda handlers are thin adapters around it.
 */
import { tokenFromAuthorization } from '../auth/basicAuth.js';
import type { Principal } from '../auth/Principal.js';
import type { TokenStore } from '../auth/TokenStore.js';
import { InvalidRepoName, parseRepoName } from '../repoName.js';
import { errorResponse, text } from './errorResponse.js';
import { type GitRouteDeps, infoRefs, receivePack, uploadPack } from './gitRoutes.js';
import { badRequest, methodNotAllowed, notFound, unauthorized } from './HttpError.js';
import { isProtectionPath, protectionRoute } from './protectionRoutes.js';
import type { CoreHandler, CoreRequest, CoreResponse } from './types.js';

export interface HandlerDeps extends GitRouteDeps {
  readonly tokens: TokenStore;
  /** Shown on the front page, e.g. http://127.0.0.1:8080 */
  readonly publicUrl: string;
}

const GIT_SUFFIXES = ['/info/refs', '/git-upload-pack', '/git-receive-pack'] as const;

export function createHandler(deps: HandlerDeps): CoreHandler {
  return async (request) => {
    try {
      return await route(deps, request);
    } catch (error) {
      return errorResponse(error, request.requestId, deps.logger);
    }
  };
}

async function route(deps: HandlerDeps, request: CoreRequest): Promise<CoreResponse> {
  const path = decodePath(request.path);
  if (path === '/' || path === '') return frontPage(deps, request);
  if (path === '/healthz') return text(200, 'ok');
  if (isProtectionPath(path)) return protectionRoute(deps, request, path, await authenticate(deps, request));
  const suffix = GIT_SUFFIXES.find((s) => path.endsWith(s));
  if (suffix === undefined) throw notFound(`narwal: no such page ${path}`);
  const repo = repoFromPath(path.slice(1, -suffix.length));
  const principal = await authenticate(deps, request);
  if (suffix === '/info/refs') {
    if (request.method !== 'GET' && request.method !== 'HEAD')
      throw methodNotAllowed('narwal: use GET for info/refs');
    return infoRefs(deps, request, repo, principal);
  }
  if (request.method !== 'POST') throw methodNotAllowed(`narwal: use POST for ${suffix.slice(1)}`);
  return suffix === '/git-upload-pack'
    ? uploadPack(deps, request, repo, principal)
    : receivePack(deps, request, repo, principal);
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

function repoFromPath(raw: string): string {
  try {
    return parseRepoName(raw);
  } catch (error) {
    if (error instanceof InvalidRepoName) throw badRequest(`narwal: ${error.message}`);
    throw error;
  }
}

function frontPage(deps: HandlerDeps, request: CoreRequest): CoreResponse {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('narwal: use GET');
  return text(
    200,
    [
      'narwal: a git host whose only source of truth is a log in an object store.',
      '',
      `Push a repository:  git push ${deps.publicUrl}/OWNER/NAME.git main`,
      `Clone it:           git clone ${deps.publicUrl}/OWNER/NAME.git`,
      'Credentials: any user name, a narwal token as the password.',
    ].join('\n'),
  );
}

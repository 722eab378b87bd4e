/**
 * The monitor pages, for browsers, behind the same authentication and rules as git:
 *
 *   /                              repositories (when the client asks for HTML)
 *   /REPO                          the repository's home (browseRoutes.ts, with its code pages)
 *   /REPO/-/log?before=SEQ         the log, newest first, paged (also /REPO?before=SEQ)
 *   /REPO/-/entry/SEQ              one entry: who, when, every update, the refs after it
 *   /REPO/-/diff?from=A&to=B       refs added, removed, moved, with the commits in between
 *   /REPO/-/who?ref=REF            every move of a ref
 *   /REPO/-/rewind?to=SEQ&refs=P   a dry run; POST confirms it (write access)
 *   /?sign-in                      asks the browser for credentials, then shows /
 *   /-/login                       the same, for links and scripts that know this path
 */
import { allows, authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { SIGN_IN } from '../monitor/html.js';
import {
  diffPageView,
  entryPageView,
  logPageView,
  type PageContext,
  repoListPage,
  rewindPageView,
  whoPageView,
} from '../monitor/pages.js';
import type { RepoIndex } from '../wal/types.js';
import { baseUrl } from './baseUrl.js';
import { type BrowseRouteDeps, browseAction, browseRoute } from './browseRoutes.js';
import { NOT_STORED } from './cachePolicy.js';
import { htmlPage } from './errorResponse.js';
import { badRequest, forbidden, methodNotAllowed, notFound, unauthorized } from './HttpError.js';
import { type HistoryRouteDeps, readable, readableRepos } from './historyAccess.js';
import { identityOf, optionalSeq, postFields, seqParam, stringField } from './historyParams.js';
import { repoFromPath } from './repoPath.js';
import type { CoreRequest, CoreResponse } from './types.js';

/** Whether a request for `/` or a repository path is a browser's (rather than git's or curl's). */
export function wantsHtml(request: CoreRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

const SIGN_IN_MESSAGE = 'narwal: sign in with any user name and a narwal token as the password';

/**
 * `/?sign-in`: 401 until the browser sends credentials, then the repository list. A browser
 * sends Basic credentials unasked only below the directory of the URL that asked for them, so
 * only a challenge from `/` itself makes every page (the list included) arrive signed in.
 */
export async function signInRoute(principal: Principal | null): Promise<CoreResponse> {
  if (principal === null) throw unauthorized(SIGN_IN_MESSAGE);
  return redirect('/');
}

/**
 * `/-/login`: 401 until the browser sends credentials, then on to `/?sign-in`, whose challenge the
 * browser answers with the same credentials, unasked, so that they cover the whole site.
 */
export async function loginPage(principal: Principal | null): Promise<CoreResponse> {
  if (principal === null) throw unauthorized(SIGN_IN_MESSAGE);
  return redirect(SIGN_IN);
}

function redirect(location: string): CoreResponse {
  return { status: 303, headers: { location, ...NOT_STORED }, body: Buffer.alloc(0) };
}

export async function repoListRoute(
  deps: HistoryRouteDeps,
  request: CoreRequest,
  principal: Principal | null,
): Promise<CoreResponse> {
  requireGet(request);
  const repos = await readableRepos(deps, principal);
  const summaries = repos.map(({ index }) => ({
    name: index.repo,
    seq: index.seq,
    public: index.public,
    ...(index.tail.at(-1)?.time ? { time: index.tail.at(-1)?.time as string } : {}),
  }));
  return htmlPage(200, repoListPage(context(deps, request, principal), summaries));
}

/** `path` is a repository path, optionally followed by `/-/ACTION`. */
export async function monitorRoute(
  deps: BrowseRouteDeps,
  request: CoreRequest,
  path: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const split = path.indexOf('/-/');
  const repo = repoFromPath(split < 0 ? path : path.slice(0, split));
  const action = split < 0 ? '' : path.slice(split + 3);
  // The repository's home and its code pages (browseRoutes.ts); `/REPO?before=N` is the log's.
  if (action === '' && !request.query.has('before'))
    return browseRoute(deps, request, repo, { kind: 'home', rest: [] }, principal);
  const page = browseAction(action);
  if (page !== null) return browseRoute(deps, request, repo, page, principal);
  const ctx = context(deps, request, principal);
  const { history } = deps;
  if (action === 'rewind' && request.method === 'POST') {
    const loaded = await readable(deps, repo, principal);
    authorizeRewind(principal, loaded.index);
    const fields = await postFields(request, deps.bodyPace, { forms: true });
    const refs = stringField(fields, 'refs');
    const result = await history.rewind(repo, seqParam(stringField(fields, 'to'), 'to'), {
      who: identityOf(principal as Principal, request),
      expect: seqParam(stringField(fields, 'expect'), 'expect'),
      ...(refs !== undefined ? { refs } : {}),
    });
    const after = await history.load(repo);
    return htmlPage(200, rewindPageView(ctx, after.index, result, { done: true }));
  }
  requireGet(request);
  const loaded = await readable(deps, repo, principal);
  const { index } = loaded;
  const query = request.query;
  if (action === '' || action === 'log') {
    const before = optionalSeq(query.get('before'), 'before');
    const slice = await history.log(index, before !== undefined ? { before } : {});
    return htmlPage(200, logPageView(ctx, index, slice));
  }
  if (action.startsWith('entry/')) {
    const seq = seqParam(action.slice(6), 'entry');
    const [item, refs] = await Promise.all([history.entry(index, seq), history.state(index, seq)]);
    const canWrite = allows(principal, repo, 'write', { public: index.public });
    return htmlPage(200, entryPageView(ctx, index, item, refs, canWrite));
  }
  if (action === 'diff') {
    const from = seqParam(query.get('from'), 'from');
    const to = optionalSeq(query.get('to'), 'to') ?? index.seq;
    return htmlPage(200, diffPageView(ctx, index, await history.diff(loaded, from, to)));
  }
  if (action === 'who') {
    const ref = query.get('ref');
    if (!ref) throw badRequest('narwal: give the ref, e.g. ?ref=refs/heads/main');
    return htmlPage(200, whoPageView(ctx, index, ref, await history.who(index, ref)));
  }
  if (action === 'rewind') {
    authorizeRewind(principal, index);
    const refs = query.get('refs') || undefined;
    const result = await history.rewind(repo, seqParam(query.get('to'), 'to'), {
      dryRun: true,
      who: identityOf(principal as Principal, request),
      ...(refs !== undefined ? { refs } : {}),
    });
    return htmlPage(200, rewindPageView(ctx, index, result, { done: false }));
  }
  throw notFound(`narwal: no such page /${repo}/-/${action}`);
}

function context(deps: HistoryRouteDeps, request: CoreRequest, principal: Principal | null): PageContext {
  return { user: principal?.name ?? null, publicUrl: baseUrl(deps, request) };
}

/** A rewind needs write access; a reader is told so in those words rather than "may not push". */
function authorizeRewind(principal: Principal | null, index: RepoIndex): void {
  const context = { public: index.public };
  if (
    principal !== null &&
    !allows(principal, index.repo, 'write', context) &&
    allows(principal, index.repo, 'read', context)
  )
    throw forbidden(
      `narwal: token ${principal.name} may read ${index.repo} but not rewind it (that needs write access)`,
    );
  authorize(principal, index.repo, 'write', context);
}

function requireGet(request: CoreRequest): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('narwal: use GET');
}

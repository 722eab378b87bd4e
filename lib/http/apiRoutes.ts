/**
 * The JSON API, under `/api/v1`, behind the same authentication and rules as git:
 *
 *   GET  /repos                                  repositories the caller can read
 *   GET  /repos/REPO                             one repository: seq, head, checkpoint
 *   GET  /repos/REPO/-/log?before=SEQ&limit=N    entries, newest first
 *   GET  /repos/REPO/-/entries/SEQ               one entry, every update
 *   GET  /repos/REPO/-/refs?at=SEQ               the refs after entry SEQ (default: now)
 *   GET  /repos/REPO/-/who?ref=REF               every move of a ref, newest first
 *   GET  /repos/REPO/-/diff?from=A&to=B          refs added, removed, moved (with commits)
 *   POST /repos/REPO/-/rewind                    {"to": SEQ, "refs"?, "dryRun"?, "expect"?}
 */
import { authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { mapToRows } from '../wal/refRows.js';
import { baseUrl } from './baseUrl.js';
import { json } from './errorResponse.js';
import { badRequest, methodNotAllowed, notFound } from './HttpError.js';
import { type HistoryRouteDeps, readable, readableRepos } from './historyAccess.js';
import { identityOf, optionalSeq, postFields, seqParam, stringField } from './historyParams.js';
import { repoFromPath } from './repoPath.js';
import type { CoreRequest, CoreResponse } from './types.js';

export async function apiRoute(
  deps: HistoryRouteDeps,
  request: CoreRequest,
  path: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  if (path === '/repos') {
    requireGet(request);
    const repos = await readableRepos(deps, principal);
    return json(200, {
      repos: repos.map(({ index }) => ({
        name: index.repo,
        seq: index.seq,
        public: index.public,
        time: index.tail.at(-1)?.time ?? null,
      })),
    });
  }
  if (!path.startsWith('/repos/')) throw notFound(`narwal: no such API ${path}`);
  const rest = path.slice('/repos/'.length);
  const split = rest.indexOf('/-/');
  const repo = repoFromPath(split < 0 ? rest : rest.slice(0, split));
  const action = split < 0 ? '' : rest.slice(split + 3);
  const { history } = deps;
  if (action === 'rewind') {
    if (request.method !== 'POST') throw methodNotAllowed('narwal: use POST to rewind');
    const loaded = await readable(deps, repo, principal);
    authorize(principal, repo, 'write', { public: loaded.index.public });
    const fields = await postFields(request, deps.bodyPace, { forms: false });
    const refs = stringField(fields, 'refs');
    const expect = optionalSeq(stringField(fields, 'expect'), 'expect');
    const result = await history.rewind(repo, seqParam(stringField(fields, 'to'), 'to'), {
      dryRun: fields.dryRun === true || fields.dryRun === 'true',
      who: identityOf(principal as Principal, request),
      ...(refs !== undefined ? { refs } : {}),
      ...(expect !== undefined ? { expect } : {}),
    });
    const refused = result.outcomes.some((o) => !o.ok);
    return json(refused ? 409 : 200, result);
  }
  requireGet(request);
  const loaded = await readable(deps, repo, principal);
  const { index } = loaded;
  const query = request.query;
  if (action === '') {
    return json(200, {
      name: index.repo,
      seq: index.seq,
      head: index.head,
      public: index.public,
      created: index.created,
      checkpoint: index.checkpoint ? { seq: index.checkpoint.seq, refs: index.checkpoint.count } : null,
      cloneUrl: `${baseUrl(deps, request)}/${index.repo}.git`,
    });
  }
  if (action === 'log') {
    const before = optionalSeq(query.get('before'), 'before');
    const limit = optionalSeq(query.get('limit'), 'limit');
    return json(
      200,
      await history.log(index, {
        ...(before !== undefined ? { before } : {}),
        ...(limit !== undefined ? { limit } : {}),
      }),
    );
  }
  if (action.startsWith('entries/'))
    return json(200, await history.entry(index, seqParam(action.slice(8), 'entry')));
  if (action === 'refs') {
    const at = optionalSeq(query.get('at'), 'at') ?? index.seq;
    const refs = await history.state(index, at);
    return json(200, {
      seq: at,
      refs: Object.fromEntries(
        mapToRows(refs).map(([name, oid, peeled]) => [name, peeled ? { oid, peeled } : oid]),
      ),
    });
  }
  if (action === 'who') {
    const ref = query.get('ref');
    if (!ref) throw badRequest('narwal: give the ref, e.g. ?ref=refs/heads/main');
    return json(200, { ref, moves: await history.who(index, ref) });
  }
  if (action === 'diff') {
    const from = seqParam(query.get('from'), 'from');
    const to = optionalSeq(query.get('to'), 'to') ?? index.seq;
    return json(200, await history.diff(loaded, from, to));
  }
  throw notFound(`narwal: no such API ${path}`);
}

function requireGet(request: CoreRequest): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('narwal: use GET');
}

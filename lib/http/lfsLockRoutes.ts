/**
 * The Git LFS file locking API under `REPO.git/info/lfs/locks`
 * (https://github.com/git-lfs/git-lfs/blob/main/docs/api/locking.md):
 *
 *   GET  locks?path=&id=&cursor=&limit=   the locks (read access)
 *   POST locks {"path"}                   take a lock: 201, or 409 with the lock that is there
 *   POST locks/verify {"cursor","limit"}  ours and theirs, which git-lfs asks before a push
 *   POST locks/<id>/unlock {"force"}      release one: its holder, or an admin with force
 *
 * Taking, verifying and releasing need write access, forcing an unlock admin access; every
 * change is an entry of the log.
 */
import { authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { InvalidLfsRequest } from '../lfs/errors.js';
import { type LfsLocks, ownerOf } from '../lfs/LfsLocks.js';
import { RepoNotFound } from '../wal/errors.js';
import type { Identity, LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { methodNotAllowed, notFound } from './HttpError.js';
import { lfsJson, readJson } from './lfsRoutes.js';
import type { BodyPace } from './requestBody.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface LfsLockRouteDeps {
  readonly wal: Wal;
  readonly locks: LfsLocks;
  readonly bodyPace: BodyPace;
}

export async function lfsLockRoute(
  deps: LfsLockRouteDeps,
  request: CoreRequest,
  repo: string,
  rest: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const loaded = await deps.wal.readIndex(repo);
  const visibility = { public: loaded?.index.public ?? false };
  if (rest === '') {
    if (request.method === 'GET' || request.method === 'HEAD') {
      authorize(principal, repo, 'read', visibility);
      const index = existing(repo, loaded);
      return lfsJson(200, await deps.locks.list(index, listFilter(request.query)));
    }
    if (request.method !== 'POST')
      throw methodNotAllowed('narwal: use GET to list locks and POST to take one');
    authorize(principal, repo, 'write', visibility);
    existing(repo, loaded);
    const body = fields(await readJson(deps, request, 'the lock request'));
    if (typeof body.path !== 'string')
      throw new InvalidLfsRequest('"path" must be the path of the file to lock');
    const { lock } = await deps.locks.lock(repo, body.path, whoOf(principal, request));
    return lfsJson(201, { lock });
  }
  if (request.method !== 'POST') throw methodNotAllowed('narwal: use POST');
  if (rest === '/verify') {
    authorize(principal, repo, 'write', visibility);
    const index = existing(repo, loaded);
    const body = fields(await readJson(deps, request, 'the verify request'));
    const page = await deps.locks.verify(index, ownerOf(whoOf(principal, request)), {
      ...(typeof body.cursor === 'string' ? { cursor: body.cursor } : {}),
      ...(typeof body.limit === 'number' ? { limit: body.limit } : {}),
    });
    return lfsJson(200, page);
  }
  const id = /^\/([A-Za-z0-9_-]{1,64})\/unlock$/.exec(rest)?.[1];
  if (id === undefined) throw notFound(`narwal: no LFS route /locks${rest}`);
  authorize(principal, repo, 'write', visibility);
  existing(repo, loaded);
  const body = fields(await readJson(deps, request, 'the unlock request'));
  const force = body.force === true;
  // Releasing someone else's lock is an admin's call.
  if (force) authorize(principal, repo, 'admin', visibility);
  const { lock } = await deps.locks.unlock(repo, id, whoOf(principal, request), force);
  return lfsJson(200, { lock });
}

function existing(repo: string, loaded: LoadedIndex | null) {
  if (loaded === null) throw new RepoNotFound(repo);
  return loaded.index;
}

function fields(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidLfsRequest('the request must be a JSON object');
  return body as Record<string, unknown>;
}

function listFilter(query: URLSearchParams): { path?: string; id?: string; cursor?: string; limit?: number } {
  const limit = query.get('limit');
  if (limit !== null && !/^\d{1,6}$/.test(limit))
    throw new InvalidLfsRequest('"limit" must be a whole number');
  const path = query.get('path');
  const id = query.get('id');
  const cursor = query.get('cursor');
  return {
    ...(path !== null ? { path } : {}),
    ...(id !== null ? { id } : {}),
    ...(cursor !== null ? { cursor } : {}),
    ...(limit !== null ? { limit: Number(limit) } : {}),
  };
}

/** Who the request speaks for, as the log records it. */
export function whoOf(principal: Principal | null, request: CoreRequest): Identity {
  return {
    token: principal?.name ?? 'anonymous',
    ...(principal?.tokenId ? { tokenId: principal.tokenId } : {}),
    ...(principal?.owner ? { owner: principal.owner } : {}),
    ...(request.headers['user-agent'] ? { agent: request.headers['user-agent'].slice(0, 200) } : {}),
    ...(request.remoteAddress ? { ip: request.remoteAddress } : {}),
  };
}

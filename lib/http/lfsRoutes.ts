/**
 * Git LFS over HTTP, under a repository's git URL as git-lfs looks for it with no configuration
 * (`<remote>.git/info/lfs`: https://github.com/git-lfs/git-lfs/blob/main/docs/api/server-discovery.md):
 *
 *   POST     info/lfs/objects/batch        the batch API: where to send or fetch each object
 *   PUT      info/lfs/objects/<oid>?size=N  an upload narwal receives itself (no presigned URLs)
 *   GET|HEAD info/lfs/objects/<oid>        a download narwal serves itself, with byte ranges
 *   POST     info/lfs/verify[?upload=ID]    the verify action after an upload
 *   ...      info/lfs/locks...              the file locking API (lfsLockRoutes.ts)
 *
 * Credentials and scopes are git's: read to download, write to upload and lock (create, for an
 * upload to a repository a push is about to create). Answers and errors are LFS's JSON
 * (`application/vnd.git-lfs+json`); the core handler shapes errors (errorResponse.ts, asLfsJson).
 */
import { authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { parseBatchRequest } from '../lfs/batch.js';
import { InvalidLfsRequest, LfsObjectTooLarge } from '../lfs/errors.js';
import { LfsObjects, type TransferLinks } from '../lfs/LfsObjects.js';
import { isOid } from '../lfs/pointer.js';
import { readAll } from '../util/readAll.js';
import { RepoNotFound } from '../wal/errors.js';
import type { LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { baseUrl, type SiteAddress } from './baseUrl.js';
import { parseRange } from './byteRange.js';
import { NOT_STORED } from './cachePolicy.js';
import { LFS_MEDIA_TYPE } from './errorResponse.js';
import { HttpError, methodNotAllowed, notFound, unsupportedMediaType } from './HttpError.js';
import { type LfsLockRouteDeps, lfsLockRoute } from './lfsLockRoutes.js';
import { repoFromPath } from './repoPath.js';
import { type BodyPace, decodedBody } from './requestBody.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface LfsRouteDeps extends SiteAddress, LfsLockRouteDeps {
  readonly wal: Wal;
  readonly lfs: LfsObjects;
  readonly bodyPace: BodyPace;
  /** Base URL of narwal's own transfers when they must not go where the batch came (the pool). */
  readonly lfsTransferBase?: string;
}

/** `/<repo>.git/info/lfs/...` once decoded. */
const LFS_PATH = /^\/(.+)\.git\/info\/lfs(\/.*)?$/;
/** A batch of 10,000 objects is about 1 MB of JSON. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;

/** The repository part (`OWNER/NAME`) and what follows `info/lfs` of an LFS path, or null. */
export function lfsPathParts(path: string): { readonly repoPart: string; readonly rest: string } | null {
  const match = LFS_PATH.exec(path);
  return match ? { repoPart: match[1] ?? '', rest: match[2] ?? '' } : null;
}

/** Whether errors for this raw request path are answered in LFS's JSON format. */
export function isLfsRequest(rawPath: string): boolean {
  return /\.git\/info\/lfs(\/|$)/.test(rawPath);
}

export async function lfsRoute(
  deps: LfsRouteDeps,
  request: CoreRequest,
  to: { readonly repoPart: string; readonly rest: string },
  principal: Principal | null,
): Promise<CoreResponse> {
  const repo = repoFromPath(to.repoPart);
  const rest = to.rest;
  if (rest === '/objects/batch') return batch(deps, request, repo, principal);
  const object = /^\/objects\/([^/]+)$/.exec(rest)?.[1];
  if (object !== undefined) return objectRoute(deps, request, repo, object, principal);
  if (rest === '/verify') return verify(deps, request, repo, principal);
  if (rest === '/locks' || rest.startsWith('/locks/'))
    return lfsLockRoute(deps, request, repo, rest.slice('/locks'.length), principal);
  throw notFound(`narwal: no LFS route ${rest || '/'}`);
}

async function batch(
  deps: LfsRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  if (request.method !== 'POST') throw methodNotAllowed('narwal: use POST for the batch API');
  // An anonymous client of a repository that is not public is asked for credentials before
  // anything about its request is looked at, as git's routes do.
  const loaded = await deps.wal.readIndex(repo);
  const visibility = { public: loaded?.index.public ?? false };
  if (principal === null && !visibility.public) authorize(null, repo, 'read');
  const body = parseBatchRequest(await readJson(deps, request, 'the batch request'));
  if (body.operation === 'download') {
    authorize(principal, repo, 'read', visibility);
    if (loaded === null) throw new RepoNotFound(repo);
  } else {
    authorizeUpload(principal, repo, loaded);
  }
  return lfsJson(200, await deps.lfs.batch(repo, body, links(deps, request)));
}

async function objectRoute(
  deps: LfsRouteDeps,
  request: CoreRequest,
  repo: string,
  oid: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const loaded = await deps.wal.readIndex(repo);
  if (request.method === 'PUT') {
    authorizeUpload(principal, repo, loaded);
    return upload(deps, request, repo, oid);
  }
  if (request.method !== 'GET' && request.method !== 'HEAD')
    throw methodNotAllowed('narwal: use GET to download an LFS object and PUT to upload one');
  authorize(principal, repo, 'read', { public: loaded?.index.public ?? false });
  if (loaded === null) throw new RepoNotFound(repo);
  if (!isOid(oid)) throw invalidOid();
  const info = await deps.lfs.info(repo, oid);
  const headers = {
    'content-type': 'application/octet-stream',
    'accept-ranges': 'bytes',
    ...NOT_STORED,
  };
  const range = parseRange(request.headers.range, info.size);
  if (range.kind === 'unsatisfiable')
    throw new HttpError(416, `narwal: the object is ${info.size} bytes`, {
      'content-range': `bytes */${info.size}`,
    });
  const partial = range.kind === 'range' && !(range.start === 0 && range.end === info.size - 1);
  const length = partial ? range.end - range.start + 1 : info.size;
  const answer = {
    status: partial ? 206 : 200,
    headers: {
      ...headers,
      'content-length': String(length),
      ...(partial ? { 'content-range': `bytes ${range.start}-${range.end}/${info.size}` } : {}),
    },
  };
  if (request.method === 'HEAD') return { ...answer, body: Buffer.alloc(0) };
  const stream = await deps.lfs.read(repo, oid, partial ? { start: range.start, end: range.end } : undefined);
  return { ...answer, body: stream.body };
}

/** An upload narwal receives itself: its length is announced (Content-Length) and checked. */
async function upload(
  deps: LfsRouteDeps,
  request: CoreRequest,
  repo: string,
  oid: string,
): Promise<CoreResponse> {
  if (!isOid(oid)) throw invalidOid();
  const declared = request.headers['content-length'];
  if (declared === undefined || !/^\d+$/.test(declared))
    throw new HttpError(411, 'narwal: an LFS upload must say its length (Content-Length)');
  const size = Number(declared);
  const announced = request.query.get('size');
  if (announced !== null && announced !== declared)
    throw new InvalidLfsRequest(`the batch announced ${announced} bytes for ${oid}, the upload has ${size}`);
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity')
    throw unsupportedMediaType('narwal: send LFS objects without Content-Encoding');
  if (size > deps.lfs.maxObjectBytes) throw new LfsObjectTooLarge(size, deps.lfs.maxObjectBytes);
  const body = decodedBody(request, { maxBytes: size, ...deps.bodyPace }, 'the LFS object');
  await deps.lfs.receive(repo, oid, size, body);
  return { status: 200, headers: { 'content-type': LFS_MEDIA_TYPE, ...NOT_STORED }, body: Buffer.alloc(0) };
}

async function verify(
  deps: LfsRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  if (request.method !== 'POST') throw methodNotAllowed('narwal: use POST to verify an upload');
  authorizeUpload(principal, repo, await deps.wal.readIndex(repo));
  const body = await readJson(deps, request, 'the verify request');
  const { oid, size } = (body ?? {}) as { oid?: unknown; size?: unknown };
  if (!isOid(oid)) throw invalidOid();
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
    throw new InvalidLfsRequest('the size must be a whole number of bytes');
  const upload = request.query.get('upload');
  if (upload !== null && !LfsObjects.isUploadId(upload)) throw new InvalidLfsRequest('unknown upload id');
  await deps.lfs.verify(repo, oid, size, upload ?? undefined);
  return lfsJson(200, {});
}

/** Uploading needs write access, or create access when a push is about to create the repository. */
function authorizeUpload(principal: Principal | null, repo: string, loaded: LoadedIndex | null): void {
  if (loaded === null) authorize(principal, repo, 'create');
  else authorize(principal, repo, 'write', { public: loaded.index.public });
}

/** narwal's own transfer URLs, and the caller's credentials for them. */
function links(deps: LfsRouteDeps, request: CoreRequest): TransferLinks {
  const authorization = request.headers.authorization;
  return {
    base: deps.lfsTransferBase ?? baseUrl(deps, request),
    headers: authorization === undefined ? {} : { Authorization: authorization },
  };
}

/** A request body of LFS JSON, parsed. */
export async function readJson(
  deps: { readonly bodyPace: BodyPace },
  request: CoreRequest,
  what: string,
): Promise<unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== LFS_MEDIA_TYPE && type !== 'application/json')
    throw unsupportedMediaType(`narwal: send ${what} as ${LFS_MEDIA_TYPE}`);
  const bytes = await readAll(decodedBody(request, { maxBytes: MAX_JSON_BYTES, ...deps.bodyPace }, what));
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new InvalidLfsRequest(`${what} is not valid JSON`);
  }
}

export function lfsJson(status: number, value: unknown): CoreResponse {
  return {
    status,
    headers: { 'content-type': LFS_MEDIA_TYPE, ...NOT_STORED },
    body: Buffer.from(JSON.stringify(value)),
  };
}

const invalidOid = () => new InvalidLfsRequest('an LFS oid is 64 lowercase hex digits (a SHA-256)');

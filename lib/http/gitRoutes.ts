/**
 * git's smart HTTP protocol (gitprotocol-http(5)): `GET info/refs?service=...`, then POSTs to
 * `git-upload-pack` or `git-receive-pack`. This layer routes, authorizes and sets content types;
 * the transfers themselves are lib/transfer's: every read first proves the cache is at the current
 * index etag, every push is published to the log before git reports it.
 */
import { allows, authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { wantsProtocolV2 } from '../git/uploadPack.js';
import { offerBundleUri } from '../protocol/bundleUri.js';
import { offerPackfileUris } from '../protocol/packfileUris.js';
import { encodePktLine, FLUSH_PKT } from '../protocol/pktLine.js';
import { type AdvertiseDeps, advertiseReceivePack, advertiseUploadPack } from '../transfer/advertiseRefs.js';
import { answerFetch, type FetchDeps } from '../transfer/answerFetch.js';
import type { ClientMessage } from '../transfer/errors.js';
import { type PushDeps, receivePush } from '../transfer/receivePush.js';
import { Busy } from '../util/Busy.js';
import type { LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { NOT_STORED } from './cachePolicy.js';
import { type ChunkedPushNotes, isPushProbe } from './chunkedPushes.js';
import { badRequest, forbidden, HttpError, notFound, payloadTooLarge } from './HttpError.js';
import type { MemoryBudget, Reservation } from './MemoryBudget.js';
import { bundleLinkFor, type PackLinkDeps, packLinkFor } from './packUriRoutes.js';
import { type BodyPace, decodedBody } from './requestBody.js';
import type { TransferRouter } from './transferRouter.js';
import type { CoreRequest, CoreResponse } from './types.js';

export type GitService = 'git-upload-pack' | 'git-receive-pack';

/** How old an index this node confirmed may be to start a push's POST without reading it again. */
const PUSH_RECENT_MS = 5_000;

type TransferDeps = Omit<PushDeps, 'clientMessage' | 'wal'> &
  Omit<FetchDeps, 'clientMessage'> &
  Omit<AdvertiseDeps, 'wal'>;

export interface GitRouteDeps extends TransferDeps, PackLinkDeps {
  readonly wal: Wal;
  readonly maxPushBytes: number;
  readonly maxFetchRequestBytes: number;
  /** Fetch requests read into memory, bounded across requests and per client. */
  readonly requestMemory: MemoryBudget;
  /** How a request body must keep arriving (else 408). */
  readonly bodyPace: BodyPace;
  /** Sends long transfers to the pool (on Lambda only; see transferRouter.ts). */
  readonly routeTransfer?: TransferRouter;
  /** Behind a gateway that refuses chunked requests: notes refused pushes (chunkedPushes.ts). */
  readonly chunkedPushes?: ChunkedPushNotes;
}

/**
 * The words a failure of this layer has for git's user when it surfaces inside a transfer's
 * answer (on the sideband): a refused request body (408, 413, bad gzip) or a limit reached.
 */
export const clientMessage: ClientMessage = (error) =>
  error instanceof Busy || error instanceof HttpError ? error.message : undefined;

const RESULT = {
  'git-upload-pack': { 'content-type': 'application/x-git-upload-pack-result', ...NOT_STORED },
  'git-receive-pack': { 'content-type': 'application/x-git-receive-pack-result', ...NOT_STORED },
} as const;

export async function infoRefsRoute(
  deps: GitRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
  at?: number,
): Promise<CoreResponse> {
  const service = request.query.get('service');
  if (service !== 'git-upload-pack' && service !== 'git-receive-pack') {
    throw forbidden('narwal: only the smart HTTP protocol is supported; use git 1.6.6 or newer');
  }
  if (service === 'git-receive-pack' && at !== undefined) throw pastIsReadOnly(repo, at);
  const routed = await deps.routeTransfer?.(request, repo, service);
  if (routed) return routed;
  const protocol = request.headers['git-protocol'];
  const headers = { 'content-type': `application/x-${service}-advertisement`, ...NOT_STORED };
  const serviceLine = Buffer.concat([encodePktLine(`# service=${service}\n`), FLUSH_PKT]);
  if (service === 'git-receive-pack') {
    // A client with credentials is about to push (and computes its pack once it has this answer):
    // the node gets its receive-pack ready while the index is read.
    if (principal !== null) deps.scratchRepos.prepare();
    const loaded = await authorizePush(deps, repo, principal);
    return {
      status: 200,
      headers,
      body: Buffer.concat([serviceLine, await advertiseReceivePack(deps, loaded, protocol)]),
    };
  }
  // In protocol v2 this answer is the server's capabilities, no refs: nothing in it can be stale,
  // so a repository this node read moments ago needs no store round trip and no generation. The
  // refs come with the next request (ls-refs), which proves freshness as every read does.
  const recent = deps.wal.recentIndex(repo, 5_000);
  const v2 = wantsProtocolV2(protocol);
  const capabilitiesOnly =
    at === undefined &&
    v2 &&
    recent !== undefined &&
    allows(principal, repo, 'read', { public: recent.index.public });
  const loaded = capabilitiesOnly ? null : await authorizeRead(deps, repo, principal);
  const answer = await advertiseUploadPack(deps, {
    repo,
    loaded,
    at,
    protocol,
    owner: slotOwner(principal, request),
  });
  // In protocol v2 the server's first response is the capability advertisement itself, the same
  // for every repository (offering packfile URIs and bundle URIs when they are on); in v0 and v1
  // it is the refs of the state just read, after the service line.
  if (v2)
    return { status: 200, headers, body: deps.packUris ? offerBundleUri(offerPackfileUris(answer)) : answer };
  return { status: 200, headers, body: Buffer.concat([serviceLine, answer]) };
}

export async function uploadPackRoute(
  deps: GitRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
  at?: number,
): Promise<CoreResponse> {
  // The request bytes read into memory are charged to the node's budget until the answer is done.
  const memory = deps.requestMemory.reserve(slotOwner(principal, request));
  try {
    requireContentType(request, 'application/x-git-upload-pack-request');
    const loaded = await authorizeRead(deps, repo, principal);
    if (loaded === null) throw notFound(`narwal: repository ${repo} not found`);
    const body = decodedBody(
      request,
      { maxBytes: deps.maxFetchRequestBytes, ...deps.bodyPace },
      'the fetch request',
    );
    const answer = await answerFetch(
      { ...deps, clientMessage },
      {
        loaded,
        at,
        body,
        protocol: request.headers['git-protocol'],
        owner: slotOwner(principal, request),
        memory,
        requestId: request.requestId,
        packLink: packLinkFor(deps, request, repo),
        bundleLink: bundleLinkFor(deps, request, repo),
      },
    );
    return releasedAfter({ status: 200, headers: RESULT['git-upload-pack'], body: answer }, memory);
  } catch (error) {
    memory.release();
    throw error;
  }
}

/** Gives `memory` back once `response` has been sent (or abandoned). */
function releasedAfter(response: CoreResponse, memory: Reservation): CoreResponse {
  if (Buffer.isBuffer(response.body)) memory.release();
  else {
    response.body.once('close', memory.release);
    response.body.once('error', memory.release);
    if (response.body.destroyed) memory.release();
  }
  return response;
}

export async function receivePackRoute(
  deps: GitRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
  at?: number,
): Promise<CoreResponse> {
  if (at !== undefined) throw pastIsReadOnly(repo, at);
  requireContentType(request, 'application/x-git-receive-pack-request');
  // The index this node read for the push's advertisement moments ago is a good enough start: it
  // only picks the objects git receives the pack against, and the publisher's CAS proves every
  // old value (a stale start costs a re-read there, never a wrong answer). It saves the push one
  // store round trip between its two requests.
  const recent = principal === null ? undefined : deps.wal.recentIndex(repo, PUSH_RECENT_MS);
  const loaded = recent
    ? authorizeWrite(repo, principal, recent)
    : await authorizePush(deps, repo, principal);
  if (deps.chunkedPushes && isPushProbe(request.headers)) {
    // The chunked POST after this probe would be refused by the gateway: stop git now, before it
    // sends the body, and send this repository's next push to the pool.
    await deps.chunkedPushes.note(repo);
    throw payloadTooLarge(
      'narwal: this push is larger than git’s http.postBuffer, and the gateway takes no chunked requests: ' +
        'push again (it will go to the pool), or set http.postBuffer above the push’s size',
    );
  }
  const body = decodedBody(request, { maxBytes: deps.maxPushBytes, ...deps.bodyPace }, 'the push');
  const answer = await receivePush(
    { ...deps, clientMessage },
    {
      repo,
      loaded,
      body,
      // When git gave up before asking for a decision (a pack whose bases the node's objects lack,
      // say, because the client read a newer index elsewhere), the next push reads the index first.
      // git's probe POST before a large push ends the same way: its real POST pays that one read.
      ...(recent ? { undecided: () => deps.wal.unconfirm(repo) } : {}),
      owner: slotOwner(principal, request),
      who: {
        token: principal?.name ?? 'anonymous',
        ...(principal?.tokenId ? { tokenId: principal.tokenId } : {}),
        ...(principal?.owner ? { owner: principal.owner } : {}),
        ...(request.headers['user-agent'] ? { agent: request.headers['user-agent'].slice(0, 200) } : {}),
        ...(request.remoteAddress ? { ip: request.remoteAddress } : {}),
      },
    },
  );
  return { status: 200, headers: RESULT['git-receive-pack'], body: answer };
}

/** Reads the index and checks read access; anonymous users are asked for credentials. */
async function authorizeRead(
  deps: GitRouteDeps,
  repo: string,
  principal: Principal | null,
): Promise<LoadedIndex | null> {
  // git asks anonymously first and sends credentials after a 401: answer that without a store
  // round trip when this node saw the repository private moments ago. (A cached "public" is
  // never trusted: it is checked against the current index.)
  const known = deps.wal.recentIndex(repo, 5_000);
  if (principal === null && known && !known.index.public) authorize(null, repo, 'read');
  const loaded = await deps.wal.readIndex(repo);
  authorize(principal, repo, 'read', { public: loaded?.index.public ?? false });
  if (loaded === null) throw notFound(`narwal: repository ${repo} not found`);
  return loaded;
}

/** Reads the index and checks push access; null means the push may create the repository. */
async function authorizePush(
  deps: GitRouteDeps,
  repo: string,
  principal: Principal | null,
): Promise<LoadedIndex | null> {
  if (principal === null) authorize(null, repo, 'write');
  const loaded = await deps.wal.readIndex(repo);
  if (loaded === null) authorize(principal, repo, 'create');
  else authorizeWrite(repo, principal, loaded);
  return loaded;
}

function authorizeWrite(repo: string, principal: Principal | null, loaded: LoadedIndex): LoadedIndex {
  authorize(principal, repo, 'write', { public: loaded.index.public });
  return loaded;
}

function requireContentType(request: CoreRequest, expected: string): void {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== expected) throw badRequest(`narwal: expected Content-Type ${expected}`);
}

/**
 * Whom a request's git processes are counted against, for the per-client share of the node's
 * slots: its token, or for an anonymous request (a public repository) the client's address.
 */
function slotOwner(principal: Principal | null, request: CoreRequest): string {
  if (principal !== null) return `token:${principal.tokenId ?? principal.name}`;
  return `address:${request.remoteAddress ?? 'unknown'}`;
}

function pastIsReadOnly(repo: string, at: number) {
  return forbidden(
    `narwal: ${repo}.git@${at} is the state after entry ${at} and is read-only; push to ${repo}.git`,
  );
}

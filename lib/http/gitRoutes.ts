/**
 * git's smart HTTP protocol (gitprotocol-http(5)): `GET info/refs?service=...`, then POSTs to
 * `git-upload-pack` or `git-receive-pack`. Every read first proves the cache is at the current
 * index etag; every push is published to the log before git reports it.
 */

import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { allows, authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import type { CacheTarget, Generation, RepoCache } from '../cache/RepoCache.js';
import { type ChildExit, childExit, firstOutput } from '../git/childOutput.js';
import { type ClonePacking, clonePackBody } from '../git/clonePack.js';
import type { GitRunner } from '../git/GitRunner.js';
import { RefAnswers } from '../git/RefAnswers.js';
import { type ReceivePackDeps, runReceivePack } from '../git/receivePack.js';
import { SidebandProgress } from '../git/sidebandProgress.js';
import { gitProtocolEnv, uploadPackConfig, wantsProtocolV1, wantsProtocolV2 } from '../git/uploadPack.js';
import { type Logger, serializeError } from '../log.js';
import { fullCloneOf } from '../protocol/fullClone.js';
import { encodePktLine, FLUSH_PKT } from '../protocol/pktLine.js';
import { receivePackAdvertisement } from '../protocol/receivePackAdvertisement.js';
import type { RefValue } from '../protocol/refValue.js';
import { classifyUploadPackRequest, predictedPrefix } from '../protocol/uploadPackRequest.js';
import { Busy } from '../util/Busy.js';
import { onBodyError } from '../util/onBodyError.js';
import { readAll } from '../util/readAll.js';
import { RepoExists } from '../wal/errors.js';
import { emptyIndex } from '../wal/indexCodec.js';
import type { LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { NOT_STORED } from './cachePolicy.js';
import { type ChunkedPushNotes, isPushProbe } from './chunkedPushes.js';
import { errorResponse } from './errorResponse.js';
import { badRequest, forbidden, HttpError, notFound, payloadTooLarge } from './HttpError.js';
import type { MemoryBudget, Reservation } from './MemoryBudget.js';
import { type BodyPace, decodedBody } from './requestBody.js';
import type { TransferRouter } from './transferRouter.js';
import type { CoreRequest, CoreResponse } from './types.js';

export type GitService = 'git-upload-pack' | 'git-receive-pack';

/** How old an index this node confirmed may be to start a push's POST without reading it again. */
const PUSH_RECENT_MS = 5_000;

export interface GitRouteDeps extends Omit<ReceivePackDeps, 'logger'> {
  readonly wal: Wal;
  readonly cache: RepoCache;
  readonly git: GitRunner;
  readonly logger: Logger;
  readonly maxPushBytes: number;
  readonly maxFetchRequestBytes: number;
  /** Fetch requests read into memory, bounded across requests and per client. */
  readonly requestMemory: MemoryBudget;
  /** How a request body must keep arriving (else 408). */
  readonly bodyPace: BodyPace;
  /** The pack cache hook for upload-pack (packCacheHook.ts); null when turned off. */
  readonly packObjectsHook: string | null;
  /** The `agent=` of advertisements narwal writes itself: the server's git, e.g. `git/2.39.5`. */
  readonly gitAgent: string;
  /** Answers upload-pack gave about immutable states, for the same questions again. */
  readonly refAnswers: RefAnswers;
  /** Full clones being packed by this node's upload-packs, for identical ones to wait on. */
  readonly clonePacking: ClonePacking;
  /** Sends long transfers to the pool (on Lambda only; see transferRouter.ts). */
  readonly routeTransfer?: TransferRouter;
  /** Behind a gateway that refuses chunked requests: notes refused pushes (chunkedPushes.ts). */
  readonly chunkedPushes?: ChunkedPushNotes;
}

const NO_CACHE = NOT_STORED;

export async function infoRefs(
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
  if (service === 'git-receive-pack') {
    // Written from the index's refs: no generation, lease or git process before the push's POST.
    const loaded = await authorizePush(deps, repo, principal);
    const refs = loaded ? await deps.wal.allRefs(loaded.index) : new Map<string, RefValue>();
    return {
      status: 200,
      headers: { 'content-type': `application/x-${service}-advertisement`, ...NO_CACHE },
      body: Buffer.concat([
        encodePktLine(`# service=${service}\n`),
        FLUSH_PKT,
        receivePackAdvertisement(refs, { agent: deps.gitAgent, v1: wantsProtocolV1(protocol) }),
      ]),
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
  const target = loaded ? await targetFor(deps, loaded, at) : null;
  // In protocol v2 the server's first response is the capability advertisement itself, the same
  // for every repository; in v0 and v1 it is the refs of the state just read.
  const prefix = v2 ? Buffer.alloc(0) : Buffer.concat([encodePktLine(`# service=${service}\n`), FLUSH_PKT]);
  const headers = { 'content-type': `application/x-${service}-advertisement`, ...NO_CACHE };
  const key = RefAnswers.key(v2 ? null : target, 'advertise', protocol);
  const known = deps.refAnswers.get(key);
  if (known) return { status: 200, headers, body: Buffer.concat([prefix, known]) };
  // Advertising refs needs only the generation's refs, never its packs: a cold cache answers
  // after O(refs) work, and the download waits for the request that needs objects.
  const generation = target ? await deps.cache.leaseRefs(target) : null;
  const dir = generation ? generation.dir : await deps.cache.emptyRepo();
  const child = await spawnReleasing(
    deps.git,
    generation,
    [...uploadPackConfig(deps.packObjectsHook), 'upload-pack', '--stateless-rpc', '--advertise-refs', dir],
    { env: gitProtocolEnv(protocol), owner: slotOwner(principal, request) },
  );
  child.stdin?.end();
  const exit = childExit(child);
  void exit.then((e) => {
    void generation?.release();
    if (e.code !== 0)
      deps.logger.warn('advertisement failed', { repo, service, code: e.code, stderr: e.stderr });
  });
  // Read whole (refs checked) before any byte goes out; small either way.
  const answer = await checkedRefs(child, exit, v2 ? null : generation, 'upload-pack');
  deps.refAnswers.set(key, answer);
  return { status: 200, headers, body: Buffer.concat([prefix, answer]) };
}

/**
 * The output of a git child that lists a generation's refs, once it exits, checked against the
 * generation: a cache directory deleted while git read it leaves a directory with no packed-refs,
 * which git lists as no refs at all and exit 0, and a client would take that for the repository's
 * state. Ref listings are O(refs), so holding one whole is cheap.
 */
async function checkedRefs(
  child: ChildProcess,
  exit: Promise<ChildExit>,
  generation: Generation | null,
  service: string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = await exit;
  if (generation && !(await exists(join(generation.dir, 'packed-refs')))) throw cacheChanged();
  if (finished.code !== 0) throw gitRefused(service, finished.stderr);
  return Buffer.concat(chunks);
}

const cacheChanged = () =>
  new HttpError(503, 'narwal: the cache changed while the refs were read; retry', { 'retry-after': '1' });

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * A v2 ls-refs about `target`: the answer git gave to the same request about the same state, or
 * git's answer on a leased generation, whole once checked (see checkedRefs).
 */
async function lsRefs(
  deps: GitRouteDeps,
  target: CacheTarget,
  request: Buffer,
  options: { protocol: string | undefined; owner: string },
): Promise<CoreResponse> {
  const { protocol } = options;
  const key = RefAnswers.key(target, 'ls-refs', protocol, request);
  let refs = deps.refAnswers.get(key);
  if (refs === undefined) {
    const generation = await deps.cache.leaseRefs(target);
    const { child, exit } = await spawnUploadPack(deps, generation, options);
    child.stdin?.on('error', () => {});
    child.stdin?.end(request);
    refs = await checkedRefs(child, exit, generation, 'upload-pack');
    deps.refAnswers.set(key, refs);
  }
  return {
    status: 200,
    headers: { 'content-type': 'application/x-git-upload-pack-result', ...NO_CACHE },
    body: refs,
  };
}

export async function uploadPack(
  deps: GitRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
  at?: number,
): Promise<CoreResponse> {
  // The request bytes read into memory are charged to the node's budget until the answer is done.
  const memory = deps.requestMemory.reserve(slotOwner(principal, request));
  try {
    return releasedAfter(await answerFetch(deps, request, repo, principal, memory, at), memory);
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

async function answerFetch(
  deps: GitRouteDeps,
  request: CoreRequest,
  repo: string,
  principal: Principal | null,
  memory: Reservation,
  at?: number,
): Promise<CoreResponse> {
  requireContentType(request, 'application/x-git-upload-pack-request');
  const loaded = await authorizeRead(deps, repo, principal);
  if (loaded === null) throw notFound(`narwal: repository ${repo} not found`);
  const body = decodedBody(
    request,
    { maxBytes: deps.maxFetchRequestBytes, ...deps.bodyPace },
    'the fetch request',
  );
  const protocol = request.headers['git-protocol'];
  const owner = slotOwner(principal, request);
  const target = await targetFor(deps, loaded, at);
  const v2 = wantsProtocolV2(protocol);
  // A v2 request is small and may be ls-refs, whose answer is checked (checkedRefs).
  const early = v2 ? await readAll(body, memory) : null;
  if (early !== null && classifyUploadPackRequest(early, v2).command === 'ls-refs') {
    return lsRefs(deps, target, early, { protocol, owner });
  }
  const complete = await deps.cache.isComplete(target);
  if (complete && deps.packObjectsHook === null) {
    return startUploadPack(deps, await deps.cache.leaseComplete(target), early ? Readable.from([early]) : body, {
      protocol,
      owner,
    });
  }
  // The request is small: read it to learn what it needs.
  const bytes = early ?? (await readAll(body, memory));
  const clone = deps.packObjectsHook === null ? null : fullCloneOf(bytes, v2);
  const cloneEnv: Record<string, string> = clone ? { NARWAL_CLONE_KEY: clone.key } : {};
  if (complete) {
    const generation = await deps.cache.leaseComplete(target);
    const cached = clone ? await deps.clonePacking.open(generation.dir, clone) : { pack: null };
    if (clone && cached.pack) {
      return {
        status: 200,
        headers: { 'content-type': 'application/x-git-upload-pack-result', ...NO_CACHE },
        body: clonePackBody(clone, cached.pack, () => void generation.release()),
      };
    }
    try {
      return await startUploadPack(deps, generation, Readable.from([bytes]), {
        protocol,
        owner,
        env: cloneEnv,
        ...(cached.packing ? { packing: cached.packing } : {}),
      });
    } catch (error) {
      cached.packing?.(Promise.resolve());
      throw error;
    }
  }
  // The repository must be prepared first.
  const kind = classifyUploadPackRequest(bytes, v2);
  const refs = kind.wantRefs.length > 0 ? await target.refs() : new Map<string, RefValue>();
  const prefix = predictedPrefix(kind, v2, (ref) => refs.get(ref === 'HEAD' ? target.head : ref)?.oid);
  if (prefix === null) {
    return startUploadPack(deps, await deps.cache.leaseComplete(target), Readable.from([bytes]), {
      protocol,
      owner,
      env: cloneEnv,
    });
  }
  // git's answer starts with known bytes and then the sideband: answer at once and report the
  // preparation as progress, as git reports its own while it counts and compresses objects.
  const progress = new SidebandProgress(prefix);
  void (async () => {
    const generation = await deps.cache.leaseComplete(target, (message, final) => progress.progress(message, final));
    if (progress.closed) {
      await generation.release();
      return;
    }
    const { child } = await spawnUploadPack(deps, generation, { protocol, owner, env: cloneEnv });
    progress.body.once('close', () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(bytes);
    if (child.stdout) await progress.relay(child.stdout);
  })().catch((error: unknown) => {
    deps.logger.warn('fetch failed while preparing the repository', { repo, error: serializeError(error) });
    progress.fail(
      error instanceof Busy || error instanceof HttpError
        ? error.message
        : `narwal: the repository could not be prepared; retry the fetch (request ${request.requestId})`,
    );
  });
  return {
    status: 200,
    headers: { 'content-type': 'application/x-git-upload-pack-result', ...NO_CACHE },
    body: progress.body,
  };
}

/** Runs upload-pack on a leased generation, streaming its answer; the lease goes when git exits. */
async function startUploadPack(
  deps: GitRouteDeps,
  generation: Generation,
  body: Readable,
  options: UploadPackOptions,
): Promise<CoreResponse> {
  const { child, exit } = await spawnUploadPack(deps, generation, options);
  options.packing?.(exit);
  let inputError: Error | undefined;
  onBodyError(body, (error) => {
    inputError ??= error;
    child.kill('SIGKILL');
  });
  child.stdin?.on('error', () => {});
  body.pipe(child.stdin as NodeJS.WritableStream);
  const first = await firstOutput(child, exit);
  if (first.started && inputError === undefined) {
    return {
      status: 200,
      headers: { 'content-type': 'application/x-git-upload-pack-result', ...NO_CACHE },
      body: first.body,
    };
  }
  if (inputError) throw inputError;
  const finished = first.started ? await exit : first.exit;
  if (finished.code === 0) {
    return {
      status: 200,
      headers: { 'content-type': 'application/x-git-upload-pack-result', ...NO_CACHE },
      body: Buffer.alloc(0),
    };
  }
  throw gitRefused('upload-pack', finished.stderr);
}

export async function receivePack(
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
  // A new repository is created only when the push is about to change a ref: a refused push
  // (bad commands, a bad pack, invalid ref names) must leave nothing in the store.
  const outcome = await runReceivePack(deps, {
    repo,
    loaded: loaded ?? unbornIndex(repo),
    ...(loaded === null ? { create: () => createForPush(deps, repo) } : {}),
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
  });
  if (outcome.kind === 'stream') {
    return {
      status: 200,
      headers: { 'content-type': 'application/x-git-receive-pack-result', ...NO_CACHE },
      body: outcome.body,
    };
  }
  if (outcome.inputError) return errorResponse(outcome.inputError, request.requestId, deps.logger);
  if (outcome.exit.code === 0) {
    // git's probe POST (a lone flush-pkt) and empty requests get an empty answer.
    return {
      status: 200,
      headers: { 'content-type': 'application/x-git-receive-pack-result', ...NO_CACHE },
      body: Buffer.alloc(0),
    };
  }
  throw gitRefused('receive-pack', outcome.exit.stderr);
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

/** What a repository that does not exist yet looks like to receive-pack: no refs, no objects. */
function unbornIndex(repo: string): LoadedIndex {
  return { index: emptyIndex(repo, { public: false, now: new Date(0) }), etag: 'unborn' };
}

async function createForPush(deps: GitRouteDeps, repo: string): Promise<LoadedIndex> {
  try {
    const created = await deps.wal.createRepo(repo, { public: false });
    deps.logger.info('repository created by push', { repo });
    return created;
  } catch (error) {
    if (!(error instanceof RepoExists)) throw error;
    const loaded = await deps.wal.readIndex(repo);
    if (loaded === null) throw new HttpError(409, `narwal: repository ${repo} is being created; retry`);
    return loaded;
  }
}

interface UploadPackOptions {
  /** The client's `Git-Protocol` header. */
  readonly protocol: string | undefined;
  /** Whom the git slot is counted against (see slotOwner). */
  readonly owner: string;
  /** More environment: NARWAL_CLONE_KEY names a full clone's pack for the pack cache hook. */
  readonly env?: Record<string, string>;
  /** Told when upload-pack of a full clone starts, with its exit. */
  readonly packing?: (exit: Promise<unknown>) => void;
}

/** Starts upload-pack on a leased generation; the lease goes when git exits. */
async function spawnUploadPack(
  deps: GitRouteDeps,
  generation: Generation,
  options: UploadPackOptions,
): Promise<{ child: ChildProcess; exit: Promise<ChildExit> }> {
  // upload-pack runs the pack cache hook, if there is one, for what it packs.
  if (deps.packObjectsHook !== null)
    await deps.ensureHooks().catch(async (error: unknown) => {
      await generation.release();
      throw error;
    });
  const child = await spawnReleasing(
    deps.git,
    generation,
    [...uploadPackConfig(deps.packObjectsHook), 'upload-pack', '--stateless-rpc', generation.dir],
    { env: { ...gitProtocolEnv(options.protocol), ...options.env }, owner: options.owner },
  );
  const exit = childExit(child);
  void exit.then(() => generation.release());
  return { child, exit };
}

/** Spawns git for a leased generation, giving the lease back if git cannot even start. */
async function spawnReleasing(
  git: GitRunner,
  generation: Generation | null,
  args: string[],
  options: { env: Record<string, string>; owner: string },
): Promise<ChildProcess> {
  try {
    return await git.spawn(args, options);
  } catch (error) {
    await generation?.release();
    throw error;
  }
}

function requireContentType(request: CoreRequest, expected: string): void {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== expected) throw badRequest(`narwal: expected Content-Type ${expected}`);
}

function gitRefused(service: string, stderr: string): HttpError {
  const line = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .pop();
  return badRequest(`narwal: git ${service} refused the request${line ? `: ${line}` : ''}`);
}

/**
 * Whom a request's git processes are counted against, for the per-client share of the node's
 * slots: its token, or for an anonymous request (a public repository) the client's address.
 */
function slotOwner(principal: Principal | null, request: CoreRequest): string {
  if (principal !== null) return `token:${principal.tokenId ?? principal.name}`;
  return `address:${request.remoteAddress ?? 'unknown'}`;
}

/** The state a fetch reads: the current index, or the state after entry `at` (`REPO.git@SEQ`). */
function targetFor(deps: GitRouteDeps, loaded: LoadedIndex, at: number | undefined): Promise<CacheTarget> {
  return at === undefined ? Promise.resolve(deps.cache.target(loaded)) : deps.cache.targetAt(loaded, at);
}

function pastIsReadOnly(repo: string, at: number) {
  return forbidden(
    `narwal: ${repo}.git@${at} is the state after entry ${at} and is read-only; push to ${repo}.git`,
  );
}

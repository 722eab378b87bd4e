/**
 * The composition root: builds every adapter from the configuration, once, and wires them into the
 * core handler. Tests build apps with their own stores and directories through the same function.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { TokenStore } from './auth/TokenStore.js';
import { storedSigningKey, UrlSigner } from './auth/UrlSigner.js';
import { ObjectReaders } from './browse/ObjectReaders.js';
import { RepoBrowser } from './browse/RepoBrowser.js';
import { Checkpointer } from './cache/Checkpointer.js';
import { cachedRepositories, type SweepResult, sweepCache } from './cache/evict.js';
import { multiPackIndexer } from './cache/multiPackIndex.js';
import { claimNodeDir } from './cache/nodeDir.js';
import { inProcessPrewarm, type PrewarmTrigger, type PrewarmWork } from './cache/prewarmTrigger.js';
import { type CacheTarget, RepoCache } from './cache/RepoCache.js';
import type { Config } from './config.js';
import { createEventSinks } from './events/createEventSinks.js';
import { EventDispatcher, type SinkProgress } from './events/EventDispatcher.js';
import { ForkServer } from './git/ForkServer.js';
import { GitBudget } from './git/GitBudget.js';
import { GitRunner } from './git/GitRunner.js';
import { ensureHooks, HOOKS_VERSION, installHooks } from './git/hookScript.js';
import { directSpawner, type ProcessSpawner } from './git/ProcessSpawner.js';
import { ensurePackCacheHook, installPackCacheHook } from './git/packCacheHook.js';
import { ScratchRepos } from './git/scratchRepo.js';
import { History } from './history/History.js';
import { browsePageCache } from './http/browseRoutes.js';
import { ChunkedPushNotes } from './http/chunkedPushes.js';
import { createHandler } from './http/createHandler.js';
import { healthCheck } from './http/health.js';
import { MemoryBudget } from './http/MemoryBudget.js';
import { createTransferRouter } from './http/transferRouter.js';
import type { CoreHandler } from './http/types.js';
import { LfsLocks } from './lfs/LfsLocks.js';
import { LfsObjects } from './lfs/LfsObjects.js';
import { LfsPushCheck } from './lfs/pushCheck.js';
import { type Logger, serializeError } from './log.js';
import { createPresenceStore } from './presence/createPresenceStore.js';
import { SecretsManagerClients } from './secrets/configuredSecret.js';
import { fixedSecret, type Secret } from './secrets/Secret.js';
import { createObjectStore } from './store/createObjectStore.js';
import type { ObjectStore } from './store/ObjectStore.js';
import { type StoreSpanSink, TracingObjectStore } from './store/TracingObjectStore.js';
import { primeCapabilities } from './transfer/advertiseRefs.js';
import { ClonePacking } from './transfer/clonePack.js';
import { makePlansAhead } from './transfer/plansAhead.js';
import { RECEIVE_PACK_STDIO, receivePackArgs } from './transfer/receivePush.js';
import { StateAnswers } from './transfer/StateAnswers.js';
import { mapLimit } from './util/mapLimit.js';
import { Publisher } from './wal/Publisher.js';
import type { LoadedIndex } from './wal/types.js';
import { Wal } from './wal/Wal.js';

export interface App {
  readonly config: Config;
  readonly handler: CoreHandler;
  readonly store: ObjectStore;
  readonly wal: Wal;
  readonly publisher: Publisher;
  readonly cache: RepoCache;
  readonly tokens: TokenStore;
  /** The admin token: its value when the app started, and whether this start generated it. */
  readonly adminToken: { readonly value: string; readonly generated: boolean };
  readonly checkpointer: Checkpointer;
  /** Makes packfile-URI plans of a new state after a push (when packfile URIs are offered). */
  readonly plansAhead?: ((target: CacheTarget) => Promise<void>) | undefined;
  readonly history: History;
  /** Delivers events about published entries; null when no destination is configured. */
  readonly events: EventDispatcher | null;
  /** The fetch request bytes this node holds in memory (bounded in all and per client). */
  readonly requestMemory: MemoryBudget;
  /** The git processes this node runs at once (bounded in all and per client). */
  readonly gitBudget: GitBudget;
  /** Catches up event delivery for every repository in the cache (the periodic safety net). */
  catchUpEvents(): Promise<SinkProgress[]>;
  /** Prepares what the first repository page would wait for (a server calls it before it listens). */
  warmUp(): Promise<void>;
  /**
   * Asks git for the protocol v2 capability list once, so that no `info/refs` waits for a git
   * process (a serving node before it listens, a Lambda function in its init phase; a CLI command
   * that serves nothing does not). Never fails: the first `info/refs` asks git itself then.
   */
  primeTransfers(): Promise<void>;
  /** Evicts idle generations and repository caches from the shared cache. */
  sweep(): Promise<SweepResult>;
  /**
   * Resolves when no background work (prewarm, checkpoints) is running, and lets go of the leases
   * kept for requests to come (a Lambda sandbox is frozen after each request).
   */
  idle(): Promise<void>;
  /** Waits for background work, then removes this node's private directory. */
  close(): Promise<void>;
}

/**
 * Memory for answers git gave about ref states (transfer/StateAnswers.ts): 32 MiB holds the ref listings of
 * many repositories of thousands of refs; one of 100,000 refs (about 6 MiB) still fits.
 */
const REF_ANSWER_BYTES = 32 * 1024 ** 2;
/**
 * Memory for whole answers to repeatable fetches of states in use (a CI job's `--depth=1` or
 * `--filter=blob:none` checkout, say), each at most PACK_ANSWER_MAX_BYTES: a storm of identical
 * jobs is then answered with no file read and no lease per job. Larger answers stream from their
 * kept files.
 */
const PACK_ANSWER_BYTES = 32 * 1024 ** 2;
const PACK_ANSWER_MAX_BYTES = 4 * 1024 ** 2;
/** How long a full clone waits for this node's identical one to finish packing before packing itself. */
const CLONE_PACK_WAIT_MS = 30_000;

export interface AppOptions {
  readonly store?: ObjectStore;
  /** The Lambda client the prewarm trigger invokes with, when `config.prewarm.kind` is lambda. */
  readonly lambdaClient?: LambdaClient;
  /** The EventBridge client events are put with, when a bus is configured. */
  readonly eventBridgeClient?: EventBridgeClient;
  /** How git processes start, instead of the one `config.gitHelper` chooses. */
  readonly spawner?: ProcessSpawner;
}

export async function createApp(config: Config, logger: Logger, options: AppOptions = {}): Promise<App> {
  const trace = config.traceDir !== undefined ? await openTrace(config.traceDir) : undefined;
  const untraced =
    options.store ??
    (await createObjectStore(config, (fault, key) =>
      logger.warn('store fault injected', { op: fault.op, kind: fault.kind, applied: fault.applied, key }),
    ));
  const store = trace ? new TracingObjectStore(untraced, 'store', trace.sink) : untraced;
  const secrets = new SecretsManagerClients({
    region: config.awsRegion,
    endpoint: config.secretsManagerEndpoint,
  });
  const adminToken = await adminTokenOf(config, secrets);
  const home = join(config.dataDir, 'home');
  await mkdir(home, { recursive: true });
  const now = config.clockSkewMs === 0 ? Date.now : () => Date.now() + config.clockSkewMs;
  const node = await claimNodeDir({ cacheRoot: config.cacheDir, ttlMs: config.nodeTtlMs, now });
  // Asked at each use: the directory is this node's only while its record is live (nodeDir.ts).
  const scratchRoot = () => node.scratch();
  // Versioned: nodes of an older release share the data directory while they drain, and their
  // receive-packs run the hooks of their own release, which speak to them in their own way.
  const hooksDir = await installHooks(join(config.dataDir, 'hooks', HOOKS_VERSION));
  const packObjectsHook = config.packCache ? await installPackCacheHook(hooksDir) : null;
  // The data directory may lose them under a running node (deleted, cleaned): install them again.
  const ensureAllHooks = async () => {
    await Promise.all([
      ensureHooks(hooksDir),
      packObjectsHook === null ? undefined : ensurePackCacheHook(packObjectsHook),
    ]);
  };
  const wal = new Wal(store);
  const sinks = await createEventSinks(
    config.events,
    options.eventBridgeClient ? { eventBridgeClient: options.eventBridgeClient, secrets } : { secrets },
  );
  const events =
    sinks.length === 0
      ? null
      : new EventDispatcher({
          wal,
          store,
          sinks,
          logger,
          retry: {
            attempts: config.events.attempts,
            baseMs: config.events.backoffMs,
            capMs: config.events.backoffCapMs,
          },
        });
  // Events go out only after the CAS that published their entries succeeded.
  const publisher = new Publisher(wal, events ? { onPublished: (repo) => track(events.trigger(repo)) } : {});
  const presence = await createPresenceStore(config, now, trace?.sink);
  const leases = { presence, owner: node.id, ttlMs: config.leaseTtlMs, now };
  const gitBudget = new GitBudget(config.gitChildren, config.gitQueueMs, config.gitShare);
  const spawner = options.spawner ?? (config.gitHelper ? new ForkServer() : directSpawner);
  const git = new GitRunner({
    budget: gitBudget,
    home,
    spawner,
    ...(trace ? { trace2Dir: trace.gitDir } : {}),
  });
  // Each private repository a push will be received into comes with its receive-pack running.
  const scratchRepos = new ScratchRepos(scratchRoot, {
    startIn: (dir) =>
      git.startAhead([...receivePackArgs(hooksDir), dir], { cwd: dir, stdio: RECEIVE_PACK_STDIO }),
  });
  // `git version 2.39.5` -> `git/2.39.5`, as git's own advertisements say.
  const gitAgent = `git/${(await git.check(['--version'])).toString('utf8').trim().split(' ').pop()}`;
  const cache: RepoCache = new RepoCache({
    root: config.cacheDir,
    wal,
    leases,
    logger,
    indexPacks: multiPackIndexer({ git, gitDir: () => cache.emptyRepo(), logger }),
  });
  const checkpointer = new Checkpointer({
    wal,
    publisher,
    cache,
    git,
    leases,
    scratchRoot,
    logger,
    policy: { everyEntries: config.checkpointEveryEntries, everyBytes: config.checkpointEveryBytes },
  });
  const background = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    background.add(work);
    void work.finally(() => background.delete(work));
  };
  const plansAhead =
    config.packUriTtlSeconds > 0
      ? (target: CacheTarget) => makePlansAhead({ git, cache, logger }, target)
      : undefined;
  const prewarm = await createPrewarmTrigger(
    config,
    logger,
    { cache, checkpointer, plansAhead },
    options.lambdaClient,
  );
  // The next fetch will want the generation of this index: start building it now.
  const afterPublish = (repo: string, loaded: LoadedIndex) => track(prewarm.trigger(repo, loaded));
  const tokens = new TokenStore(store, adminToken.secret, { cacheMs: config.tokenCacheMs });
  const chunkedPushes =
    config.route?.chunkedPushes === 'pool'
      ? new ChunkedPushNotes({ presence, owner: node.id, now })
      : undefined;
  const history = new History({ wal, publisher, cache, git, afterPublish });
  const requestMemory = new MemoryBudget(config.fetchMemoryBytes, config.fetchMemoryShareBytes);
  // The repository pages: a cat-file per generation in use, parsed objects and rendered pages.
  const browse = new RepoBrowser({ wal, cache, readers: new ObjectReaders({ git, cache, logger }) });
  const lfs = new LfsObjects({
    store,
    maxObjectBytes: config.lfs.maxObjectBytes,
    urlTtlSeconds: config.lfs.urlTtlSeconds,
    presign: config.lfs.presign,
  });
  const refAnswers = new StateAnswers({ maxBytes: REF_ANSWER_BYTES });
  const handler = createHandler({
    browse,
    browsePages: browsePageCache(config.browseCacheBytes),
    history,
    wal,
    cache,
    git,
    publisher,
    store,
    tokens,
    logger,
    hooksDir,
    ensureHooks: ensureAllHooks,
    packObjectsHook,
    refAnswers,
    clonePacking: new ClonePacking({ maxWaitMs: CLONE_PACK_WAIT_MS }),
    packAnswers: new StateAnswers({ maxBytes: PACK_ANSWER_BYTES, maxAnswerBytes: PACK_ANSWER_MAX_BYTES }),
    ...(config.packUriTtlSeconds > 0
      ? {
          packUris: {
            signer: new UrlSigner({ key: storedSigningKey(store) }),
            ttlSeconds: config.packUriTtlSeconds,
            ...(store.presigner ? { presigner: store.presigner } : {}),
          },
        }
      : {}),
    gitAgent,
    scratchRoot,
    scratchRepos,
    afterPublish,
    background: track,
    maxPushBytes: config.maxPushBytes,
    maxFetchRequestBytes: config.maxFetchRequestBytes,
    requestMemory,
    bodyPace: { idleMs: config.bodyIdleMs, minBytesPerSecond: config.bodyMinRate },
    maxHeadBytes: 16 * 1024 * 1024,
    maxCommands: 100_000,
    publicUrl: config.publicUrl,
    health: healthCheck({ store, presence, cacheDir: config.cacheDir }),
    ...(chunkedPushes ? { chunkedPushes } : {}),
    allowedHosts: config.allowedHosts,
    lfs,
    pushObjects: new LfsPushCheck({ git, objects: lfs }),
    locks: new LfsLocks({ wal, publisher }),
    // Uploads and downloads narwal serves itself go where long transfers go.
    ...(config.route ? { lfsTransferBase: config.route.poolUrl } : {}),
    ...(config.route
      ? {
          routeTransfer: createTransferRouter({
            wal,
            logger,
            poolUrl: config.route.poolUrl,
            limits: { maxCloneBytes: config.route.maxCloneBytes, maxPushBytes: config.route.maxPushBytes },
            chunkedPushes,
          }),
        }
      : {}),
  });
  return {
    config,
    handler,
    store,
    wal,
    publisher,
    cache,
    tokens,
    adminToken,
    checkpointer,
    plansAhead,
    history,
    events,
    requestMemory,
    gitBudget,
    async catchUpEvents() {
      if (events === null) return [];
      const repos = await cachedRepositories(config.cacheDir);
      const progress = await mapLimit(repos, 4, (repo) =>
        events.catchUp(repo).catch((error: unknown) => {
          logger.warn('event catch-up skipped a repository', { repo, error: serializeError(error) });
          return [];
        }),
      );
      return progress.flat();
    },
    async primeTransfers() {
      await primeCapabilities({
        git,
        packObjectsHook,
        ensureHooks: ensureAllHooks,
        cache,
        wal,
        refAnswers,
        logger,
        gitAgent,
      }).catch((error: unknown) =>
        logger.warn('capability advertisement not primed', { error: serializeError(error) }),
      );
    },
    async warmUp() {
      // A courtesy to the first visitor, never a condition of starting: the shared cache may be
      // deleted under it, or the store be slow to answer, and the node must serve all the same.
      try {
        await browse.warmUp(git);
        // One request through the handler (anonymous, a page of a repository that is most likely
        // not there), so that the first real one does not compile routing, the index read and
        // the error page on its way.
        const response = await handler({
          method: 'GET',
          path: '/narwal-warm-up/none/-/tree/main',
          query: new URLSearchParams(),
          headers: { accept: 'text/html' },
          body: Readable.from([]),
          requestId: 'warm-up',
        });
        if (!Buffer.isBuffer(response.body)) response.body.destroy();
      } catch (error) {
        logger.warn('warm-up skipped', { error });
      }
    },
    async sweep() {
      const nodes = await node.sweep();
      if (nodes > 0) logger.info('node directories removed', { nodes });
      return sweepCache(config.cacheDir, leases, { idleMs: config.idleEvictMs, logger });
    },
    async idle() {
      while (background.size > 0) await Promise.allSettled([...background]);
      await scratchRepos.settled();
      await cache.releaseUnheldLeases();
    },
    async close() {
      browse.close();
      git.close();
      while (background.size > 0) await Promise.allSettled([...background]);
      await scratchRepos.settled({ stop: true });
      await cache.releaseUnheldLeases();
      await node.remove();
      await trace?.close();
      spawner.close();
    },
  };
}

/** In this process, or (on Lambda) by an asynchronous invocation of the prewarm function. */
async function createPrewarmTrigger(
  config: Config,
  logger: Logger,
  work: PrewarmWork,
  client: LambdaClient | undefined,
): Promise<PrewarmTrigger> {
  if (config.prewarm.kind === 'local') return inProcessPrewarm(work);
  const [{ LambdaClient }, { LambdaPrewarmTrigger }] = await Promise.all([
    import('@aws-sdk/client-lambda'),
    import('./lambda/LambdaPrewarmTrigger.js'),
  ]);
  return new LambdaPrewarmTrigger({
    client: client ?? new LambdaClient({ region: config.prewarm.region }),
    functionName: config.prewarm.functionName,
    logger,
  });
}

/** NARWAL_TRACE_DIR: store operations as JSON lines in `store-<pid>.jsonl`, git's trace2 under `git/`. */
async function openTrace(
  dir: string,
): Promise<{ sink: StoreSpanSink; gitDir: string; close(): Promise<void> }> {
  const gitDir = join(dir, 'git');
  await mkdir(gitDir, { recursive: true });
  const out = createWriteStream(join(dir, `store-${process.pid}.jsonl`), { flags: 'a' });
  return {
    sink: (span) => {
      out.write(`${JSON.stringify(span)}\n`);
    },
    gitDir,
    close: () => new Promise<void>((resolve) => out.end(resolve)),
  };
}

/**
 * The admin token as narwal checks it: from Secrets Manager (NARWAL_ADMIN_TOKEN_SECRET_ID, read at
 * start, so a deployment that cannot read it fails at once, and again as it rotates), or
 * NARWAL_ADMIN_TOKEN, or the one this data directory generated on its first start.
 */
export async function adminTokenOf(
  config: Config,
  secrets: SecretsManagerClients,
): Promise<{ secret: Secret; value: string; generated: boolean }> {
  if (config.adminTokenSecretId !== undefined) {
    const secret = await secrets.secret(config.adminTokenSecretId);
    return { secret, value: await secret.current(), generated: false };
  }
  const loaded = await loadAdminToken(config);
  return { secret: fixedSecret(loaded.value), ...loaded };
}

/** NARWAL_ADMIN_TOKEN, else the token this data directory generated on its first start. */
export async function loadAdminToken(config: Config): Promise<{ value: string; generated: boolean }> {
  if (config.adminToken) return { value: config.adminToken, generated: false };
  const path = join(config.dataDir, 'admin-token');
  const existing = await readFile(path, 'utf8').then(
    (t) => t.trim(),
    () => '',
  );
  if (existing !== '') return { value: existing, generated: false };
  await mkdir(config.dataDir, { recursive: true });
  const value = `nwl_${randomBytes(24).toString('base64url')}`;
  try {
    await writeFile(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
    return { value, generated: true };
  } catch {
    // Another process sharing this data directory generated it first.
    return { value: (await readFile(path, 'utf8')).trim(), generated: false };
  }
}

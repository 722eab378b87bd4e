/**
 * All configuration comes from the environment (and CLI flags that override it) through this one
 * typed module, which fails fast with a message naming the variable.
 */

import { totalmem } from 'node:os';
import { resolve } from 'node:path';
import { MIN_SECRET_LENGTH } from './auth/redact.js';
import type { EventsConfig } from './events/EventsConfig.js';
import { isLocalName, isPrivateAddress } from './events/privateAddress.js';
import type { ChunkedPushMode } from './http/chunkedPushes.js';
import type { PresenceConfig } from './presence/createPresenceStore.js';
import type { StoreConfig } from './store/createObjectStore.js';
import { type FaultRule, parseFaultSpec } from './store/faultSpec.js';

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly cacheDir: string;
  readonly store: StoreConfig;
  readonly presence: PresenceConfig;
  /** How long a read lease or the writer lock lives without renewal. */
  readonly leaseTtlMs: number;
  /**
   * How long a node's record vouches for its scratch directory in the shared cache without being
   * rewritten (lib/cache/nodeDir.ts): the directory of a node gone (or frozen) this long is removed.
   */
  readonly nodeTtlMs: number;
  /** Generations and repository caches unused this long are evicted. */
  readonly idleEvictMs: number;
  /**
   * Added to this node's clock wherever it stamps or checks presence records (leases, locks):
   * a fault-injection knob that makes one node's clock run ahead or behind the others'.
   */
  readonly clockSkewMs: number;
  /** The orphan sweep deletes unnamed store objects only once they are older than this. */
  readonly sweepRetentionMs: number;
  readonly checkpointEveryEntries: number;
  readonly checkpointEveryBytes: number;
  readonly storeLatencyMs: number;
  readonly storeFaults: readonly FaultRule[];
  readonly adminToken: string | undefined;
  /** The admin token's secret in AWS Secrets Manager (name or ARN), read at run time instead. */
  readonly adminTokenSecretId: string | undefined;
  /** Secrets Manager endpoint override (tests; a VPC endpoint needs none with private DNS). */
  readonly secretsManagerEndpoint: string | undefined;
  /** The region of AWS services read at run time (Secrets Manager). */
  readonly awsRegion: string;
  /** How long a node trusts a token record it read: revocation reaches every node within it. */
  readonly tokenCacheMs: number;
  readonly publicUrl: string | undefined;
  /** Without a public URL: the Host names links may use (else the address a request arrived on). */
  readonly allowedHosts: readonly string[];
  readonly maxPushBytes: number;
  readonly maxFetchRequestBytes: number;
  /** Fetch request bytes a node holds in memory at once, in all... */
  readonly fetchMemoryBytes: number;
  /** ...and for one client (a token, or an anonymous address). */
  readonly fetchMemoryShareBytes: number;
  /** A request's headers must arrive within this... */
  readonly headersTimeoutMs: number;
  /** ...the whole request within this... */
  readonly requestTimeoutMs: number;
  /** ...and its body may pause at most this long between two chunks (slow-loris uploads)... */
  readonly bodyIdleMs: number;
  /** ...and must arrive at least this fast (bytes/s) over each bodyIdleMs of waiting (0: any). */
  readonly bodyMinRate: number;
  /** Rendered repository pages a node keeps in memory (lib/http/browseRoutes.ts). */
  readonly browseCacheBytes: number;
  /** Git LFS (lib/lfs): the largest object accepted, and how the bytes move. */
  readonly lfs: LfsConfig;
  readonly gitChildren: number;
  /** How many of those one client (a token, or an anonymous address) may run at once. */
  readonly gitShare: number;
  readonly gitQueueMs: number;
  /**
   * Start git from a helper process (lib/git/ForkServer.ts), so that the node's own process never
   * forks; off, node's spawn forks it for each git process.
   */
  readonly gitHelper: boolean;
  /** Serve repeated full clones of a generation from the pack made for the first (on by default). */
  readonly packCache: boolean;
  /**
   * Offer protocol v2 `packfile-uris`: a full clone whose client accepts them gets stored packs as
   * URIs, valid this many seconds (0: not offered, and v2 capabilities are exactly git's).
   */
  readonly packUriTtlSeconds: number;
  readonly quiet: boolean;
  /**
   * Instrumentation, off unless set: every store operation is appended to `store-<pid>.jsonl`
   * here and git writes trace2 events under `git/` (benchmarks read them to profile a push).
   */
  readonly traceDir: string | undefined;
  /** Where long transfers go: set only on the Lambda functions, never on the pool itself. */
  readonly route: RouteConfig | null;
  /** How the next generation is built after a publish: in this process, or by the prewarm function. */
  readonly prewarm: { readonly kind: 'local' } | PrewarmLambdaConfig;
  /** Where events about published entries go, and how deliveries are retried. */
  readonly events: EventsConfig;
}

export interface LfsConfig {
  readonly maxObjectBytes: number;
  /** How long the actions of a batch answer (presigned URLs among them) may be used. */
  readonly urlTtlSeconds: number;
  /** With a store that presigns (S3), clients move the bytes to and from it themselves. */
  readonly presign: boolean;
}

export interface RouteConfig {
  /** Base URL of the pool of long-running servers, without a trailing slash. */
  readonly poolUrl: string;
  /** Clones and fetches of a repository whose estimated pack is larger go to the pool. */
  readonly maxCloneBytes: number;
  /** Pushes go to the pool when one of the repository's recent pushes was larger. */
  readonly maxPushBytes: number;
  /** What the gateway in front does with pushes git sends in chunks (lib/http/chunkedPushes.ts). */
  readonly chunkedPushes: ChunkedPushMode;
}

export interface PrewarmLambdaConfig {
  readonly kind: 'lambda';
  /** Name or ARN of the prewarm function, invoked asynchronously. */
  readonly functionName: string;
  readonly region: string;
}

export class ConfigError extends Error {
  readonly code = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(
  env: Env = process.env,
  overrides: { port?: number; host?: string; dataDir?: string; memoryBytes?: number } = {},
): Config {
  const dataDir = resolve(overrides.dataDir ?? optional(env, 'NARWAL_DATA') ?? '.narwal');
  const storeKind = optional(env, 'NARWAL_STORE') ?? 'fs';
  if (storeKind !== 'fs' && storeKind !== 's3')
    throw new ConfigError(`NARWAL_STORE must be "fs" or "s3", not ${JSON.stringify(storeKind)}`);
  const store =
    storeKind === 'fs'
      ? { kind: 'fs' as const, root: resolve(optional(env, 'NARWAL_STORE_DIR') ?? `${dataDir}/store`) }
      : {
          kind: 's3' as const,
          bucket: required(env, 'NARWAL_S3_BUCKET'),
          prefix: normalizePrefix(env.NARWAL_S3_PREFIX ?? ''),
          endpoint: env.NARWAL_S3_ENDPOINT,
          region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
          forcePathStyle: flag(env, 'NARWAL_S3_FORCE_PATH_STYLE', env.NARWAL_S3_ENDPOINT !== undefined),
        };
  let storeFaults: FaultRule[];
  try {
    storeFaults = parseFaultSpec(env.NARWAL_STORE_FAULTS ?? '');
  } catch (error) {
    throw new ConfigError(`NARWAL_STORE_FAULTS: ${(error as Error).message}`);
  }
  const presenceKind = optional(env, 'NARWAL_PRESENCE') ?? 'local';
  if (presenceKind !== 'local' && presenceKind !== 'dynamodb') {
    throw new ConfigError(
      `NARWAL_PRESENCE must be "local" or "dynamodb", not ${JSON.stringify(presenceKind)}`,
    );
  }
  const presence =
    presenceKind === 'local'
      ? { kind: 'local' as const }
      : {
          kind: 'dynamodb' as const,
          table: required(env, 'NARWAL_PRESENCE_TABLE'),
          region: optional(env, 'AWS_REGION') ?? optional(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
          endpoint: optional(env, 'NARWAL_DYNAMODB_ENDPOINT'),
        };
  const poolUrl = optional(env, 'NARWAL_POOL_URL');
  const route =
    poolUrl === undefined
      ? null
      : {
          poolUrl: baseUrl('NARWAL_POOL_URL', poolUrl),
          maxCloneBytes: integer(env, 'NARWAL_ROUTE_CLONE_BYTES', 4 * 1024 ** 2, 0, Number.MAX_SAFE_INTEGER),
          maxPushBytes: integer(env, 'NARWAL_ROUTE_PUSH_BYTES', 1024 ** 2, 0, Number.MAX_SAFE_INTEGER),
          chunkedPushes: chunkedPushMode(optional(env, 'NARWAL_CHUNKED_PUSHES') ?? 'accepted'),
        };
  // git follows the redirect with the credentials it holds: a server reached over HTTPS never
  // sends a client to plain HTTP.
  if (route?.poolUrl.startsWith('http:') && optional(env, 'NARWAL_PUBLIC_URL')?.startsWith('https:'))
    throw new ConfigError(
      'NARWAL_POOL_URL must be https:// when NARWAL_PUBLIC_URL is: tokens never travel in clear text',
    );
  const prewarmKind = optional(env, 'NARWAL_PREWARM') ?? 'local';
  if (prewarmKind !== 'local' && prewarmKind !== 'lambda')
    throw new ConfigError(`NARWAL_PREWARM must be "local" or "lambda", not ${JSON.stringify(prewarmKind)}`);
  const prewarm =
    prewarmKind === 'local'
      ? { kind: 'local' as const }
      : {
          kind: 'lambda' as const,
          functionName: required(env, 'NARWAL_PREWARM_FUNCTION'),
          region: optional(env, 'AWS_REGION') ?? optional(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
        };
  const fetchMemoryBytes = integer(
    env,
    'NARWAL_FETCH_MEMORY_BYTES',
    256 * 1024 ** 2,
    1024,
    Number.MAX_SAFE_INTEGER,
  );
  const gitChildren = integer(
    env,
    'NARWAL_GIT_CHILDREN',
    gitChildrenFor(overrides.memoryBytes ?? totalmem()),
    1,
    10_000,
  );
  return {
    route,
    prewarm,
    events: eventsConfig(env),
    presence,
    leaseTtlMs: integer(env, 'NARWAL_LEASE_TTL_MS', 60_000, 1_000, 3_600_000),
    nodeTtlMs: integer(env, 'NARWAL_NODE_TTL_MS', 10 * 60_000, 1_000, 24 * 3_600_000),
    idleEvictMs: integer(env, 'NARWAL_IDLE_EVICT_MS', 30 * 60_000, 1_000, 30 * 24 * 3_600_000),
    sweepRetentionMs: integer(env, 'NARWAL_SWEEP_RETENTION_MS', 24 * 3_600_000, 60_000, 365 * 24 * 3_600_000),
    clockSkewMs: signedInteger(env, 'NARWAL_CLOCK_SKEW_MS', 0, -3_600_000, 3_600_000),
    checkpointEveryEntries: integer(env, 'NARWAL_CHECKPOINT_EVERY', 100, 1, 1_000_000),
    checkpointEveryBytes: integer(
      env,
      'NARWAL_CHECKPOINT_BYTES',
      64 * 1024 ** 2,
      1024,
      Number.MAX_SAFE_INTEGER,
    ),
    host: overrides.host ?? optional(env, 'HOST') ?? '127.0.0.1',
    port: overrides.port ?? integer(env, 'PORT', 8080, 0, 65535),
    dataDir,
    cacheDir: resolve(optional(env, 'NARWAL_CACHE_DIR') ?? `${dataDir}/cache`),
    store,
    storeLatencyMs: integer(env, 'NARWAL_STORE_LATENCY_MS', 0, 0, 60_000),
    storeFaults,
    adminToken: adminToken(env),
    adminTokenSecretId: adminTokenSecretId(env),
    secretsManagerEndpoint: optional(env, 'NARWAL_SECRETS_MANAGER_ENDPOINT'),
    awsRegion: optional(env, 'AWS_REGION') ?? optional(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
    tokenCacheMs: integer(env, 'NARWAL_TOKEN_CACHE_MS', 5_000, 0, 300_000),
    publicUrl: env.NARWAL_PUBLIC_URL || undefined,
    allowedHosts: allowedHosts(env),
    maxPushBytes: integer(env, 'NARWAL_MAX_PUSH_BYTES', 2 * 1024 ** 3, 1024, Number.MAX_SAFE_INTEGER),
    maxFetchRequestBytes: integer(
      env,
      'NARWAL_MAX_FETCH_REQUEST_BYTES',
      64 * 1024 ** 2,
      1024,
      Number.MAX_SAFE_INTEGER,
    ),
    fetchMemoryBytes,
    fetchMemoryShareBytes: integer(
      env,
      'NARWAL_FETCH_MEMORY_SHARE_BYTES',
      Math.floor(fetchMemoryBytes / 2),
      1024,
      Number.MAX_SAFE_INTEGER,
    ),
    headersTimeoutMs: integer(env, 'NARWAL_HEADERS_TIMEOUT_MS', 30_000, 100, 3_600_000),
    requestTimeoutMs: integer(env, 'NARWAL_REQUEST_TIMEOUT_MS', 15 * 60_000, 100, 24 * 3_600_000),
    bodyIdleMs: integer(env, 'NARWAL_BODY_IDLE_MS', 30_000, 100, 3_600_000),
    bodyMinRate: integer(env, 'NARWAL_BODY_MIN_RATE', 1024, 0, 1024 ** 3),
    browseCacheBytes: integer(env, 'NARWAL_BROWSE_CACHE_BYTES', 64 * 1024 ** 2, 0, Number.MAX_SAFE_INTEGER),
    lfs: {
      // 5 GiB: the most one S3 PUT (a presigned upload) may carry.
      maxObjectBytes: integer(env, 'NARWAL_LFS_MAX_OBJECT_BYTES', 5 * 1024 ** 3, 1, 5 * 1024 ** 3),
      // S3 refuses presigned URLs valid for longer than 7 days.
      urlTtlSeconds: integer(env, 'NARWAL_LFS_URL_TTL_S', 3600, 60, 7 * 24 * 3600),
      presign: flag(env, 'NARWAL_LFS_PRESIGN', true),
    },
    gitChildren,
    gitShare: integer(env, 'NARWAL_GIT_SHARE', gitShareOf(gitChildren), 1, 10_000),
    // A saturated node refuses at once (503 + Retry-After) rather than queueing work it cannot start.
    gitQueueMs: integer(env, 'NARWAL_GIT_QUEUE_MS', 0, 0, 3_600_000),
    gitHelper: flag(env, 'NARWAL_GIT_HELPER', true),
    packCache: flag(env, 'NARWAL_PACK_CACHE', true),
    // S3 refuses presigned URLs valid for longer than 7 days.
    packUriTtlSeconds: integer(env, 'NARWAL_PACKFILE_URIS_TTL_S', 3600, 0, 7 * 24 * 3600),
    quiet: flag(env, 'NARWAL_QUIET', false),
    traceDir: optionalPath(env, 'NARWAL_TRACE_DIR'),
  };
}

/**
 * The default cap on git children, from the node's memory: a git child serving a clone of a
 * mid-sized project peaks near 26 MiB, so 96 MiB a slot leaves room for larger ones. A 2 GiB pool
 * instance runs 21, a 24 GiB machine 256; a burst of small pushes within that lands rather than
 * being refused.
 */
export function gitChildrenFor(memoryBytes: number): number {
  return Math.min(256, Math.max(8, Math.floor(memoryBytes / (96 * 1024 ** 2))));
}

/**
 * The default share of one client: three quarters of the git processes, at least one, so that a
 * quarter stays for everyone else whatever one token or address keeps open.
 */
export function gitShareOf(children: number): number {
  return Math.max(1, Math.floor((children * 3) / 4));
}

function eventsConfig(env: Env): EventsConfig {
  const url = optional(env, 'NARWAL_WEBHOOK_URL');
  let webhook: EventsConfig['webhook'] = null;
  if (url !== undefined) {
    const secretId = optional(env, 'NARWAL_WEBHOOK_SECRET_ID');
    const secret = secretId === undefined ? (env.NARWAL_WEBHOOK_SECRET ?? '') : undefined;
    if (secretId !== undefined && env.NARWAL_WEBHOOK_SECRET)
      throw new ConfigError('set NARWAL_WEBHOOK_SECRET or NARWAL_WEBHOOK_SECRET_ID, not both');
    if (secret !== undefined && (secret.length < MIN_SECRET_LENGTH || /\s/.test(secret)))
      throw new ConfigError(
        `NARWAL_WEBHOOK_SECRET must be set with NARWAL_WEBHOOK_URL: at least ${MIN_SECRET_LENGTH} characters, no spaces`,
      );
    const allowPrivate = flag(env, 'NARWAL_WEBHOOK_ALLOW_PRIVATE', false);
    webhook = {
      url: webhookUrl(url, allowPrivate),
      secret,
      secretId,
      timeoutMs: integer(env, 'NARWAL_WEBHOOK_TIMEOUT_MS', 10_000, 100, 300_000),
      allowPrivate,
    };
  }
  const bus = optional(env, 'NARWAL_EVENTBRIDGE_BUS');
  const eventBridge =
    bus === undefined
      ? null
      : {
          bus,
          source: optional(env, 'NARWAL_EVENTBRIDGE_SOURCE') ?? 'narwal',
          region: optional(env, 'AWS_REGION') ?? optional(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
          endpoint: optional(env, 'NARWAL_EVENTBRIDGE_ENDPOINT'),
        };
  return {
    webhook,
    eventBridge,
    attempts: integer(env, 'NARWAL_EVENTS_ATTEMPTS', 5, 1, 100),
    backoffMs: integer(env, 'NARWAL_EVENTS_BACKOFF_MS', 500, 1, 600_000),
    backoffCapMs: integer(env, 'NARWAL_EVENTS_BACKOFF_CAP_MS', 10_000, 1, 3_600_000),
    catchUpMs: integer(env, 'NARWAL_EVENTS_CATCHUP_MS', 60_000, 100, 24 * 3_600_000),
  };
}

/**
 * An absolute http(s) URL; credentials belong in the signature secret, not the URL. A host that is
 * a loopback, link-local or private address (however the URL spells it: the URL parser turns
 * `2130706433` or `0x7f.1` into 127.0.0.1) or a `localhost` name is refused unless allowed; other
 * names are checked against what they resolve to at each delivery (WebhookSink).
 */
function webhookUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('NARWAL_WEBHOOK_URL must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError('NARWAL_WEBHOOK_URL must be an absolute http(s) URL');
  if (url.username !== '' || url.password !== '')
    throw new ConfigError('NARWAL_WEBHOOK_URL must not carry credentials');
  if (!allowPrivate && (isPrivateAddress(url.hostname) || isLocalName(url.hostname)))
    throw new ConfigError(
      `NARWAL_WEBHOOK_URL points at a loopback, link-local or private address (${url.hostname}); set NARWAL_WEBHOOK_ALLOW_PRIVATE=true to allow it`,
    );
  return url.href;
}

/** `NARWAL_ALLOWED_HOSTS`: comma-separated `host` or `host:port` names, kept lower-case. */
function allowedHosts(env: Env): string[] {
  const raw = optional(env, 'NARWAL_ALLOWED_HOSTS');
  if (raw === undefined) return [];
  return raw.split(',').map((entry) => {
    const host = entry.trim().toLowerCase();
    if (!/^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/.test(host))
      throw new ConfigError(
        `NARWAL_ALLOWED_HOSTS: ${JSON.stringify(entry.trim())} is not a host or host:port`,
      );
    return host;
  });
}

/** Either the token itself or where to read it, not both: which one would count is not obvious. */
function adminTokenSecretId(env: Env): string | undefined {
  const id = optional(env, 'NARWAL_ADMIN_TOKEN_SECRET_ID');
  if (id !== undefined && env.NARWAL_ADMIN_TOKEN)
    throw new ConfigError('set NARWAL_ADMIN_TOKEN or NARWAL_ADMIN_TOKEN_SECRET_ID, not both');
  return id;
}

/** Long enough to be unguessable, and to be scrubbed from logs without eating ordinary text. */
function adminToken(env: Env): string | undefined {
  const value = env.NARWAL_ADMIN_TOKEN;
  if (!value) return undefined;
  if (value.length < MIN_SECRET_LENGTH || /\s/.test(value)) {
    throw new ConfigError(
      `NARWAL_ADMIN_TOKEN must be at least ${MIN_SECRET_LENGTH} characters with no spaces (got ${value.length})`,
    );
  }
  return value;
}

function optionalPath(env: Env, name: string): string | undefined {
  const value = optional(env, name);
  return value === undefined ? undefined : resolve(value);
}

/** An unset or empty variable is absent: `HOST=` must not mean "every interface". */
function optional(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new ConfigError(`${name} is required`);
  return value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

function signedInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^[-+]?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, not ${JSON.stringify(raw)}`);
}

/** An absolute http(s) URL with no query or fragment; a trailing slash is dropped. */
function baseUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, not ${JSON.stringify(raw)}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '')
    throw new ConfigError(`${name} must be an http(s) URL without a query, not ${JSON.stringify(raw)}`);
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${name} must not carry credentials`);
  return url.href.replace(/\/+$/, '');
}

/** `narwal` and `narwal/` both mean the folder narwal/. */
function normalizePrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

function chunkedPushMode(value: string): ChunkedPushMode {
  if (value === 'accepted' || value === 'pool') return value;
  throw new ConfigError(`NARWAL_CHUNKED_PUSHES must be "accepted" or "pool", not ${JSON.stringify(value)}`);
}

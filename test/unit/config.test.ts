import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, gitChildrenFor, loadConfig } from '../../lib/config.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('caps git children by memory, between 8 and 256', () => {
    expect(gitChildrenFor(512 * 1024 ** 2)).toBe(8);
    expect(gitChildrenFor(2 * 1024 ** 3)).toBe(21);
    expect(gitChildrenFor(24 * 1024 ** 3)).toBe(256);
    expect(loadConfig({ NARWAL_GIT_CHILDREN: '3' }).gitChildren).toBe(3);
  });

  it('has local defaults', () => {
    const data = join(process.cwd(), '.narwal');
    expect(loadConfig({}, { memoryBytes: 6 * 1024 ** 3 })).toEqual({
      host: '127.0.0.1',
      port: 8080,
      dataDir: data,
      cacheDir: join(data, 'cache'),
      store: { kind: 'fs', root: join(data, 'store') },
      storeLatencyMs: 0,
      storeFaults: [],
      adminToken: undefined,
      adminTokenSecretId: undefined,
      secretsManagerEndpoint: undefined,
      awsRegion: 'us-east-1',
      tokenCacheMs: 5_000,
      publicUrl: undefined,
      allowedHosts: [],
      maxPushBytes: 2 * 1024 ** 3,
      maxFetchRequestBytes: 64 * 1024 ** 2,
      fetchMemoryBytes: 256 * 1024 ** 2,
      fetchMemoryShareBytes: 128 * 1024 ** 2,
      headersTimeoutMs: 30_000,
      requestTimeoutMs: 15 * 60_000,
      bodyIdleMs: 30_000,
      bodyMinRate: 1024,
      browseCacheBytes: 64 * 1024 ** 2,
      lfs: { maxObjectBytes: 5 * 1024 ** 3, urlTtlSeconds: 3600, presign: true },
      gitChildren: 64,
      gitShare: 48,
      gitQueueMs: 0,
      gitHelper: true,
      packCache: true,
      packUriTtlSeconds: 3600,
      quiet: false,
      presence: { kind: 'local' },
      leaseTtlMs: 60_000,
      nodeTtlMs: 10 * 60_000,
      idleEvictMs: 30 * 60_000,
      clockSkewMs: 0,
      sweepRetentionMs: 86_400_000,
      checkpointEveryEntries: 100,
      checkpointEveryBytes: 64 * 1024 ** 2,
      route: null,
      prewarm: { kind: 'local' },
      events: {
        webhook: null,
        eventBridge: null,
        attempts: 5,
        backoffMs: 500,
        backoffCapMs: 10_000,
        catchUpMs: 60_000,
      },
    });
  });

  it('resolves directories to absolute paths', () => {
    const config = loadConfig({ NARWAL_DATA: 'rel/data', NARWAL_CACHE_DIR: '/abs/cache' });
    expect(config.dataDir).toBe(join(process.cwd(), 'rel/data'));
    expect(config.store).toEqual({ kind: 'fs', root: join(process.cwd(), 'rel/data/store') });
    expect(config.cacheDir).toBe('/abs/cache');
    expect(loadConfig({ NARWAL_STORE_DIR: 'st' }).store).toEqual({
      kind: 'fs',
      root: join(process.cwd(), 'st'),
    });
  });

  it('lets overrides win over the environment', () => {
    const config = loadConfig(
      { PORT: '9000', HOST: '0.0.0.0', NARWAL_DATA: '/env' },
      {
        port: 1234,
        host: '::1',
        dataDir: '/flag',
      },
    );
    expect(config.port).toBe(1234);
    expect(config.host).toBe('::1');
    expect(config.dataDir).toBe('/flag');
    expect(config.cacheDir).toBe('/flag/cache');
  });

  it('starts git from the helper process unless NARWAL_GIT_HELPER=0', () => {
    expect(loadConfig({}).gitHelper).toBe(true);
    expect(loadConfig({ NARWAL_GIT_HELPER: '0' }).gitHelper).toBe(false);
    expect(loadConfig({ NARWAL_GIT_HELPER: '1' }).gitHelper).toBe(true);
  });

  it('parses PORT', () => {
    expect(loadConfig({ PORT: '9000' }).port).toBe(9000);
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    expect(loadConfig({ PORT: '' }).port).toBe(8080);
  });

  it.each(['abc', '-1', '65536', '80.5', 'NaN'])('refuses PORT=%j naming the variable', (value) => {
    expect(configError({ PORT: value }).message).toBe(
      `PORT must be an integer between 0 and 65535, not ${JSON.stringify(value)}`,
    );
  });

  it('turns tracing on only when NARWAL_TRACE_DIR is set, as an absolute path', () => {
    expect(loadConfig({}).traceDir).toBeUndefined();
    expect(loadConfig({ NARWAL_TRACE_DIR: '' }).traceDir).toBeUndefined();
    expect(loadConfig({ NARWAL_TRACE_DIR: 'traces' }).traceDir).toBe(join(process.cwd(), 'traces'));
  });

  it('parses NARWAL_STORE_LATENCY_MS', () => {
    expect(loadConfig({ NARWAL_STORE_LATENCY_MS: '25' }).storeLatencyMs).toBe(25);
    expect(configError({ NARWAL_STORE_LATENCY_MS: '-5' }).message).toBe(
      'NARWAL_STORE_LATENCY_MS must be an integer between 0 and 60000, not "-5"',
    );
    expect(configError({ NARWAL_STORE_LATENCY_MS: 'slow' }).message).toMatch(
      /^NARWAL_STORE_LATENCY_MS must be/,
    );
    expect(configError({ NARWAL_STORE_LATENCY_MS: '60001' }).message).toMatch(
      /^NARWAL_STORE_LATENCY_MS must be/,
    );
  });

  it('parses NARWAL_STORE_FAULTS', () => {
    expect(loadConfig({ NARWAL_STORE_FAULTS: 'put409=0.05, get503applied=0.5' }).storeFaults).toEqual([
      { op: 'put', kind: '409', applied: false, rate: 0.05 },
      { op: 'get', kind: '503', applied: true, rate: 0.5 },
    ]);
    const error = configError({ NARWAL_STORE_FAULTS: 'put409=2' });
    expect(error.code).toBe('ConfigError');
    expect(error.message).toMatch(/^NARWAL_STORE_FAULTS: invalid fault rule "put409=2"/);
  });

  it('parses NARWAL_CLOCK_SKEW_MS, negative values included', () => {
    expect(loadConfig({}).clockSkewMs).toBe(0);
    expect(loadConfig({ NARWAL_CLOCK_SKEW_MS: '-45000' }).clockSkewMs).toBe(-45_000);
    expect(loadConfig({ NARWAL_CLOCK_SKEW_MS: '+90000' }).clockSkewMs).toBe(90_000);
    expect(configError({ NARWAL_CLOCK_SKEW_MS: '1.5' }).message).toMatch(/^NARWAL_CLOCK_SKEW_MS must be/);
    expect(configError({ NARWAL_CLOCK_SKEW_MS: '-3600001' }).message).toMatch(
      /^NARWAL_CLOCK_SKEW_MS must be/,
    );
  });

  it('reads the Git LFS settings and refuses objects over what one S3 PUT carries', () => {
    const lfs = loadConfig({
      NARWAL_LFS_MAX_OBJECT_BYTES: '1048576',
      NARWAL_LFS_URL_TTL_S: '600',
      NARWAL_LFS_PRESIGN: 'false',
    }).lfs;
    expect(lfs).toEqual({ maxObjectBytes: 1048576, urlTtlSeconds: 600, presign: false });
    expect(configError({ NARWAL_LFS_MAX_OBJECT_BYTES: String(5 * 1024 ** 3 + 1) }).message).toMatch(
      /^NARWAL_LFS_MAX_OBJECT_BYTES must be/,
    );
    expect(configError({ NARWAL_LFS_URL_TTL_S: String(8 * 24 * 3600) }).message).toMatch(
      /^NARWAL_LFS_URL_TTL_S must be/,
    );
  });

  it('refuses an unknown NARWAL_STORE', () => {
    expect(configError({ NARWAL_STORE: 'S3' }).message).toBe('NARWAL_STORE must be "fs" or "s3", not "S3"');
    expect(configError({ NARWAL_STORE: 'gcs' }).message).toBe('NARWAL_STORE must be "fs" or "s3", not "gcs"');
  });

  it('requires NARWAL_S3_BUCKET for the s3 store', () => {
    expect(configError({ NARWAL_STORE: 's3' }).message).toBe('NARWAL_S3_BUCKET is required');
    expect(configError({ NARWAL_STORE: 's3', NARWAL_S3_BUCKET: '' }).message).toBe(
      'NARWAL_S3_BUCKET is required',
    );
  });

  it('configures the s3 store', () => {
    expect(loadConfig({ NARWAL_STORE: 's3', NARWAL_S3_BUCKET: 'b' }).store).toEqual({
      kind: 's3',
      bucket: 'b',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
    });
    expect(
      loadConfig({
        NARWAL_STORE: 's3',
        NARWAL_S3_BUCKET: 'b',
        NARWAL_S3_ENDPOINT: 'http://127.0.0.1:9000',
        AWS_DEFAULT_REGION: 'eu-west-1',
      }).store,
    ).toEqual({
      kind: 's3',
      bucket: 'b',
      prefix: '',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
    const s3 = loadConfig({
      NARWAL_STORE: 's3',
      NARWAL_S3_BUCKET: 'b',
      NARWAL_S3_ENDPOINT: 'http://e',
      NARWAL_S3_FORCE_PATH_STYLE: 'off',
      AWS_REGION: 'ap-south-1',
      AWS_DEFAULT_REGION: 'eu-west-1',
    }).store;
    expect(s3).toMatchObject({ region: 'ap-south-1', forcePathStyle: false });
    expect(
      configError({ NARWAL_STORE: 's3', NARWAL_S3_BUCKET: 'b', NARWAL_S3_FORCE_PATH_STYLE: 'maybe' }).message,
    ).toBe('NARWAL_S3_FORCE_PATH_STYLE must be true or false, not "maybe"');
  });

  it.each([
    ['', ''],
    ['narwal', 'narwal/'],
    ['narwal/', 'narwal/'],
    ['/narwal/', 'narwal/'],
    ['narwal//', 'narwal/'],
    ['a/b', 'a/b/'],
    ['/', ''],
  ])('normalizes NARWAL_S3_PREFIX=%j to %j', (raw, prefix) => {
    expect(
      loadConfig({ NARWAL_STORE: 's3', NARWAL_S3_BUCKET: 'b', NARWAL_S3_PREFIX: raw }).store,
    ).toMatchObject({
      prefix,
    });
  });

  it('parses flags and optional strings', () => {
    const config = loadConfig({
      NARWAL_QUIET: 'YES',
      NARWAL_ADMIN_TOKEN: 'adm-0123456789abcdef',
      NARWAL_TOKEN_CACHE_MS: '0',
      NARWAL_PUBLIC_URL: 'https://git.example',
      NARWAL_GIT_CHILDREN: '4',
      NARWAL_GIT_QUEUE_MS: '0',
      NARWAL_BODY_MIN_RATE: '0',
    });
    expect(config).toMatchObject({
      quiet: true,
      adminToken: 'adm-0123456789abcdef',
      tokenCacheMs: 0,
      publicUrl: 'https://git.example',
      gitChildren: 4,
      gitShare: 3,
      gitQueueMs: 0,
      bodyMinRate: 0,
    });
    expect(loadConfig({ NARWAL_GIT_CHILDREN: '1' }).gitShare).toBe(1);
    expect(loadConfig({ NARWAL_GIT_CHILDREN: '21', NARWAL_GIT_SHARE: '21' }).gitShare).toBe(21);
    expect(loadConfig({ NARWAL_ALLOWED_HOSTS: ' Git.Example:8080 , [::1]:80,x ' }).allowedHosts).toEqual([
      'git.example:8080',
      '[::1]:80',
      'x',
    ]);
    expect(configError({ NARWAL_ALLOWED_HOSTS: 'a.example,http://b.example' }).message).toBe(
      'NARWAL_ALLOWED_HOSTS: "http://b.example" is not a host or host:port',
    );
    expect(configError({ NARWAL_GIT_SHARE: '0' }).message).toBe(
      'NARWAL_GIT_SHARE must be an integer between 1 and 10000, not "0"',
    );
    expect(loadConfig({ NARWAL_ADMIN_TOKEN: '', NARWAL_PUBLIC_URL: '' })).toMatchObject({
      adminToken: undefined,
      publicUrl: undefined,
    });
    expect(configError({ NARWAL_TOKEN_CACHE_MS: '300001' }).message).toBe(
      'NARWAL_TOKEN_CACHE_MS must be an integer between 0 and 300000, not "300001"',
    );
    expect(configError({ NARWAL_QUIET: '2' }).message).toBe('NARWAL_QUIET must be true or false, not "2"');
    expect(configError({ NARWAL_GIT_CHILDREN: '0' }).message).toBe(
      'NARWAL_GIT_CHILDREN must be an integer between 1 and 10000, not "0"',
    );
    expect(configError({ NARWAL_MAX_PUSH_BYTES: '10' }).message).toMatch(
      /^NARWAL_MAX_PUSH_BYTES must be an integer/,
    );
  });
});

describe('NARWAL_ADMIN_TOKEN', () => {
  it.each([
    ['short', 'adm'],
    ['15 characters', 'x'.repeat(15)],
    ['with a space', 'correct horse battery'],
  ])('is refused when %s', (_, value) => {
    expect(configError({ NARWAL_ADMIN_TOKEN: value }).message).toBe(
      `NARWAL_ADMIN_TOKEN must be at least 16 characters with no spaces (got ${value.length})`,
    );
  });

  it('never appears in the error message', () => {
    expect(configError({ NARWAL_ADMIN_TOKEN: 'secret-1 2' }).message).not.toContain('secret');
  });
});

describe('routing of long transfers', () => {
  it('routes nothing without NARWAL_POOL_URL', () => {
    expect(loadConfig({ NARWAL_ROUTE_CLONE_BYTES: '5' }).route).toBeNull();
    expect(loadConfig({ NARWAL_POOL_URL: '' }).route).toBeNull();
  });

  it('defaults the thresholds to a buffered Lambda response and git’s http.postBuffer', () => {
    expect(loadConfig({ NARWAL_POOL_URL: 'http://pool.example:8080/' }).route).toEqual({
      poolUrl: 'http://pool.example:8080',
      maxCloneBytes: 4 * 1024 ** 2,
      maxPushBytes: 1024 ** 2,
      chunkedPushes: 'accepted',
    });
  });

  it('reads what the gateway does with chunked pushes', () => {
    expect(
      loadConfig({ NARWAL_POOL_URL: 'http://p', NARWAL_CHUNKED_PUSHES: 'pool' }).route?.chunkedPushes,
    ).toBe('pool');
    expect(configError({ NARWAL_POOL_URL: 'http://p', NARWAL_CHUNKED_PUSHES: 'yes' }).message).toBe(
      'NARWAL_CHUNKED_PUSHES must be "accepted" or "pool", not "yes"',
    );
  });

  it('never redirects a client that came over HTTPS to plain HTTP', () => {
    expect(
      configError({ NARWAL_POOL_URL: 'http://pool.example', NARWAL_PUBLIC_URL: 'https://git.example' })
        .message,
    ).toBe('NARWAL_POOL_URL must be https:// when NARWAL_PUBLIC_URL is: tokens never travel in clear text');
    expect(
      loadConfig({ NARWAL_POOL_URL: 'https://pool.example', NARWAL_PUBLIC_URL: 'https://git.example' }).route
        ?.poolUrl,
    ).toBe('https://pool.example');
  });

  it('keeps a path prefix of the pool URL and reads both thresholds', () => {
    expect(
      loadConfig({
        NARWAL_POOL_URL: 'https://pool.example/git//',
        NARWAL_ROUTE_CLONE_BYTES: '104857600',
        NARWAL_ROUTE_PUSH_BYTES: '0',
      }).route,
    ).toEqual({
      poolUrl: 'https://pool.example/git',
      maxCloneBytes: 104_857_600,
      maxPushBytes: 0,
      chunkedPushes: 'accepted',
    });
  });

  it.each([
    ['pool.example', 'must be an http(s) URL, not "pool.example"'],
    ['ftp://pool.example', 'must be an http(s) URL without a query, not "ftp://pool.example"'],
    ['http://pool.example/?a=1', 'must be an http(s) URL without a query, not "http://pool.example/?a=1"'],
    ['http://pool.example/#x', 'must be an http(s) URL without a query, not "http://pool.example/#x"'],
    ['http://u:p@pool.example', 'must not carry credentials'],
  ])('refuses NARWAL_POOL_URL=%j', (value, message) => {
    expect(configError({ NARWAL_POOL_URL: value }).message).toBe(`NARWAL_POOL_URL ${message}`);
  });

  it('refuses thresholds that are not byte counts', () => {
    expect(configError({ NARWAL_POOL_URL: 'http://p', NARWAL_ROUTE_CLONE_BYTES: '4MB' }).message).toMatch(
      /^NARWAL_ROUTE_CLONE_BYTES must be an integer between 0 and/,
    );
    expect(configError({ NARWAL_POOL_URL: 'http://p', NARWAL_ROUTE_PUSH_BYTES: '-1' }).message).toMatch(
      /^NARWAL_ROUTE_PUSH_BYTES must be an integer between 0 and/,
    );
  });
});

describe('prewarm', () => {
  it('prewarms in this process by default', () => {
    expect(loadConfig({ NARWAL_PREWARM_FUNCTION: 'f' }).prewarm).toEqual({ kind: 'local' });
  });

  it('invokes the prewarm function when asked, in the configured region', () => {
    expect(
      loadConfig({
        NARWAL_PREWARM: 'lambda',
        NARWAL_PREWARM_FUNCTION: 'narwal-prewarm',
        AWS_REGION: 'eu-west-1',
      }).prewarm,
    ).toEqual({ kind: 'lambda', functionName: 'narwal-prewarm', region: 'eu-west-1' });
  });

  it('requires the function name and refuses unknown kinds', () => {
    expect(configError({ NARWAL_PREWARM: 'lambda' }).message).toBe('NARWAL_PREWARM_FUNCTION is required');
    expect(configError({ NARWAL_PREWARM: 'sqs' }).message).toBe(
      'NARWAL_PREWARM must be "local" or "lambda", not "sqs"',
    );
  });
});

describe('empty variables', () => {
  it('treats empty variables as unset', () => {
    const c = loadConfig({ HOST: '', NARWAL_DATA: '', NARWAL_STORE: '' });
    expect(c.host).toBe('127.0.0.1');
    expect(c.dataDir).toBe(join(process.cwd(), '.narwal'));
    expect(c.store.kind).toBe('fs');
  });

  it.each(['0x1F90', '1e3', '80.5'])('refuses PORT=%s', (port) => {
    expect(() => loadConfig({ PORT: port })).toThrow(/PORT must be an integer/);
  });
});

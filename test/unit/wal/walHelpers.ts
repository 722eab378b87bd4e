/**
 * Helpers for the log's unit tests: a temp-dir store, fake object ids, and small store wrappers
 * that count or route calls so a test can see (or fault) exactly the index compare-and-swap.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach } from 'vitest';
import { ZERO_OID } from '../../../lib/protocol/refValue.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type {
  GetOptions,
  HeadResult,
  ListPage,
  NotModified,
  ObjectInfo,
  ObjectStore,
  ObjectStream,
  PutBody,
  PutOptions,
  PutResult,
  PutStreamOptions,
  StoredObject,
  StreamOptions,
} from '../../../lib/store/ObjectStore.js';
import type { PushCommand, PushJob } from '../../../lib/wal/Publisher.js';

export { ZERO_OID };

/** A distinct fake 40-hex object id for each n >= 1. */
export function oid(n: number): string {
  if (n < 1) throw new Error('oid(n) needs n >= 1; use ZERO_OID for the zero id');
  return `c0ffee${n.toString(16).padStart(34, '0')}`;
}

/** A temp root per call, removed after the test that made it. */
export function useTempRoots(): () => Promise<string> {
  const roots: string[] = [];
  afterEach(async () => {
    await Promise.all(roots.splice(0).map((r) => rm(r, { recursive: true, force: true })));
  });
  return async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-wal-unit-'));
    roots.push(root);
    return root;
  };
}

export async function fsStore(makeRoot: () => Promise<string>): Promise<FsObjectStore> {
  return new FsObjectStore(await makeRoot());
}

export function push(repo: string, commands: PushCommand[], atomic = false): PushJob {
  return { repo, commands, atomic, who: { token: 't' }, packs: [] };
}

export const cmd = (ref: string, oldOid: string, newOid: string): PushCommand => ({ ref, oldOid, newOid });

export const isIndexKey = (key: string) => key.endsWith('/index.json');

/** Passes everything through; subclasses override what they watch. */
export class ForwardingStore implements ObjectStore {
  constructor(protected readonly inner: ObjectStore) {}
  get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    return this.inner.get(key, options);
  }
  getStream(key: string, options?: StreamOptions): Promise<ObjectStream> {
    return this.inner.getStream(key, options);
  }
  head(key: string): Promise<HeadResult> {
    return this.inner.head(key);
  }
  stat(key: string): Promise<ObjectInfo> {
    return this.inner.stat(key);
  }
  putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void> {
    return this.inner.putStream(key, body, options);
  }
  put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    return this.inner.put(key, body, options);
  }
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage> {
    return this.inner.list(prefix, options);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  renew(key: string): Promise<void> {
    return this.inner.renew(key);
  }
}

/** Counts puts per key. */
export class CountingStore extends ForwardingStore {
  readonly puts: { key: string; options: PutOptions | undefined }[] = [];
  override put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    this.puts.push({ key, options });
    return super.put(key, body, options);
  }
  indexCasCount(): number {
    return this.puts.filter((p) => isIndexKey(p.key) && p.options?.ifMatch !== undefined).length;
  }
}

/** Sends operations on keys matching `route` to `routed` (e.g. a faulty store), the rest to `inner`. */
export class RoutingStore extends ForwardingStore {
  constructor(
    inner: ObjectStore,
    private readonly routed: ObjectStore,
    private readonly route: (key: string) => boolean,
  ) {
    super(inner);
  }
  override get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    return this.route(key) ? this.routed.get(key, options) : super.get(key, options);
  }
  override head(key: string): Promise<HeadResult> {
    return this.route(key) ? this.routed.head(key) : super.head(key);
  }
  override put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    return this.route(key) ? this.routed.put(key, body, options) : super.put(key, body, options);
  }
}

/** A deterministic PRNG (mulberry32) for fault injection that does not depend on Math.random. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A `random` for FaultyObjectStore with rules that all have rate 0.5, in the given order: each
 * scripted step makes the next operation consulting the rules fail with rule `step` (its index),
 * or with none when `step` is null. Once the script runs out, nothing fails.
 */
export function scriptedFaults(ruleCount: number, steps: readonly (number | null)[]): () => number {
  const values: number[] = [];
  for (const step of steps) {
    if (step === null) for (let i = 0; i < ruleCount; i++) values.push(0.9);
    else {
      for (let i = 0; i < step; i++) values.push(0.9);
      values.push(0.1);
    }
  }
  return () => values.shift() ?? 0.9;
}

/** A ref map as plain `{ name: oid }`, for comparing with expected refs. */
export function oidsOf(refs: ReadonlyMap<string, { oid: string }>): Record<string, string> {
  return Object.fromEntries([...refs].map(([name, value]) => [name, value.oid]));
}

/**
 * Wraps a store with added latency and injected faults, for tests and benchmarks that need S3's
 * round trips and failure modes on one machine (`NARWAL_STORE_LATENCY_MS`, `NARWAL_STORE_FAULTS`).
 */
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConditionalConflict, PreconditionFailed, StoreUnavailable } from './errors.js';
import type { FaultRule } from './faultSpec.js';
import type {
  GetOptions,
  HeadResult,
  ListPage,
  NotModified,
  ObjectInfo,
  ObjectStore,
  ObjectStream,
  Presigner,
  PutBody,
  PutOptions,
  PutResult,
  PutStreamOptions,
  StoredObject,
  StreamOptions,
} from './ObjectStore.js';

export interface FaultOptions {
  readonly latencyMs: number;
  readonly faults: readonly FaultRule[];
  /** Injectable for deterministic tests. */
  readonly random?: () => number;
  /** Told of every fault injected, so a run can report how many it survived. */
  readonly onFault?: (fault: FaultRule, key: string) => void;
}

export class FaultyObjectStore implements ObjectStore {
  readonly #inner: ObjectStore;
  readonly #latencyMs: number;
  readonly #faults: readonly FaultRule[];
  readonly #random: () => number;
  readonly #onFault: ((fault: FaultRule, key: string) => void) | undefined;
  /** URLs involve no store round trip here; what a client does with them is between it and the store. */
  readonly presigner?: Presigner;

  constructor(inner: ObjectStore, options: FaultOptions) {
    this.#inner = inner;
    if (inner.presigner) this.presigner = inner.presigner;
    this.#latencyMs = options.latencyMs;
    this.#faults = options.faults;
    this.#random = options.random ?? Math.random;
    this.#onFault = options.onFault;
  }

  async get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    return this.#run('get', key, false, () => this.#inner.get(key, options));
  }

  async getStream(key: string, options?: StreamOptions): Promise<ObjectStream> {
    return this.#run('get', key, false, () => this.#inner.getStream(key, options));
  }

  async head(key: string): Promise<HeadResult> {
    return this.#run('head', key, false, () => this.#inner.head(key));
  }

  async stat(key: string): Promise<ObjectInfo> {
    return this.#run('head', key, false, () => this.#inner.stat(key));
  }

  async putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void> {
    return this.#run('put', key, options.ifNoneMatch !== undefined, () =>
      this.#inner.putStream(key, body, options),
    );
  }

  async put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    const conditional = options?.ifMatch !== undefined || options?.ifNoneMatch !== undefined;
    return this.#run('put', key, conditional, () => this.#inner.put(key, body, options));
  }

  async list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage> {
    return this.#run('list', prefix, false, () => this.#inner.list(prefix, options));
  }

  async renew(key: string): Promise<void> {
    return this.#run('put', key, false, () => this.#inner.renew(key));
  }

  async delete(key: string): Promise<void> {
    return this.#run('delete', key, false, () => this.#inner.delete(key));
  }

  async #run<T>(op: FaultRule['op'], key: string, conditional: boolean, call: () => Promise<T>): Promise<T> {
    if (this.#latencyMs > 0) await sleep(this.#latencyMs);
    const fault = this.#pick(op, conditional);
    if (fault === undefined) return call();
    this.#onFault?.(fault, key);
    if (fault.applied) {
      // The operation happens, but the caller hears a failure: outcome unknown.
      await call();
      throw new StoreUnavailable(key, `injected ${fault.kind} after the ${op} was applied`);
    }
    switch (fault.kind) {
      case '409':
        throw new ConditionalConflict(key);
      case '412':
        throw new PreconditionFailed(key);
      default:
        throw new StoreUnavailable(key, `injected ${fault.kind} on ${op}`);
    }
  }

  #pick(op: FaultRule['op'], conditional: boolean): FaultRule | undefined {
    for (const fault of this.#faults) {
      if (fault.op !== op) continue;
      // S3 only answers 409/412 to conditional writes; injecting them elsewhere would be a lie.
      if ((fault.kind === '409' || fault.kind === '412') && !conditional) continue;
      if (this.#random() < fault.rate) return fault;
    }
    return undefined;
  }
}

/**
 * Wraps a store and reports every operation - what, on which key, when it started, how long it
 * took, whether it failed - to a sink, so a benchmark can tell how many store round trips a push
 * or a fetch waits for (`NARWAL_TRACE_DIR`; off unless set).
 */
import type { Readable } from 'node:stream';
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

export interface StoreSpan {
  /** Which store: `store` (the log) or `presence` (leases and locks). */
  readonly store: string;
  readonly op: 'get' | 'getStream' | 'head' | 'stat' | 'put' | 'putStream' | 'renew' | 'list' | 'delete';
  readonly key: string;
  /** Start, in milliseconds since the epoch (fractional). */
  readonly start: number;
  readonly ms: number;
  /** The error's code when the operation failed (NotFound, PreconditionFailed, ...). */
  readonly error?: string;
  /** For a get: answered 304 Not Modified. */
  readonly notModified?: boolean;
  readonly conditional?: boolean;
}

export type StoreSpanSink = (span: StoreSpan) => void;

export class TracingObjectStore implements ObjectStore {
  readonly #inner: ObjectStore;
  readonly #name: string;
  readonly #sink: StoreSpanSink;
  readonly presigner?: Presigner;

  constructor(inner: ObjectStore, name: string, sink: StoreSpanSink) {
    this.#inner = inner;
    if (inner.presigner) this.presigner = inner.presigner;
    this.#name = name;
    this.#sink = sink;
  }

  get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    return this.#trace('get', key, options?.ifNoneMatch !== undefined, () => this.#inner.get(key, options));
  }

  getStream(key: string, options?: StreamOptions): Promise<ObjectStream> {
    return this.#trace('getStream', key, false, () => this.#inner.getStream(key, options));
  }

  head(key: string): Promise<HeadResult> {
    return this.#trace('head', key, false, () => this.#inner.head(key));
  }

  stat(key: string): Promise<ObjectInfo> {
    return this.#trace('stat', key, false, () => this.#inner.stat(key));
  }

  putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void> {
    return this.#trace('putStream', key, options.ifNoneMatch !== undefined, () =>
      this.#inner.putStream(key, body, options),
    );
  }

  put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    const conditional = options?.ifMatch !== undefined || options?.ifNoneMatch !== undefined;
    return this.#trace('put', key, conditional, () => this.#inner.put(key, body, options));
  }

  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage> {
    return this.#trace('list', prefix, false, () => this.#inner.list(prefix, options));
  }

  renew(key: string): Promise<void> {
    return this.#trace('renew', key, false, () => this.#inner.renew(key));
  }

  delete(key: string): Promise<void> {
    return this.#trace('delete', key, false, () => this.#inner.delete(key));
  }

  async #trace<T>(
    op: StoreSpan['op'],
    key: string,
    conditional: boolean,
    call: () => Promise<T>,
  ): Promise<T> {
    const start = performance.timeOrigin + performance.now();
    const span = (extra: Partial<StoreSpan>) =>
      this.#sink({
        store: this.#name,
        op,
        key,
        start,
        ms: performance.timeOrigin + performance.now() - start,
        ...(conditional ? { conditional } : {}),
        ...extra,
      });
    try {
      const result = await call();
      const notModified = (result as { notModified?: unknown } | undefined)?.notModified === true;
      span(notModified ? { notModified } : {});
      return result;
    } catch (error) {
      span({ error: (error as { code?: unknown }).code?.toString() ?? 'Error' });
      throw error;
    }
  }
}

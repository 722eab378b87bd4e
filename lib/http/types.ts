/**
 * The core handler's view of HTTP, independent of node:http and of API Gateway events: the local
 * server and the Lambda handlers are thin adapters to these.
 */
import type { Readable } from 'node:stream';

export interface CoreRequest {
  readonly method: string;
  /** Path without query, percent-decoding left to the router. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: Readable;
  readonly remoteAddress?: string;
  /** The address and port the request arrived on (this server's side of the connection). */
  readonly localAddress?: string;
  readonly localPort?: number;
  readonly requestId: string;
}

export interface CoreResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | Readable;
}

/**
 * A streamed body may take its chunks back once they are written (handed to the kernel) and
 * fill them again instead of allocating new ones: a clone answered from a file moves megabytes
 * per request, and fresh buffers for them cost more in garbage collection than the bytes cost to
 * copy. A writer that never gives chunks back (the Lambda adapters, tests) loses only the saving.
 */
export interface RecyclingBody {
  /** `chunk`, one this body gave out, has been written and will not be read again by the writer. */
  recycle(chunk: Buffer): void;
}

export function recycles(body: Readable): body is Readable & RecyclingBody {
  return typeof (body as Partial<RecyclingBody>).recycle === 'function';
}

export type CoreHandler = (request: CoreRequest) => Promise<CoreResponse>;

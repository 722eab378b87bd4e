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

export type CoreHandler = (request: CoreRequest) => Promise<CoreResponse>;

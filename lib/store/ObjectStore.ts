/**
 * The object store port: the only durable state narwal has. Adapters reproduce S3's semantics
 * for the operations narwal relies on:
 * - `put` with `ifNoneMatch: '*'` creates only; a key that exists fails with `PreconditionFailed`.
 * - `put` with `ifMatch: etag` replaces only that exact version; any other version (or a missing
 *   key) fails with `PreconditionFailed`; a conditional write that races another conditional write
 *   on the same key may fail with `ConditionalConflict` (S3's 409 ConditionalRequestConflict).
 * - reads are strongly consistent after a successful write.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 */
import type { Readable } from 'node:stream';

/** A body already on local disk: adapters stream or link it instead of loading it into memory. */
export interface FileBody {
  readonly path: string;
  readonly size: number;
}

export type PutBody = Buffer | FileBody;

export interface PutOptions {
  /** `'*'`: create only. */
  readonly ifNoneMatch?: '*';
  /** Replace only the version with this etag. */
  readonly ifMatch?: string;
  readonly contentType?: string;
}

export interface PutResult {
  readonly etag: string;
}

export interface GetOptions {
  /** When the current etag equals this one, answer `{ notModified: true }` without a body. */
  readonly ifNoneMatch?: string;
}

export interface StoredObject {
  readonly notModified: false;
  readonly body: Buffer;
  readonly etag: string;
}

export interface NotModified {
  readonly notModified: true;
  readonly etag: string;
}

export interface ObjectStream {
  readonly body: Readable;
  readonly size: number;
}

export interface HeadResult {
  readonly etag: string;
  readonly size: number;
  /** When the object was last written (milliseconds since the epoch): S3's Last-Modified. */
  readonly modified: number;
}

export interface ListPage {
  readonly keys: readonly string[];
  /** Pass back as `startAfter` for the next page; undefined on the last page. */
  readonly next?: string;
}

export interface ObjectStore {
  /** Reads a whole (small) object. Throws `NotFound`. */
  get(key: string, options?: GetOptions): Promise<StoredObject | NotModified>;
  /** Streams a (large) object. Throws `NotFound`. */
  getStream(key: string): Promise<ObjectStream>;
  /** Throws `NotFound`. */
  head(key: string): Promise<HeadResult>;
  put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult>;
  /** Keys under `prefix` in byte order, at most `limit` (default 1000) per page. */
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage>;
  /** Deleting a missing key succeeds, as in S3. */
  delete(key: string): Promise<void>;
}

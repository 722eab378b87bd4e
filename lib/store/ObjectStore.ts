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
  /**
   * The file is never written again (a pack git wrote): a store may keep it by reference rather
   * than copy it (the embedded store hard-links it when the file system allows).
   */
  readonly immutable?: boolean;
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
  /** The bytes `body` carries: the object's size, or the range's. */
  readonly size: number;
}

/** Bytes `start` to `end` (both included, as in HTTP's Range), or from `start` to the end. */
export interface ByteRange {
  readonly start: number;
  readonly end?: number;
}

export interface StreamOptions {
  /** Within the object (the caller checks it against `stat` first, as HTTP's 416 needs the size). */
  readonly range?: ByteRange;
}

/** What `stat` tells: enough to know an object is there, without reading it. */
export interface ObjectInfo {
  readonly size: number;
  /** When the object was last written (milliseconds since the epoch): S3's Last-Modified. */
  readonly modified: number;
}

export interface PutStreamOptions {
  /** The exact number of bytes the body must bring. */
  readonly size: number;
  /** The SHA-256 (64 lowercase hex digits) the body's bytes must have. */
  readonly sha256: string;
  /** `'*'`: create only. */
  readonly ifNoneMatch?: '*';
}

export interface PresignOptions {
  readonly method: 'GET' | 'PUT';
  readonly expiresInSeconds: number;
  /** PUT: the body's exact length (a signed Content-Length). */
  readonly size?: number;
  /**
   * PUT: the SHA-256 (hex) of the body, sent as a signed `x-amz-checksum-sha256`; the store
   * refuses other bytes only where `verifiesChecksums` says so.
   */
  readonly sha256?: string;
  /** PUT: create only (a signed `If-None-Match: *`). */
  readonly ifNoneMatch?: '*';
}

export interface PresignedRequest {
  readonly url: string;
  /** Headers the request must carry exactly so (they are signed). */
  readonly headers: Readonly<Record<string, string>>;
  readonly expiresAt: Date;
}

/**
 * URLs a client uses to move bytes to and from the store directly, without narwal in between
 * (S3's presigned URLs, Signature Version 4 in the query string:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html).
 */
export interface Presigner {
  presign(key: string, options: PresignOptions): Promise<PresignedRequest>;
  /**
   * Whether the store refuses a PUT whose bytes do not match its `x-amz-checksum-sha256` (AWS S3
   * does: https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html;
   * Ceph RGW 16 stores the bytes anyway). Learned once by a probe written at `probeKey`.
   */
  verifiesChecksums(probeKey: string): Promise<boolean>;
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
  /** Streams a (large) object, or a range of it. Throws `NotFound`. */
  getStream(key: string, options?: StreamOptions): Promise<ObjectStream>;
  /** Throws `NotFound`. */
  head(key: string): Promise<HeadResult>;
  /** Size and age only: unlike `head`, never reads the object (an embedded store hashes for etags). Throws `NotFound`. */
  stat(key: string): Promise<ObjectInfo>;
  put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult>;
  /**
   * Writes a (large) body as it arrives, never holding it whole, and stores it only when it
   * brought exactly `size` bytes whose SHA-256 is `sha256`: otherwise nothing is stored and it
   * throws `ContentMismatch`. The key is addressed by that content, so a write that races another
   * can only ever leave the same bytes there.
   */
  putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void>;
  /** Keys under `prefix` in byte order, at most `limit` (default 1000) per page. */
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage>;
  /** Deleting a missing key succeeds, as in S3. */
  delete(key: string): Promise<void>;
  /**
   * Makes an object young again (its modified time now), its bytes unchanged: an object the orphan
   * sweep would judge by its age is renewed before something names it again. Throws `NotFound`.
   */
  renew(key: string): Promise<void>;
  /** Present when clients can reach the store themselves (S3); absent for the embedded store. */
  readonly presigner?: Presigner;
}

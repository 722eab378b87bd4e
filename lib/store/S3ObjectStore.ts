/**
 * The object store port over S3 (AWS, or anything speaking its API with conditional writes,
 * such as Ceph RGW). Conditional writes:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 *
 * Etags handed to callers are S3's `ETag` header strings, quotes included.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { classifyS3Error } from './classifyS3Error.js';
import { isStoreError, PreconditionFailed, type StoreError, StoreUnavailable } from './errors.js';
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
import { S3Presigner } from './S3Presigner.js';
import { putStreamToS3 } from './s3PutStream.js';

export interface S3ObjectStoreOptions {
  /** Configured by the caller (region, endpoint, retries, timeouts); never created here. */
  readonly client: S3Client;
  readonly bucket: string;
  /** Prepended verbatim to every key (include a trailing `/` if you want one). */
  readonly prefix?: string;
}

export class S3ObjectStore implements ObjectStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  /**
   * Which spelling of an `If-Match` etag this endpoint last accepted. AWS documents the ETag as
   * returned (quoted, an RFC 9110 entity-tag); Ceph RGW 16.2 compares the raw header with its
   * unquoted etag, so there a quoted one always fails with 412 (checked on 16.2.15). `put` tries
   * both spellings, the remembered one first; a 412 means nothing was written, so the second try
   * is safe, and a real mismatch costs one extra request.
   */
  #unquotedIfMatchFirst = false;
  readonly presigner: Presigner;

  constructor({ client, bucket, prefix = '' }: S3ObjectStoreOptions) {
    this.#client = client;
    this.#bucket = bucket;
    this.#prefix = prefix;
    this.presigner = new S3Presigner({ client, bucket, prefix });
  }

  async get(key: string, options: GetOptions = {}): Promise<StoredObject | NotModified> {
    try {
      const res = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#bucket,
          Key: this.#prefix + key,
          IfNoneMatch: options.ifNoneMatch,
        }),
      );
      const bytes = await bodyOf(res, key).transformToByteArray();
      return {
        notModified: false,
        body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        etag: etagOf(res.ETag, key),
      };
    } catch (error) {
      // The SDK throws on 304 (no body, no error code); it carries the current ETag header.
      if (options.ifNoneMatch !== undefined && statusOf(error) === 304) {
        return { notModified: true, etag: etagHeaderOf(error) ?? options.ifNoneMatch };
      }
      throw isStoreError(error) ? error : classifyS3Error(error, key);
    }
  }

  async getStream(key: string, options?: StreamOptions): Promise<ObjectStream> {
    const range = options?.range;
    try {
      const res = await this.#client.send(
        new GetObjectCommand({
          Bucket: this.#bucket,
          Key: this.#prefix + key,
          ...(range ? { Range: `bytes=${range.start}-${range.end ?? ''}` } : {}),
        }),
      );
      return { body: readableOf(bodyOf(res, key), key), size: res.ContentLength ?? 0 };
    } catch (error) {
      throw isStoreError(error) ? error : classifyS3Error(error, key);
    }
  }

  async stat(key: string): Promise<ObjectInfo> {
    const { size, modified } = await this.head(key);
    return { size, modified };
  }

  async putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void> {
    await putStreamToS3(
      { client: this.#client, bucket: this.#bucket, key: this.#prefix + key, storeKey: key },
      body,
      options,
    );
  }

  async head(key: string): Promise<HeadResult> {
    try {
      const res = await this.#client.send(
        new HeadObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }),
      );
      return {
        etag: etagOf(res.ETag, key),
        size: res.ContentLength ?? 0,
        modified: res.LastModified?.getTime() ?? 0,
      };
    } catch (error) {
      throw isStoreError(error) ? error : classifyS3Error(error, key);
    }
  }

  async put(key: string, body: PutBody, options: PutOptions = {}): Promise<PutResult> {
    const { ifMatch, ifNoneMatch } = options;
    const conditional = ifMatch !== undefined || ifNoneMatch !== undefined;
    const spellings =
      ifMatch === undefined ? [undefined] : ifMatchSpellings(ifMatch, this.#unquotedIfMatchFirst);
    for (const [i, spelling] of spellings.entries()) {
      const last = i === spellings.length - 1;
      // A file body is streamed from disk with its length, never buffered; the SDK does not
      // retry a streamed body, so a fresh stream per attempt is all it needs.
      const payload = Buffer.isBuffer(body) ? body : createReadStream(body.path);
      try {
        const res = await this.#client.send(
          new PutObjectCommand({
            Bucket: this.#bucket,
            Key: this.#prefix + key,
            Body: payload,
            ContentLength: Buffer.isBuffer(body) ? body.length : body.size,
            ContentType: options.contentType,
            IfMatch: spelling,
            IfNoneMatch: ifNoneMatch,
          }),
        );
        if (spelling !== undefined) this.#unquotedIfMatchFirst = !spelling.startsWith('"');
        return { etag: etagOf(res.ETag, key) };
      } catch (error) {
        const failure = classifyS3Error(error, key, { ifMatch: ifMatch !== undefined });
        if (conditional && mayHaveLanded(error)) {
          const settled = await this.#settle(key, body, ifMatch, failure);
          if (settled !== undefined) return settled;
        }
        if (!last && statusOf(error) === 412) continue;
        throw failure;
      } finally {
        if (!Buffer.isBuffer(payload)) payload.destroy();
      }
    }
    throw new StoreUnavailable(key, `no If-Match spelling to send for ${key}`);
  }

  /**
   * Resolves a conditional put whose outcome is unknown by reading the key back (Ceph RGW answers
   * 500 ECANCELED to some losers of a write race; AWS documents 5xx as outcome unknown):
   * - our bytes are there: the write landed, answer with the stored etag;
   * - someone else's bytes are there (for `ifMatch`: any version but the expected one): the
   *   condition does not hold now, so throw `PreconditionFailed` (in the rare case where ours
   *   landed and was then replaced by a writer that had read it, the caller re-reads either way);
   * - nothing there, the expected version unchanged, or the read fails: still unknown, so return
   *   undefined and let the caller throw the original failure.
   * Identical bytes written by two writers cannot be told apart; both then see success.
   */
  async #settle(
    key: string,
    body: PutBody,
    ifMatch: string | undefined,
    failure: StoreError,
  ): Promise<PutResult | undefined> {
    let res: GetObjectCommandOutput;
    try {
      res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
    } catch {
      return undefined;
    }
    const etag = etagOf(res.ETag, key);
    const stored = readableOf(bodyOf(res, key), key);
    const unchanged = ifMatch !== undefined && bare(etag) === bare(ifMatch);
    if (unchanged || res.ContentLength !== (Buffer.isBuffer(body) ? body.length : body.size)) {
      stored.destroy();
      if (unchanged) return undefined;
      throw new PreconditionFailed(key, { cause: failure });
    }
    let ours: boolean;
    try {
      const local = Buffer.isBuffer(body) ? Readable.from([body]) : createReadStream(body.path);
      const [mine, theirs] = await Promise.all([digest(local), digest(stored)]);
      ours = mine === theirs;
    } catch {
      return undefined;
    }
    if (ours) return { etag };
    throw new PreconditionFailed(key, { cause: failure });
  }

  async list(prefix: string, options: { startAfter?: string; limit?: number } = {}): Promise<ListPage> {
    try {
      const res = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: this.#prefix + prefix,
          StartAfter: options.startAfter === undefined ? undefined : this.#prefix + options.startAfter,
          MaxKeys: options.limit ?? 1000,
        }),
      );
      const keys = (res.Contents ?? []).flatMap((o) =>
        o.Key === undefined ? [] : [o.Key.slice(this.#prefix.length)],
      );
      const next = res.IsTruncated ? keys.at(-1) : undefined;
      return next === undefined ? { keys } : { keys, next };
    } catch (error) {
      throw classifyS3Error(error, prefix);
    }
  }

  /**
   * A copy of the object onto itself, which S3 allows only when the metadata is replaced: the
   * bytes stay in the bucket and Last-Modified becomes now (5 GB at most in one copy, the most
   * narwal stores in one object). The content type is carried over.
   * https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html
   */
  async renew(key: string): Promise<void> {
    try {
      const head = await this.#client.send(
        new HeadObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }),
      );
      await this.#client.send(
        new CopyObjectCommand({
          Bucket: this.#bucket,
          Key: this.#prefix + key,
          CopySource: `${this.#bucket}/${encodeURIComponent(this.#prefix + key).replace(/%2F/g, '/')}`,
          MetadataDirective: 'REPLACE',
          ...(head.ContentType ? { ContentType: head.ContentType } : {}),
          Metadata: { ...head.Metadata, renewed: new Date().toISOString() },
        }),
      );
    } catch (error) {
      throw isStoreError(error) ? error : classifyS3Error(error, key);
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
    } catch (error) {
      const failure = classifyS3Error(error, key);
      // S3 answers 204 for a missing key; some S3-compatible stores answer 404 instead.
      if (failure.code !== 'NotFound') throw failure;
    }
  }
}

function ifMatchSpellings(etag: string, unquotedFirst: boolean): string[] {
  const unquoted = bare(etag);
  const quoted = `"${unquoted}"`;
  return unquotedFirst ? [unquoted, quoted] : [quoted, unquoted];
}

function bare(etag: string): string {
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}

function bodyOf(res: GetObjectCommandOutput, key: string): NonNullable<GetObjectCommandOutput['Body']> {
  if (res.Body === undefined) throw new StoreUnavailable(key, `S3 returned no body for ${key}`);
  return res.Body;
}

function readableOf(body: NonNullable<GetObjectCommandOutput['Body']>, key: string): Readable {
  if (!(body instanceof Readable)) throw new StoreUnavailable(key, `S3 body for ${key} is not a Node stream`);
  return body;
}

function etagOf(etag: string | undefined, key: string): string {
  if (etag === undefined) throw new StoreUnavailable(key, `S3 returned no ETag for ${key}`);
  return etag;
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/**
 * A 5xx, a timeout or a dropped connection leaves a write's outcome unknown; so does any answer
 * that came after the SDK retried one of those (the earlier attempt may have landed, and the
 * retry then fails its own condition against our write).
 */
function mayHaveLanded(error: unknown): boolean {
  const status = statusOf(error);
  const attempts = (error as { $metadata?: { attempts?: unknown } } | null)?.$metadata?.attempts;
  return status === undefined || status >= 500 || (typeof attempts === 'number' && attempts > 1);
}

/** The ETag header of the raw response the SDK keeps on its errors (a 304 has no other trace of it). */
function etagHeaderOf(error: unknown): string | undefined {
  const etag = (error as { $response?: { headers?: Record<string, unknown> } } | null)?.$response?.headers
    ?.etag;
  return typeof etag === 'string' ? etag : undefined;
}

async function digest(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

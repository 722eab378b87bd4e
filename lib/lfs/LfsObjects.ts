/**
 * Git LFS objects of a repository: which the store has, where a client sends and fetches their
 * bytes, and the checks that keep every stored object exactly the bytes its oid names.
 *
 * Where the bytes go:
 * - With a store that presigns (S3), clients move them to and from the bucket themselves. On a
 *   backend that checks `x-amz-checksum-sha256` (AWS S3) the upload goes straight to the object's
 *   key and S3 refuses other bytes. On one that does not (Ceph RGW 16) it goes to a key of its
 *   own under `incoming/`, and the object is stored - and listed as present - only once narwal has
 *   read it back and found its SHA-256 when the client calls the verify action.
 * - Otherwise (the embedded store, or presigning turned off) narwal serves the transfers itself:
 *   uploads are hashed while they are written and stored only if they match; downloads are
 *   streamed, with byte ranges so an interrupted one resumes.
 * Objects are created only once and never rewritten (their key is their content).
 *
 * The orphan sweep deletes an object no entry of the log points at once it is older than its
 * retention window (lib/wal/sweepOrphans.ts). Whenever narwal tells a client that an object is
 * already there - an upload it need not send, a push whose pointers it checked - an object older
 * than REFRESH_AFTER_MS is renewed first, as putImmutable renews a pack: so the object the client
 * relies on is young for a whole window, longer than the push that will name it takes.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { isStoreError } from '../store/errors.js';
import type { ByteRange, ObjectInfo, ObjectStore, ObjectStream, Presigner } from '../store/ObjectStore.js';
import { mapLimit } from '../util/mapLimit.js';
import { lfsChecksumProbeKey, lfsIncomingKey, lfsObjectKey } from '../wal/keys.js';
import { REFRESH_AFTER_MS } from '../wal/putImmutable.js';
import type { Action, BatchAnswer, BatchRequest, ObjectAnswer } from './batch.js';
import { LfsContentMismatch, LfsObjectMissing, LfsObjectTooLarge, LfsUploadMissing } from './errors.js';
import { isOid } from './pointer.js';

export interface LfsObjectsOptions {
  readonly store: ObjectStore;
  /** Larger objects are refused. */
  readonly maxObjectBytes: number;
  /** How long the actions of a batch answer may be used. */
  readonly urlTtlSeconds: number;
  /** Use the store's presigned URLs when it has them; false: narwal serves every transfer. */
  readonly presign: boolean;
  readonly now?: () => number;
}

/** Where narwal's own transfer routes are, and what a client must send to them. */
export interface TransferLinks {
  /** The base URL (no trailing slash). */
  readonly base: string;
  /** Headers each transfer to narwal needs: the caller's own credentials, if it sent any. */
  readonly headers: Readonly<Record<string, string>>;
}

export type ObjectState = 'present' | 'missing' | 'other size';

/** Stores looked at in parallel for one batch: 1,000 objects at 30 ms a round trip take ~0.5 s. */
const BATCH_CONCURRENCY = 64;

/** Upload ids (the key an unchecked upload lands at): 128 random bits in hex. */
const UPLOAD_ID = /^[0-9a-f]{32}$/;

export class LfsObjects {
  readonly #store: ObjectStore;
  readonly #options: LfsObjectsOptions;
  readonly #now: () => number;

  constructor(options: LfsObjectsOptions) {
    this.#store = options.store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get maxObjectBytes(): number {
    return this.#options.maxObjectBytes;
  }

  async batch(repo: string, request: BatchRequest, links: TransferLinks): Promise<BatchAnswer> {
    const objects = await mapLimit(
      request.objects,
      BATCH_CONCURRENCY,
      async (object): Promise<ObjectAnswer> => {
        const { oid, size } = object;
        const shown = {
          oid: typeof oid === 'string' ? oid : String(oid),
          size: typeof size === 'number' ? size : -1,
        };
        if (!isOid(oid))
          return {
            ...shown,
            error: { code: 422, message: 'the oid must be 64 lowercase hex digits (a SHA-256)' },
          };
        if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
          return { ...shown, error: { code: 422, message: 'the size must be a whole number of bytes' } };
        return request.operation === 'download'
          ? this.#downloadAnswer(repo, oid, size, links)
          : this.#uploadAnswer(repo, oid, size, links);
      },
    );
    return { transfer: 'basic', objects, hash_algo: 'sha256' };
  }

  /**
   * Whether the repository has the object, with that size. `renew`: a present object that is old
   * is made young again, because the caller is about to rely on it (see the module comment).
   */
  async state(repo: string, oid: string, size: number, options?: { renew?: boolean }): Promise<ObjectState> {
    const key = lfsObjectKey(repo, oid);
    try {
      const info = await this.#store.stat(key);
      if (info.size !== size) return 'other size';
      if (options?.renew) await this.#renewIfOld(key, info.modified);
      return 'present';
    } catch (error) {
      if (isStoreError(error, 'NotFound')) return 'missing';
      throw error;
    }
  }

  async #renewIfOld(key: string, modified: number): Promise<void> {
    if (this.#now() - modified > REFRESH_AFTER_MS) await this.#store.renew(key);
  }

  /**
   * Stores an upload narwal receives itself: hashed while written, kept only when it is `size`
   * bytes whose SHA-256 is `oid`. An object already stored is success (the same bytes).
   */
  async receive(repo: string, oid: string, size: number, body: Readable): Promise<void> {
    if (size > this.#options.maxObjectBytes) throw new LfsObjectTooLarge(size, this.#options.maxObjectBytes);
    try {
      await this.#store.putStream(lfsObjectKey(repo, oid), body, { size, sha256: oid, ifNoneMatch: '*' });
    } catch (error) {
      if (isStoreError(error, 'PreconditionFailed')) {
        await this.state(repo, oid, size, { renew: true });
        return;
      }
      if (isStoreError(error, 'ContentMismatch'))
        throw new LfsContentMismatch(`not stored: ${error.message.replace(/^\S+: /, '')}`);
      throw error;
    }
  }

  /** Size and age of a stored object; throws LfsObjectMissing. */
  async info(repo: string, oid: string): Promise<ObjectInfo> {
    try {
      return await this.#store.stat(lfsObjectKey(repo, oid));
    } catch (error) {
      if (isStoreError(error, 'NotFound')) throw new LfsObjectMissing(oid);
      throw error;
    }
  }

  /** The object's bytes, or a range of them (check it against `info` first). */
  async read(repo: string, oid: string, range?: ByteRange): Promise<ObjectStream> {
    try {
      return await this.#store.getStream(lfsObjectKey(repo, oid), range ? { range } : undefined);
    } catch (error) {
      if (isStoreError(error, 'NotFound')) throw new LfsObjectMissing(oid);
      throw error;
    }
  }

  /**
   * The verify action: the object is stored with this size. An upload that went to its own key
   * (a backend that checks no checksum) is read back and hashed as it is copied into place; one
   * that does not match is deleted and refused.
   */
  async verify(repo: string, oid: string, size: number, upload?: string): Promise<void> {
    const staged = upload === undefined ? undefined : lfsIncomingKey(repo, oid, upload);
    const state = await this.state(repo, oid, size, { renew: true });
    if (state === 'present') {
      if (staged !== undefined) await this.#store.delete(staged);
      return;
    }
    if (state === 'other size')
      throw new LfsContentMismatch(`the server has ${oid} with another size than ${size}`);
    if (staged === undefined) throw new LfsObjectMissing(oid);
    let stream: ObjectStream;
    try {
      stream = await this.#store.getStream(staged);
    } catch (error) {
      if (isStoreError(error, 'NotFound')) throw new LfsUploadMissing(oid);
      throw error;
    }
    try {
      await this.#store.putStream(lfsObjectKey(repo, oid), stream.body, {
        size,
        sha256: oid,
        ifNoneMatch: '*',
      });
    } catch (error) {
      if (isStoreError(error, 'ContentMismatch')) {
        await this.#store.delete(staged);
        throw new LfsContentMismatch(
          `the upload was not ${oid}: ${error.message.replace(/^\S+: /, '')}; it was discarded`,
        );
      }
      if (!isStoreError(error, 'PreconditionFailed')) throw error;
    } finally {
      stream.body.destroy();
    }
    await this.#store.delete(staged);
  }

  /** Whether an upload id is one this service hands out (it becomes part of a key). */
  static isUploadId(value: string): boolean {
    return UPLOAD_ID.test(value);
  }

  async #downloadAnswer(
    repo: string,
    oid: string,
    size: number,
    links: TransferLinks,
  ): Promise<ObjectAnswer> {
    const state = await this.state(repo, oid, size);
    if (state === 'missing')
      return { oid, size, error: { code: 404, message: `object ${oid} is not on the server` } };
    if (state === 'other size')
      return {
        oid,
        size,
        error: { code: 422, message: `the server has ${oid} with another size than ${size}` },
      };
    const presigner = this.#presigner();
    const download = presigner
      ? this.#presigned(
          await presigner.presign(lfsObjectKey(repo, oid), {
            method: 'GET',
            expiresInSeconds: this.#options.urlTtlSeconds,
          }),
        )
      : this.#own(`${objectsUrl(links, repo)}/${oid}`, links);
    return { oid, size, authenticated: true, actions: { download } };
  }

  async #uploadAnswer(repo: string, oid: string, size: number, links: TransferLinks): Promise<ObjectAnswer> {
    if (size > this.#options.maxObjectBytes)
      return {
        oid,
        size,
        error: { code: 422, message: new LfsObjectTooLarge(size, this.#options.maxObjectBytes).message },
      };
    const state = await this.state(repo, oid, size, { renew: true });
    if (state === 'present') return { oid, size };
    if (state === 'other size')
      return {
        oid,
        size,
        error: { code: 422, message: `the server has ${oid} with another size than ${size}` },
      };
    const verifyUrl = `${links.base}/${repo}.git/info/lfs/verify`;
    const presigner = this.#presigner();
    if (presigner === undefined) {
      return {
        oid,
        size,
        authenticated: true,
        actions: {
          upload: this.#own(`${objectsUrl(links, repo)}/${oid}?size=${size}`, links),
          verify: this.#own(verifyUrl, links),
        },
      };
    }
    const ttl = this.#options.urlTtlSeconds;
    if (await presigner.verifiesChecksums(lfsChecksumProbeKey(repo))) {
      const put = await presigner.presign(lfsObjectKey(repo, oid), {
        method: 'PUT',
        expiresInSeconds: ttl,
        size,
        sha256: oid,
        ifNoneMatch: '*',
      });
      return {
        oid,
        size,
        authenticated: true,
        actions: { upload: this.#presigned(put), verify: this.#own(verifyUrl, links) },
      };
    }
    const upload = randomBytes(16).toString('hex');
    const put = await presigner.presign(lfsIncomingKey(repo, oid, upload), {
      method: 'PUT',
      expiresInSeconds: ttl,
      size,
      ifNoneMatch: '*',
    });
    return {
      oid,
      size,
      authenticated: true,
      actions: { upload: this.#presigned(put), verify: this.#own(`${verifyUrl}?upload=${upload}`, links) },
    };
  }

  #presigner(): Presigner | undefined {
    return this.#options.presign ? this.#store.presigner : undefined;
  }

  #presigned(request: { url: string; headers: Readonly<Record<string, string>>; expiresAt: Date }): Action {
    return {
      href: request.url,
      ...(Object.keys(request.headers).length > 0 ? { header: request.headers } : {}),
      expires_in: Math.max(0, Math.floor((request.expiresAt.getTime() - this.#now()) / 1000)),
      expires_at: request.expiresAt.toISOString(),
    };
  }

  #own(href: string, links: TransferLinks): Action {
    const ttl = this.#options.urlTtlSeconds;
    return {
      href,
      ...(Object.keys(links.headers).length > 0 ? { header: links.headers } : {}),
      expires_in: ttl,
      expires_at: new Date(this.#now() + ttl * 1000).toISOString(),
    };
  }
}

const objectsUrl = (links: TransferLinks, repo: string) => `${links.base}/${repo}.git/info/lfs/objects`;

/**
 * Presigned S3 requests (Signature Version 4 in the query string), so a client moves an object's
 * bytes to and from the bucket itself:
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html
 *
 * A PUT signs what must hold for the bytes to be accepted: their length (`Content-Length`), that
 * the key is created only once (`If-None-Match: *`, a conditional write), and their SHA-256
 * (`x-amz-checksum-sha256`, kept a header rather than a query parameter so that S3 checks the body
 * against it: https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html).
 * A request without those exact headers fails the signature.
 */
import { createHash, randomBytes } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { classifyS3Error } from './classifyS3Error.js';
import type { PresignedRequest, Presigner, PresignOptions } from './ObjectStore.js';

export interface S3PresignerOptions {
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;
}

/** S3 refuses a presigned URL valid for longer than 7 days. */
const MAX_EXPIRY_SECONDS = 7 * 24 * 3600;

export class S3Presigner implements Presigner {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  #checksums: Promise<boolean> | undefined;

  constructor(options: S3PresignerOptions) {
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#prefix = options.prefix;
  }

  async presign(key: string, options: PresignOptions): Promise<PresignedRequest> {
    const expiresIn = Math.min(Math.max(1, Math.floor(options.expiresInSeconds)), MAX_EXPIRY_SECONDS);
    const expiresAt = new Date(Date.now() + expiresIn * 1000);
    const Key = this.#prefix + key;
    if (options.method === 'GET') {
      const url = await getSignedUrl(this.#client, new GetObjectCommand({ Bucket: this.#bucket, Key }), {
        expiresIn,
      });
      return { url, headers: {}, expiresAt };
    }
    const headers: Record<string, string> = {};
    const signed = new Set<string>();
    if (options.ifNoneMatch !== undefined) {
      headers['if-none-match'] = options.ifNoneMatch;
      signed.add('if-none-match');
    }
    if (options.size !== undefined) signed.add('content-length');
    const checksum =
      options.sha256 === undefined ? undefined : Buffer.from(options.sha256, 'hex').toString('base64');
    if (checksum !== undefined) {
      headers['x-amz-checksum-sha256'] = checksum;
      signed.add('x-amz-checksum-sha256');
    }
    const url = await getSignedUrl(
      this.#client,
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key,
        ...(options.size !== undefined ? { ContentLength: options.size } : {}),
        ...(checksum !== undefined ? { ChecksumSHA256: checksum } : {}),
        ...(options.ifNoneMatch !== undefined ? { IfNoneMatch: options.ifNoneMatch } : {}),
      }),
      { expiresIn, signableHeaders: signed, unhoistableHeaders: new Set(['x-amz-checksum-sha256']) },
    );
    return { url, headers, expiresAt };
  }

  /**
   * Puts a one-byte object with the checksum of another byte: a store that checks answers
   * BadDigest (400) and stores nothing; one that does not stores it, and the probe is deleted. The
   * answer is kept for the life of this process.
   */
  verifiesChecksums(probeKey: string): Promise<boolean> {
    this.#checksums ??= this.#probe(probeKey).catch((error: unknown) => {
      this.#checksums = undefined;
      throw error;
    });
    return this.#checksums;
  }

  async #probe(probeKey: string): Promise<boolean> {
    const Key = `${this.#prefix}${probeKey}-${randomBytes(6).toString('hex')}`;
    const wrong = Buffer.from('b');
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#bucket,
          Key,
          Body: Buffer.from('a'),
          ContentLength: 1,
          ChecksumSHA256: createHash('sha256').update(wrong).digest('base64'),
        }),
      );
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 400) return true;
      throw classifyS3Error(error, probeKey);
    }
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key })).catch(() => {});
    return false;
  }
}

/**
 * `putStream` on S3: the body is hashed as it goes up, and S3 is only told to make the object
 * visible once the hash and the size are right. A body of at most one part is read into memory
 * (8 MiB at most) and sent with one PutObject after the check; a larger one goes up as a multipart
 * upload whose parts stay invisible until CompleteMultipartUpload, which is sent only after the
 * check, and the upload is aborted otherwise. So nothing is ever stored that was not checked, on
 * backends that verify no checksum (Ceph RGW 16) as on AWS.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html
 *
 * `ifNoneMatch` is sent with the request that makes the object visible; AWS honours it there, and
 * Ceph RGW 16 ignores it on CompleteMultipartUpload, so the key is also checked beforehand. A race
 * that slips past both can only write the same bytes again: the key is addressed by the SHA-256.
 */
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { ContentCheck } from './ContentCheck.js';
import { classifyS3Error } from './classifyS3Error.js';
import { isStoreError, PreconditionFailed, StoreUnavailable } from './errors.js';
import type { PutStreamOptions } from './ObjectStore.js';

/** S3 parts are at least 5 MiB (but the last); 8 MiB keeps a 5 GiB object under 10,000 parts. */
export const PART_BYTES = 8 * 1024 * 1024;
/** Parts in flight at once: the body keeps arriving while one part goes up. */
const PARTS_IN_FLIGHT = 2;

export interface S3Target {
  readonly client: S3Client;
  readonly bucket: string;
  /** The key in the bucket (prefix included)... */
  readonly key: string;
  /** ...and as the store's callers name it, for errors. */
  readonly storeKey: string;
}

export async function putStreamToS3(
  target: S3Target,
  body: Readable,
  options: PutStreamOptions,
): Promise<void> {
  const check = new ContentCheck(target.storeKey, options);
  body.once('error', (error) => check.destroy(error));
  body.pipe(check);
  try {
    if (options.size <= PART_BYTES) {
      const parts: Buffer[] = [];
      for await (const part of partsOf(check, PART_BYTES)) parts.push(part);
      await send(target, async () => {
        await target.client.send(
          new PutObjectCommand({
            Bucket: target.bucket,
            Key: target.key,
            Body: Buffer.concat(parts),
            ContentLength: options.size,
            IfNoneMatch: options.ifNoneMatch,
          }),
        );
      });
      return;
    }
    if (options.ifNoneMatch === '*' && (await exists(target))) throw new PreconditionFailed(target.storeKey);
    await multipart(target, check, options);
  } finally {
    check.destroy();
    body.unpipe(check);
  }
}

async function multipart(target: S3Target, check: ContentCheck, options: PutStreamOptions): Promise<void> {
  const { UploadId } = await send(target, () =>
    target.client.send(new CreateMultipartUploadCommand({ Bucket: target.bucket, Key: target.key })),
  );
  if (UploadId === undefined) throw new StoreUnavailable(target.storeKey, 'S3 gave no multipart upload id');
  try {
    const done: { ETag: string; PartNumber: number }[] = [];
    const inFlight = new Set<Promise<void>>();
    let number = 0;
    for await (const part of partsOf(check, PART_BYTES)) {
      const PartNumber = ++number;
      const upload = send(target, async () => {
        const { ETag } = await target.client.send(
          new UploadPartCommand({
            Bucket: target.bucket,
            Key: target.key,
            UploadId,
            PartNumber,
            Body: part,
            ContentLength: part.length,
          }),
        );
        if (ETag === undefined)
          throw new StoreUnavailable(target.storeKey, `S3 gave no ETag for part ${PartNumber}`);
        done.push({ ETag, PartNumber });
      });
      const tracked = upload.finally(() => inFlight.delete(tracked));
      // A failed part is seen at the next await; until then it must not be an unhandled rejection.
      tracked.catch(() => {});
      inFlight.add(tracked);
      if (inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    await send(target, () =>
      target.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: target.bucket,
          Key: target.key,
          UploadId,
          MultipartUpload: { Parts: done.sort((a, b) => a.PartNumber - b.PartNumber) },
          IfNoneMatch: options.ifNoneMatch,
        }),
      ),
    );
  } catch (error) {
    await target.client
      .send(new AbortMultipartUploadCommand({ Bucket: target.bucket, Key: target.key, UploadId }))
      .catch(() => {});
    throw error;
  }
}

/** The body in parts of `size` bytes (the last may be shorter); fails as the body fails. */
async function* partsOf(body: Readable, size: number): AsyncGenerator<Buffer> {
  let part = Buffer.allocUnsafe(size);
  let filled = 0;
  for await (const chunk of body) {
    let data = chunk as Buffer;
    while (data.length > 0) {
      const n = Math.min(size - filled, data.length);
      data.copy(part, filled, 0, n);
      filled += n;
      data = data.subarray(n);
      if (filled === size) {
        yield part;
        part = Buffer.allocUnsafe(size);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield part.subarray(0, filled);
}

async function exists(target: S3Target): Promise<boolean> {
  try {
    await target.client.send(new HeadObjectCommand({ Bucket: target.bucket, Key: target.key }));
    return true;
  } catch (error) {
    const failure = classifyS3Error(error, target.storeKey);
    if (failure.code === 'NotFound') return false;
    throw failure;
  }
}

/** Runs one S3 request, translating what S3 answers into the store's errors. */
async function send<T>(target: S3Target, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (isStoreError(error)) throw error;
    throw classifyS3Error(error, target.storeKey);
  }
}

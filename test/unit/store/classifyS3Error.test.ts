import { Readable } from 'node:stream';
import {
  CompleteMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound as NotFoundException,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { classifyS3Error } from '../../../lib/store/classifyS3Error.js';
import {
  ConditionalConflict,
  NotFound,
  PreconditionFailed,
  type StoreError,
  StoreUnavailable,
} from '../../../lib/store/errors.js';
import { S3ObjectStore } from '../../../lib/store/S3ObjectStore.js';

/** An error shaped as the SDK v3 deserialiser throws it: name = S3 error code, plus $metadata. */
function s3Error(
  code: string,
  status: number | undefined,
  extra: { attempts?: number } = {},
): S3ServiceException {
  return new S3ServiceException({
    name: code,
    $fault: status !== undefined && status < 500 ? 'client' : 'server',
    $metadata: { httpStatusCode: status, ...extra },
    message: `${code} from S3`,
  });
}

function networkError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:443`), { code, errno: -104, syscall: 'read' });
}

async function failureOf(promise: Promise<unknown>): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    return error as StoreError;
  }
  throw new Error('expected a rejection');
}

function s3Body(text: string) {
  const bytes = Buffer.from(text);
  return Object.assign(Readable.from([bytes]), {
    transformToByteArray: async () => new Uint8Array(bytes),
    transformToString: async () => text,
    transformToWebStream: () => {
      throw new Error('not used');
    },
  });
}

describe('classifyS3Error', () => {
  const cases: Array<[string, unknown, new (...args: never[]) => StoreError]> = [
    ['412 PreconditionFailed', s3Error('PreconditionFailed', 412), PreconditionFailed],
    ['409 ConditionalRequestConflict', s3Error('ConditionalRequestConflict', 409), ConditionalConflict],
    ['409 OperationAborted', s3Error('OperationAborted', 409), ConditionalConflict],
    [
      '404 NoSuchKey (GetObject)',
      new NoSuchKey({ $metadata: { httpStatusCode: 404 }, message: 'gone' }),
      NotFound,
    ],
    [
      '404 NotFound (HeadObject)',
      new NotFoundException({ $metadata: { httpStatusCode: 404 }, message: '' }),
      NotFound,
    ],
    ['404 with an unmodelled name', s3Error('Unknown', 404), NotFound],
    ['412 with an unmodelled name', s3Error('Unknown', 412), PreconditionFailed],
    ['409 with an unmodelled name', s3Error('Unknown', 409), ConditionalConflict],
    [
      '404 NoSuchBucket (a deployment fault, not a missing key)',
      s3Error('NoSuchBucket', 404),
      StoreUnavailable,
    ],
    ['500 InternalError', s3Error('InternalError', 500), StoreUnavailable],
    ['500 UnknownError (Ceph RGW ECANCELED)', s3Error('UnknownError', 500), StoreUnavailable],
    ['503 SlowDown', s3Error('SlowDown', 503), StoreUnavailable],
    ['503 ServiceUnavailable', s3Error('ServiceUnavailable', 503), StoreUnavailable],
    ['403 AccessDenied', s3Error('AccessDenied', 403), StoreUnavailable],
    ['plain network error ECONNRESET', networkError('ECONNRESET'), StoreUnavailable],
    ['plain network error ETIMEDOUT', networkError('ETIMEDOUT'), StoreUnavailable],
    ['SDK TimeoutError', Object.assign(new Error('timed out'), { name: 'TimeoutError' }), StoreUnavailable],
    ['AbortError', Object.assign(new Error('aborted'), { name: 'AbortError' }), StoreUnavailable],
    ['a thrown string', 'boom', StoreUnavailable],
    ['undefined', undefined, StoreUnavailable],
    // CompleteMultipartUpload can carry an error inside a 200: the code decides, not the status.
    ['PreconditionFailed inside a 200', s3Error('PreconditionFailed', 200), PreconditionFailed],
    [
      'ConditionalRequestConflict inside a 200',
      s3Error('ConditionalRequestConflict', 200),
      ConditionalConflict,
    ],
    ['InternalError inside a 200', s3Error('InternalError', 200), StoreUnavailable],
    // ...and once the SDK's throw-200-exceptions middleware has rewritten that status to 503.
    [
      'PreconditionFailed inside a 200, rewritten to 503',
      s3Error('PreconditionFailed', 503),
      PreconditionFailed,
    ],
  ];

  it.each(cases)('%s', (_label, error, expected) => {
    const classified = classifyS3Error(error, 'refs/heads/main');
    expect(classified).toBeInstanceOf(expected);
    expect(classified.key).toBe('refs/heads/main');
    expect(classified.cause).toBe(error);
  });

  it('treats a 404 on an If-Match put as PreconditionFailed (AWS answers 404 for a missing key)', () => {
    expect(classifyS3Error(s3Error('NoSuchKey', 404), 'k', { ifMatch: true })).toBeInstanceOf(
      PreconditionFailed,
    );
    expect(classifyS3Error(s3Error('Unknown', 404), 'k', { ifMatch: true })).toBeInstanceOf(
      PreconditionFailed,
    );
  });

  it('names the code and status in the StoreUnavailable message', () => {
    expect(classifyS3Error(s3Error('SlowDown', 503), 'k').message).toBe(
      'S3 SlowDown, HTTP 503 for k: SlowDown from S3',
    );
    expect(classifyS3Error(networkError('ECONNRESET'), 'k').message).toContain('ECONNRESET');
  });

  it('classifies what the real SDK throws for an error inside a 200 CompleteMultipartUpload', async () => {
    const xml =
      '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
      '<Message>At least one of the pre-conditions you specified did not hold</Message></Error>';
    const client = new S3Client({
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 1,
      requestHandler: {
        handle: async () => ({
          response: { statusCode: 200, headers: {}, body: Readable.from([Buffer.from(xml)]) },
        }),
      } as never,
    });
    const error = await failureOf(
      client.send(
        new CompleteMultipartUploadCommand({ Bucket: 'b', Key: 'k', UploadId: 'u', IfNoneMatch: '*' }),
      ),
    );
    expect(error.name).toBe('PreconditionFailed');
    // The SDK rewrites the 200 to 503 today; the code must win whichever status arrives.
    expect([200, 503]).toContain(
      (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode,
    );
    expect(classifyS3Error(error, 'k')).toBeInstanceOf(PreconditionFailed);
  });
});

describe('S3ObjectStore error paths (mocked S3 client)', () => {
  const client = new S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
  const s3 = mockClient(client);
  const store = new S3ObjectStore({ client, bucket: 'bucket', prefix: 'p/' });
  beforeEach(() => s3.reset());

  it('maps 412 on a create-only put to PreconditionFailed, with the prefixed key sent', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('PreconditionFailed', 412));
    const failure = await failureOf(store.put('k', Buffer.from('x'), { ifNoneMatch: '*' }));
    expect(failure).toBeInstanceOf(PreconditionFailed);
    expect(failure.key).toBe('k');
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input).toMatchObject({
      Key: 'p/k',
      IfNoneMatch: '*',
    });
  });

  it('maps 409 ConditionalRequestConflict on a put to ConditionalConflict', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('ConditionalRequestConflict', 409));
    expect(await failureOf(store.put('k', Buffer.from('x'), { ifMatch: '"e1"' }))).toBeInstanceOf(
      ConditionalConflict,
    );
  });

  it('maps 404 on an If-Match put to PreconditionFailed', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('NoSuchKey', 404));
    expect(await failureOf(store.put('k', Buffer.from('x'), { ifMatch: '"e1"' }))).toBeInstanceOf(
      PreconditionFailed,
    );
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(1);
  });

  it('retries a 412 If-Match with the other etag spelling, and leads with the one that worked', async () => {
    s3.on(PutObjectCommand, { IfMatch: '"e1"' }).rejects(s3Error('PreconditionFailed', 412));
    s3.on(PutObjectCommand, { IfMatch: 'e1' }).resolves({ ETag: '"e2"' });
    const own = new S3ObjectStore({ client, bucket: 'bucket' });
    expect(await own.put('k', Buffer.from('x'), { ifMatch: '"e1"' })).toEqual({ etag: '"e2"' });
    expect(s3.commandCalls(PutObjectCommand).map((c) => c.args[0].input.IfMatch)).toEqual(['"e1"', 'e1']);
    await own.put('k', Buffer.from('x'), { ifMatch: '"e1"' });
    expect(s3.commandCalls(PutObjectCommand).map((c) => c.args[0].input.IfMatch)).toEqual([
      '"e1"',
      'e1',
      'e1',
    ]);
  });

  it('answers PreconditionFailed only after both spellings got 412', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('PreconditionFailed', 412));
    expect(await failureOf(store.put('k', Buffer.from('x'), { ifMatch: '"e1"' }))).toBeInstanceOf(
      PreconditionFailed,
    );
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(2);
  });

  it('maps 503 SlowDown on an unconditional put to StoreUnavailable without re-reading', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('SlowDown', 503));
    expect(await failureOf(store.put('k', Buffer.from('x')))).toBeInstanceOf(StoreUnavailable);
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
  });

  it('settles a 500 on a conditional put as success when our bytes landed', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('InternalError', 500));
    s3.on(GetObjectCommand).resolves({ Body: s3Body('mine') as never, ETag: '"m"', ContentLength: 4 });
    expect(await store.put('k', Buffer.from('mine'), { ifNoneMatch: '*' })).toEqual({ etag: '"m"' });
  });

  it('settles a 500 on a conditional put as PreconditionFailed when another writer landed', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('UnknownError', 500));
    s3.on(GetObjectCommand).resolves({ Body: s3Body('them') as never, ETag: '"t"', ContentLength: 4 });
    const failure = await failureOf(store.put('k', Buffer.from('mine'), { ifMatch: '"e1"' }));
    expect(failure).toBeInstanceOf(PreconditionFailed);
    expect(failure.cause).toBeInstanceOf(StoreUnavailable);
  });

  it('settles a 412 that followed an SDK retry by re-reading (the first attempt may have landed)', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('PreconditionFailed', 412, { attempts: 2 }));
    s3.on(GetObjectCommand).resolves({ Body: s3Body('mine') as never, ETag: '"m"', ContentLength: 4 });
    expect(await store.put('k', Buffer.from('mine'), { ifNoneMatch: '*' })).toEqual({ etag: '"m"' });
  });

  it('keeps a 500 on a conditional put as StoreUnavailable when the re-read cannot decide', async () => {
    s3.on(PutObjectCommand).rejects(s3Error('InternalError', 500));
    s3.on(GetObjectCommand).rejects(networkError('ECONNRESET'));
    expect(await failureOf(store.put('k', Buffer.from('mine'), { ifNoneMatch: '*' }))).toBeInstanceOf(
      StoreUnavailable,
    );
  });

  it('maps get errors and a 304', async () => {
    s3.on(GetObjectCommand, { IfNoneMatch: '"e1"' }).rejects(s3Error('Unknown', 304));
    s3.on(GetObjectCommand, { Key: 'p/missing' }).rejects(
      new NoSuchKey({ $metadata: { httpStatusCode: 404 }, message: '' }),
    );
    s3.on(HeadObjectCommand).rejects(networkError('ETIMEDOUT'));
    expect(await store.get('k', { ifNoneMatch: '"e1"' })).toEqual({ notModified: true, etag: '"e1"' });
    expect(await failureOf(store.get('missing'))).toBeInstanceOf(NotFound);
    expect(await failureOf(store.getStream('missing'))).toBeInstanceOf(NotFound);
    expect(await failureOf(store.head('k'))).toBeInstanceOf(StoreUnavailable);
  });

  it('pages lists with the last key and strips the prefix', async () => {
    s3.on(ListObjectsV2Command).resolves({
      Contents: [{ Key: 'p/a/1' }, { Key: 'p/a/2' }],
      IsTruncated: true,
    });
    expect(await store.list('a/', { startAfter: 'a/0', limit: 2 })).toEqual({
      keys: ['a/1', 'a/2'],
      next: 'a/2',
    });
    expect(s3.commandCalls(ListObjectsV2Command)[0]?.args[0].input).toMatchObject({
      Prefix: 'p/a/',
      StartAfter: 'p/a/0',
      MaxKeys: 2,
    });
  });

  it('treats a 404 on delete as success and a 500 as StoreUnavailable', async () => {
    s3.on(DeleteObjectCommand).rejectsOnce(s3Error('NoSuchKey', 404)).rejects(s3Error('InternalError', 500));
    await store.delete('k');
    expect(await failureOf(store.delete('k'))).toBeInstanceOf(StoreUnavailable);
  });
});

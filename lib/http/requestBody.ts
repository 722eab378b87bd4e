/**
 * The request body as git sent it: decompressed when gzip'd, cut off at a configured size, and
 * cut off when the client stops sending (a slow-loris upload must not hold a git process, its
 * slot and a read lease until the whole-request timeout).
 */
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { badRequest, HttpError, payloadTooLarge, requestTimeout, unsupportedMediaType } from './HttpError.js';
import type { CoreRequest } from './types.js';

export interface BodyLimits {
  readonly maxBytes: number;
  /** Longest pause allowed between two chunks while the server is waiting for the client. */
  readonly idleMs: number;
}

export function decodedBody(request: CoreRequest, limits: BodyLimits, what: string): Readable {
  const { maxBytes, idleMs } = limits;
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(what, maxBytes);
  const encoding = (request.headers['content-encoding'] ?? '').trim().toLowerCase();
  const gzip = encoding === 'gzip' || encoding === 'x-gzip';
  if (!gzip && encoding !== '' && encoding !== 'identity') {
    throw unsupportedMediaType(`narwal: unsupported Content-Encoding ${JSON.stringify(encoding)}`);
  }
  const idle = new IdleLimit(idleMs, () =>
    requestTimeout(`narwal: ${what} stalled: nothing arrived for ${idleMs / 1000} s; retry`),
  );
  const gunzip = gzip ? createGunzip() : undefined;
  const limit = new ByteLimit(maxBytes, () => tooLarge(what, maxBytes));
  const stages: Transform[] = [idle, ...(gunzip ? [gunzip] : []), limit];
  // The first failure of any stage (or of the request) ends the body with one error a client can
  // read; every stage listens, so none is left with an unhandled 'error'. The request itself is
  // not destroyed: its socket must stay open for the answer.
  let failed = false;
  const fail = (error: Error) => {
    if (failed) return;
    failed = true;
    request.body.unpipe(idle);
    for (const stage of stages) if (stage !== limit) stage.destroy();
    limit.destroy(error instanceof HttpError ? error : clientFacing(error, gunzip !== undefined, what));
  };
  request.body.on('error', fail);
  for (const stage of stages) stage.on('error', fail);
  let body: Readable = request.body;
  for (const stage of stages) body = body.pipe(stage);
  return limit;
}

/**
 * Calls `listener` with the body's error, also when the body failed before anyone listened: the
 * handler awaits the index and the cache before it reads, and a body can fail meanwhile (bad
 * gzip, a limit, a client gone). A listener attached late would wait forever, and git with it.
 */
export function onBodyError(body: Readable, listener: (error: Error) => void): void {
  const already = body.errored;
  if (already) queueMicrotask(() => listener(already));
  else body.once('error', listener);
}

/** zlib's errors (Z_DATA_ERROR...) mean the client sent bad gzip; anything else is passed on. */
function clientFacing(error: Error, gzip: boolean, what: string): Error {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  if (gzip && code.startsWith('Z_')) {
    return badRequest(`narwal: ${what} is not valid gzip data (it was sent with Content-Encoding: gzip)`);
  }
  return error;
}

function tooLarge(what: string, maxBytes: number) {
  return payloadTooLarge(`narwal: ${what} is larger than this server accepts (${maxBytes} bytes)`);
}

class ByteLimit extends Transform {
  #seen = 0;
  constructor(
    readonly max: number,
    readonly error: () => Error,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.max) callback(this.error());
    else callback(null, chunk);
  }
}

/**
 * Fails when no chunk arrives for `idleMs` while the reader downstream is asking for more: the
 * clock runs only while the server waits for the client, never while git (or the disk) is the
 * slow side and back-pressure holds the client.
 */
export class IdleLimit extends Transform {
  #timer: NodeJS.Timeout | undefined;
  #done = false;
  readonly #idleMs: number;
  readonly #error: () => Error;

  constructor(idleMs: number, error: () => Error) {
    super();
    this.#idleMs = idleMs;
    this.#error = error;
    this.#arm();
  }

  override _read(size: number): void {
    this.#arm();
    super._read(size);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#disarm();
    const wantsMore = this.push(chunk);
    callback();
    if (wantsMore) this.#arm();
  }

  override _flush(callback: TransformCallback): void {
    this.#done = true;
    this.#disarm();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#done = true;
    this.#disarm();
    callback(error);
  }

  #arm(): void {
    // Once the client has sent everything, only the server can be slow.
    if (this.#done || this.writableEnded || this.destroyed) return;
    this.#timer?.refresh();
    this.#timer ??= setTimeout(() => this.destroy(this.#error()), this.#idleMs);
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** A (bounded) body read whole. */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/**
 * The request body as git sent it: decompressed when gzip'd, cut off at a configured size, and
 * cut off when the client stops sending or sends too slowly (a slow-loris upload must not hold a
 * git process, its slot and a read lease until the whole-request timeout).
 */
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { badRequest, HttpError, payloadTooLarge, requestTimeout, unsupportedMediaType } from './HttpError.js';
import type { CoreRequest } from './types.js';

/** How a client must keep sending a body while the server waits for it. */
export interface BodyPace {
  /** Longest pause allowed between two chunks while the server is waiting for the client... */
  readonly idleMs: number;
  /** ...and the least rate, over each `idleMs` of such waiting (0: no minimum). */
  readonly minBytesPerSecond: number;
}

export interface BodyLimits extends BodyPace {
  readonly maxBytes: number;
  /** The clock the rate is measured with (milliseconds). */
  readonly now?: () => number;
}

export function decodedBody(request: CoreRequest, limits: BodyLimits, what: string): Readable {
  const { maxBytes, idleMs, minBytesPerSecond } = limits;
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(what, maxBytes);
  const encoding = (request.headers['content-encoding'] ?? '').trim().toLowerCase();
  const gzip = encoding === 'gzip' || encoding === 'x-gzip';
  if (!gzip && encoding !== '' && encoding !== 'identity') {
    throw unsupportedMediaType(`narwal: unsupported Content-Encoding ${JSON.stringify(encoding)}`);
  }
  const pace = new PaceLimit(
    { idleMs, minBytesPerSecond, now: limits.now ?? (() => performance.now()) },
    {
      stalled: () => requestTimeout(`narwal: ${what} stalled: nothing arrived for ${idleMs / 1000} s; retry`),
      slow: () =>
        requestTimeout(
          `narwal: ${what} arrived too slowly: less than ${minBytesPerSecond} bytes/s over ${idleMs / 1000} s; retry`,
        ),
    },
  );
  const gunzip = gzip ? createGunzip() : undefined;
  const limit = new ByteLimit(maxBytes, () => tooLarge(what, maxBytes));
  const stages: Transform[] = [pace, ...(gunzip ? [gunzip] : []), limit];
  // The first failure of any stage (or of the request) ends the body with one error a client can
  // read; every stage listens, so none is left with an unhandled 'error'. The request itself is
  // not destroyed: its socket must stay open for the answer.
  let failed = false;
  const fail = (error: Error) => {
    if (failed) return;
    failed = true;
    request.body.unpipe(pace);
    for (const stage of stages) if (stage !== limit) stage.destroy();
    limit.destroy(error instanceof HttpError ? error : clientFacing(error, gunzip !== undefined, what));
  };
  request.body.on('error', fail);
  for (const stage of stages) stage.on('error', fail);
  let body: Readable = request.body;
  for (const stage of stages) body = body.pipe(stage);
  return limit;
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
 * Fails when no chunk arrives for `idleMs` while the reader downstream is asking for more, or when
 * fewer than `minBytesPerSecond` arrive over a stretch of `idleMs` of such waiting: a client that
 * trickles a byte now and then, just under the idle bound, would otherwise hold a git process, its
 * slot and a read lease until the whole-request timeout. Both clocks run only while the server
 * waits for the client, never while git (or the disk) is the slow side and back-pressure holds
 * the client. Each stretch is judged on its own, so a fast start buys no later trickle.
 */
export class PaceLimit extends Transform {
  #timer: NodeJS.Timeout | undefined;
  #done = false;
  /** When the current wait for the client began; undefined while the server is not waiting. */
  #waitingSince: number | undefined;
  /** Waiting time and bytes of the stretch being measured. */
  #stretchMs = 0;
  #stretchBytes = 0;
  readonly #pace: BodyPace & { readonly now: () => number };
  readonly #errors: { readonly stalled: () => Error; readonly slow: () => Error };

  constructor(
    pace: BodyPace & { readonly now: () => number },
    errors: { readonly stalled: () => Error; readonly slow: () => Error },
  ) {
    super();
    this.#pace = pace;
    this.#errors = errors;
    this.#arm();
  }

  override _read(size: number): void {
    this.#arm();
    super._read(size);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#disarm();
    this.#stretchBytes += chunk.length;
    if (this.#tooSlow()) {
      callback(this.#errors.slow());
      return;
    }
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

  /** Judges a stretch once it holds `idleMs` of waiting, then starts the next one. */
  #tooSlow(): boolean {
    const { idleMs, minBytesPerSecond } = this.#pace;
    if (minBytesPerSecond === 0 || this.#stretchMs < idleMs) return false;
    const slow = this.#stretchBytes * 1000 < minBytesPerSecond * this.#stretchMs;
    this.#stretchMs = 0;
    this.#stretchBytes = 0;
    return slow;
  }

  #arm(): void {
    // Once the client has sent everything, only the server can be slow.
    if (this.#done || this.writableEnded || this.destroyed) return;
    this.#waitingSince ??= this.#pace.now();
    this.#timer?.refresh();
    this.#timer ??= setTimeout(() => this.destroy(this.#errors.stalled()), this.#pace.idleMs);
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#waitingSince !== undefined) {
      this.#stretchMs += this.#pace.now() - this.#waitingSince;
      this.#waitingSince = undefined;
    }
  }
}

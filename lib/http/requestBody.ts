/** The request body as git sent it: decompressed when gzip'd, cut off at a configured size. */
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { payloadTooLarge, unsupportedMediaType } from './HttpError.js';
import type { CoreRequest } from './types.js';

export function decodedBody(request: CoreRequest, maxBytes: number, what: string): Readable {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(what, maxBytes);
  const encoding = (request.headers['content-encoding'] ?? '').trim().toLowerCase();
  let body: Readable = request.body;
  if (encoding === 'gzip' || encoding === 'x-gzip') {
    const gunzip = createGunzip();
    body.once('error', (error) => gunzip.destroy(error));
    body = body.pipe(gunzip);
  } else if (encoding !== '' && encoding !== 'identity') {
    throw unsupportedMediaType(`narwal: unsupported Content-Encoding ${JSON.stringify(encoding)}`);
  }
  const limit = new ByteLimit(maxBytes, () => tooLarge(what, maxBytes));
  body.once('error', (error) => limit.destroy(error));
  return body.pipe(limit);
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

/** A (bounded) body read whole. */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

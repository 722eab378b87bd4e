/**
 * The core handler's response as a buffered Lambda proxy result: the body base64-encoded (API
 * Gateway decodes it for clients when binaryMediaTypes covers the response), the whole result
 * under Lambda's 6 MB response limit.
 *
 * A response that would not fit is never cut short: reading stops as soon as it cannot fit, the
 * body is destroyed (which stops git), and the client gets a 503 that says where to go instead.
 * Routing at info/refs keeps this from happening to clones it can foresee.
 */
import type { Readable } from 'node:stream';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { errorResponse } from '../../lib/http/errorResponse.js';
import { HttpError } from '../../lib/http/HttpError.js';
import { CLIENT_ROUTE_HEADER } from '../../lib/http/transferRoute.js';
import type { CoreResponse } from '../../lib/http/types.js';
import type { Logger } from '../../lib/log.js';
import { LAMBDA_BUFFERED_RESPONSE_LIMIT } from './lambdaLimits.js';

export interface BufferedOptions {
  readonly requestId: string;
  readonly logger: Logger;
  /** Where the client can go instead, for the message. */
  readonly poolUrl?: string;
  readonly limit?: number;
}

export async function toBufferedResult(
  response: CoreResponse,
  options: BufferedOptions,
): Promise<APIGatewayProxyResult> {
  const limit = options.limit ?? LAMBDA_BUFFERED_RESPONSE_LIMIT;
  const body = Buffer.isBuffer(response.body)
    ? response.body
    : await readUpTo(response.body, maxBodyBytes(limit));
  const result = body === null ? null : serialize(response, body);
  if (result !== null && Buffer.byteLength(JSON.stringify(result)) <= limit) return result;
  options.logger.error('response too large for Lambda', {
    requestId: options.requestId,
    status: response.status,
  });
  const where = options.poolUrl
    ? `the pool at ${options.poolUrl}, or ask for it with: git -c http.extraHeader="${CLIENT_ROUTE_HEADER}: pool"`
    : 'a narwal server outside Lambda';
  const tooLarge = new HttpError(
    503,
    `narwal: this response is larger than a Lambda function can return; use ${where}`,
  );
  return serialize(errorResponse(tooLarge, options.requestId, options.logger), null);
}

function serialize(response: CoreResponse, body: Buffer | null): APIGatewayProxyResult {
  const bytes = body ?? (Buffer.isBuffer(response.body) ? response.body : Buffer.alloc(0));
  return {
    statusCode: response.status,
    headers: { ...response.headers },
    body: bytes.toString('base64'),
    isBase64Encoded: true,
  };
}

/** The most body bytes whose base64 can fit in `limit` at all. */
function maxBodyBytes(limit: number): number {
  return Math.floor((limit / 4) * 3);
}

/** The whole stream, or null (and the stream destroyed) once it exceeds `max` bytes. */
async function readUpTo(stream: Readable, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size > max) {
      stream.destroy();
      return null;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

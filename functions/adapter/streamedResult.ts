/**
 * The core handler's response as middy's streamed result: status and headers become the metadata
 * prelude of the HTTP integration response (awslambda.HttpResponseStream), the body is piped
 * after it as it is produced, so a pack is never held in memory and may exceed the buffered 6 MB.
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html
 *
 * The runtime writes the prelude on the stream's first write and never on a bare end(), so an
 * empty body would leave API Gateway without a status: every body starts with an empty chunk
 * (the stream is in object mode, so the empty chunk is a write of its own).
 */
import { Readable } from 'node:stream';
import type { CoreResponse } from '../../lib/http/types.js';

export interface StreamedResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: Readable;
}

export function toStreamedResult(response: CoreResponse, method: string): StreamedResult {
  const source = response.body;
  if (method === 'HEAD' && !Buffer.isBuffer(source)) source.destroy();
  const chunks =
    method === 'HEAD' ? [] : Buffer.isBuffer(source) ? [source] : (source as AsyncIterable<Buffer>);
  return {
    statusCode: response.status,
    headers: { ...response.headers },
    body: Readable.from(withLead(chunks)),
  };
}

async function* withLead(chunks: Iterable<Buffer> | AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield Buffer.alloc(0);
  yield* chunks;
}

/**
 * The parts of the Lambda Node.js runtime that handlers see: the `awslambda` global
 * (streamifyResponse, HttpResponseStream) and the response stream of a streaming invocation,
 * written as the runtime interface client does it: streamifyResponse only marks the handler,
 * HttpResponseStream.from sets the integration content type and writes the JSON prelude and eight
 * NUL bytes just before the first write (never on a bare end()).
 * https://docs.aws.amazon.com/lambda/latest/dg/config-rs-write-functions.html
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Context } from 'aws-lambda';

export const STREAMING_MARK = Symbol.for('aws.lambda.runtime.handler.streaming');
export const HTTP_INTEGRATION_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';

type WriteFn = (chunk: Buffer | string | Uint8Array) => void;

/** What a streaming handler writes to: a Writable with the runtime's additions. */
export class LambdaResponseStream extends Writable {
  contentType = 'application/octet-stream';
  _onBeforeFirstWrite: ((write: WriteFn) => void) | undefined;
  #wrote = false;

  constructor(private readonly sink: (chunk: Buffer) => Promise<void>) {
    super();
  }

  setContentType(type: string): void {
    if (this.#wrote) throw new Error('Cannot set content-type, too late.');
    this.contentType = type;
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    if (!this.#wrote) {
      this.#wrote = true;
      this._onBeforeFirstWrite?.((c) => {
        super.write(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c));
      });
    }
    return super.write(chunk as Buffer, encoding as BufferEncoding, callback as () => void);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sink(chunk).then(() => callback(), callback);
  }
}

export interface AwsLambdaGlobal {
  streamifyResponse<T extends object>(handler: T): T;
  HttpResponseStream: {
    from(stream: LambdaResponseStream, prelude: Record<string, unknown>): LambdaResponseStream;
  };
}

/**
 * Defines the global's streaming parts the way the runtime does. The AWS SDK creates an empty
 * `awslambda` object of its own when it loads first (for its invoke store), so the parts are
 * added to whatever object is there.
 */
export function installLambdaRuntime(): void {
  const global = globalThis as unknown as { awslambda?: Partial<AwsLambdaGlobal> };
  global.awslambda ??= {};
  global.awslambda.streamifyResponse ??= (handler) => {
    Object.defineProperty(handler, STREAMING_MARK, { value: 'response' });
    return handler;
  };
  global.awslambda.HttpResponseStream ??= {
    from(stream, prelude) {
      stream.setContentType(HTTP_INTEGRATION_CONTENT_TYPE);
      const json = JSON.stringify(prelude);
      stream._onBeforeFirstWrite = (write) => {
        write(json);
        write(new Uint8Array(8));
      };
      return stream;
    },
  };
}

/** The runtime global, installed first if needed. */
export function lambdaRuntime(): AwsLambdaGlobal {
  installLambdaRuntime();
  return (globalThis as unknown as { awslambda: AwsLambdaGlobal }).awslambda;
}

export function isStreamingHandler(handler: unknown): boolean {
  return (
    typeof handler === 'function' && (handler as { [STREAMING_MARK]?: string })[STREAMING_MARK] === 'response'
  );
}

export function lambdaContext(functionName: string): Context {
  const requestId = randomBytes(16).toString('hex');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '2048',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 900_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

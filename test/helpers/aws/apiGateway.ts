/**
 * A local stand-in for API Gateway (REST API, regional endpoint, Lambda proxy integration on
 * `{proxy+}` under one stage, binaryMediaTypes `*\/*`) in front of a Lambda function run by
 * lambdaSandboxes.ts, so real clients talk HTTP to the real handlers. It is meant to be at least
 * as strict as the platform; each behaviour names the AWS page it comes from.
 *
 * Requests (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html):
 * - A URL over 10,240 characters is refused (414), and headers over 10,240 bytes in all, names,
 *   values and line ends counted (431; the status is not documented, the limit is).
 * - The body is read whole: "Request streaming isn't supported"
 *   (https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html);
 *   over the 10 MB payload quota it is refused with 413 before anything is invoked.
 * - A body sent without Content-Length (`Transfer-Encoding: chunked`, as git sends a push over its
 *   http.postBuffer) is marked "Exception" for Lambda integrations in the header table of
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html,
 *   and AWS says nothing more. `chunkedRequests` picks the behaviour: `refuse` (the default, the
 *   stricter; 411) or `buffer`. narwal must work with either.
 * - A REQUEST authorizer, when configured, runs first (gatewayAuthorizer.ts).
 * - Headers are filtered and remapped as the known-issues table says (gatewayHeaders.ts); the
 *   event is payload format 1.0, body base64-encoded (binary media types `*\/*`).
 * - The event, as JSON, must fit Lambda's 6 MB invocation payload, or the invocation fails (413).
 *   https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 *
 * Responses:
 * - Buffered: the integration times out after 29 s by default (504); the result, as JSON, must
 *   fit Lambda's 6 MB (else 502); a result that is not a proxy result is a 502.
 * - Streamed (the handler is marked by awslambda.streamifyResponse): the JSON prelude and eight
 *   NUL bytes must come within the first 16 KB, else 500, and then the body streams under the
 *   limits of streamLimits.ts (6 MB at full speed then 2 MB/s, 5 minutes idle, 15 minutes, 200
 *   MB), cut off when one is passed, as the platform ends it.
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html
 * - Response headers are remapped and dropped per the same table: a `WWW-Authenticate` from the
 *   function reaches the client as `x-amzn-Remapped-WWW-Authenticate`.
 *
 * Every invocation and every answer the gateway gave itself is recorded.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import {
  API_GATEWAY_PAYLOAD_LIMIT,
  LAMBDA_BUFFERED_RESPONSE_LIMIT,
  LAMBDA_REQUEST_LIMIT,
} from '../../../functions/adapter/lambdaLimits.js';
import {
  type AuthorizerRequest,
  GATEWAY_RESPONSE_DEFAULTS,
  type GatewayAuthorizer,
  type GatewayResponseConfig,
  type GatewayResponseType,
  gatewayResponseBody,
  gatewayResponseHeaders,
} from './gatewayAuthorizer.js';
import {
  flat,
  type HeaderPair,
  headerPairs,
  requestHeadersForFunction,
  responseHeadersForClient,
} from './gatewayHeaders.js';
import { HTTP_INTEGRATION_CONTENT_TYPE, isStreamingHandler, LambdaResponseStream } from './lambdaRuntime.js';
import { LambdaFunction } from './lambdaSandboxes.js';
import { AWS_STREAM_LIMITS, StreamCut, type StreamLimits, StreamPacer } from './streamLimits.js';

type BufferedHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<unknown>;
type StreamingHandler = (
  event: APIGatewayProxyEvent,
  stream: LambdaResponseStream,
  context: Context,
) => Promise<unknown>;

/** https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html */
export const GATEWAY_HEADER_BYTES = 10_240;
export const GATEWAY_URL_LENGTH = 10_240;
export const GATEWAY_BUFFERED_TIMEOUT_MS = 29_000;
/** The delimiter must appear "within the first 16KB of stream data" (response-transfer-mode-lambda.html). */
const PRELUDE_WINDOW = 16 * 1024;
const DELIMITER = Buffer.alloc(8);

export interface Invocation {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** Bytes of the event as Lambda received it (JSON). */
  readonly eventBytes: number;
  readonly sandbox: number;
  /** Bytes of the answer sent to the client, headers included (what passed through the function). */
  readonly responseBytes: number;
  /** From the start of the invocation to the end of its answer (Lambda bills a streamed answer's time). */
  readonly ms: number;
  /** The cold start this invocation waited for (its sandbox's init phase), 0 when it found one warm. */
  readonly initMs: number;
}

export interface ApiGatewayOptions {
  /** The function behind `{proxy+}`, or one handler run in every sandbox. */
  readonly fn?: LambdaFunction<unknown>;
  readonly handler?: unknown;
  readonly stage?: string;
  readonly authorizer?: GatewayAuthorizer;
  readonly gatewayResponses?: Partial<Record<GatewayResponseType, GatewayResponseConfig>>;
  readonly chunkedRequests?: 'refuse' | 'buffer';
  /** Integration timeout of a buffered integration (29 s by default). */
  readonly integrationTimeoutMs?: number;
  readonly limits?: {
    readonly payload?: number;
    readonly request?: number;
    readonly bufferedResponse?: number;
  };
  readonly stream?: Partial<StreamLimits>;
}

export interface RunningApiGateway {
  /** The stage's base URL, e.g. http://127.0.0.1:PORT/prod */
  readonly url: string;
  readonly fn: LambdaFunction<unknown>;
  readonly invocations: Invocation[];
  /** Answers API Gateway gave without (or instead of) the function's, with the reason. */
  readonly refusals: { readonly path: string; readonly status: number; readonly reason: string }[];
  stop(): Promise<void>;
}

export async function startApiGateway(options: ApiGatewayOptions): Promise<RunningApiGateway> {
  const stage = options.stage ?? 'prod';
  const fn =
    options.fn ??
    new LambdaFunction<unknown>('handler', {
      start: async () => ({ handler: options.handler, close: async () => {} }),
    });
  const limits = {
    payload: options.limits?.payload ?? API_GATEWAY_PAYLOAD_LIMIT,
    request: options.limits?.request ?? LAMBDA_REQUEST_LIMIT,
    bufferedResponse: options.limits?.bufferedResponse ?? LAMBDA_BUFFERED_RESPONSE_LIMIT,
  };
  const streamLimits: StreamLimits = { ...AWS_STREAM_LIMITS, ...options.stream };
  const invocations: Invocation[] = [];
  const refusals: RunningApiGateway['refusals'] = [];
  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      refusals.push({ path: req.url ?? '', status: 502, reason: `harness: ${String(error)}` });
      if (!res.headersSent) gatewayJson(res, 502, 'Internal server error', {});
      else res.destroy();
    });
  });

  function refuse(res: ServerResponse, path: string, type: GatewayResponseType, reason: string): number {
    const config = options.gatewayResponses?.[type];
    const { status, message } = GATEWAY_RESPONSE_DEFAULTS[type];
    const code = config?.StatusCode ? Number(config.StatusCode) : status;
    refusals.push({ path, status: code, reason });
    if (res.headersSent) res.destroy();
    else gatewayAnswer(res, code, gatewayResponseBody(config, message), gatewayResponseHeaders(config));
    return code;
  }

  function refuseStatus(
    res: ServerResponse,
    path: string,
    status: number,
    message: string,
    reason: string,
  ): void {
    refusals.push({ path, status, reason });
    gatewayJson(res, status, message, {});
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const fullPath = q < 0 ? raw : raw.slice(0, q);
    const prefix = `/${stage}`;
    if (raw.length > GATEWAY_URL_LENGTH) {
      req.resume();
      return refuseStatus(res, fullPath, 414, 'Request-URI Too Long', 'URL over 10,240 characters');
    }
    if (headerBytes(req) > GATEWAY_HEADER_BYTES) {
      req.resume();
      return refuseStatus(res, fullPath, 431, 'Request Header Fields Too Large', 'headers over 10,240 bytes');
    }
    if (fullPath !== prefix && !fullPath.startsWith(`${prefix}/`)) {
      req.resume();
      refuse(res, fullPath, 'MISSING_AUTHENTICATION_TOKEN', 'outside the stage');
      return;
    }
    if (/\bchunked\b/i.test(req.headers['transfer-encoding'] ?? '') && options.chunkedRequests !== 'buffer') {
      req.resume();
      return refuseStatus(res, fullPath, 411, 'Length Required', 'a request body without Content-Length');
    }
    const body = await readAll(req, limits.payload);
    if (body === null) {
      refuse(res, fullPath, 'REQUEST_TOO_LARGE', 'over the API Gateway payload limit');
      return;
    }
    const requestId = randomBytes(16).toString('hex');
    const path = fullPath.slice(prefix.length) || '/';
    const search = q < 0 ? '' : raw.slice(q + 1);
    const event = toEvent(req, stage, path, search, body, requestId);
    if (options.authorizer) {
      const outcome = await options.authorizer.decide(authorizerRequest(event, stage));
      if (outcome.kind === 'refuse') {
        refuse(res, path, outcome.response, outcome.reason);
        return;
      }
      (event.requestContext as { authorizer?: unknown }).authorizer = outcome.authorizer;
    }
    const serialized = JSON.stringify(event);
    const eventBytes = Buffer.byteLength(serialized);
    if (eventBytes > limits.request) {
      refuse(res, path, 'REQUEST_TOO_LARGE', `event of ${eventBytes} bytes over the Lambda request limit`);
      return;
    }
    const delivered = JSON.parse(serialized) as APIGatewayProxyEvent;
    let sandboxId = 0;
    let init = 0;
    let started = 0;
    const written = req.socket.bytesWritten;
    const status = await fn.invoke((sandbox, context, initMs) => {
      sandboxId = sandbox.id;
      init = initMs;
      started = performance.now();
      return isStreamingHandler(sandbox.handler)
        ? invokeStreaming(sandbox.handler as StreamingHandler, delivered, context, req, res, requestId)
        : invokeBuffered(sandbox.handler as BufferedHandler, delivered, context, req, res, requestId);
    });
    invocations.push({
      method: event.httpMethod,
      path: event.path,
      status,
      eventBytes,
      sandbox: sandboxId,
      responseBytes: req.socket.bytesWritten - written,
      ms: performance.now() - started,
      initMs: init,
    });
  }

  async function invokeBuffered(
    handler: BufferedHandler,
    event: APIGatewayProxyEvent,
    context: Context,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
  ): Promise<number> {
    const timeoutMs = options.integrationTimeoutMs ?? GATEWAY_BUFFERED_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((done) => {
      timer = setTimeout(() => done('timeout'), timeoutMs);
    });
    let result: unknown;
    try {
      const running = handler(event, context);
      const first = await Promise.race([running, timedOut]);
      if (first === 'timeout') {
        refuse(res, event.path, 'INTEGRATION_TIMEOUT', `no answer within ${timeoutMs} ms`);
        // The function goes on in its sandbox, which stays busy until it ends.
        return await running.then(
          () => 504,
          () => 504,
        );
      }
      result = first;
    } catch (error) {
      return refuse(res, event.path, 'INTEGRATION_FAILURE', `function error: ${String(error)}`);
    } finally {
      clearTimeout(timer);
    }
    const serialized = JSON.stringify(result) ?? '';
    if (Buffer.byteLength(serialized) > limits.bufferedResponse) {
      return refuse(res, event.path, 'INTEGRATION_FAILURE', 'response over the Lambda response limit');
    }
    const proxy = result as Partial<APIGatewayProxyResult> | null;
    if (proxy === null || typeof proxy !== 'object' || typeof proxy.statusCode !== 'number') {
      return refuse(res, event.path, 'INTEGRATION_FAILURE', 'malformed Lambda proxy response');
    }
    const body = Buffer.from(proxy.body ?? '', proxy.isBase64Encoded ? 'base64' : 'utf8');
    const headers = responseHeadersForClient(headerPairs(proxy.headers, proxy.multiValueHeaders), requestId);
    res.writeHead(proxy.statusCode, flat(headers));
    res.end(req.method === 'HEAD' ? undefined : body);
    return proxy.statusCode;
  }

  async function invokeStreaming(
    handler: StreamingHandler,
    event: APIGatewayProxyEvent,
    context: Context,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
  ): Promise<number> {
    let head = Buffer.alloc(0);
    let status = 0;
    let cut: string | undefined;
    const pacer = new StreamPacer(streamLimits);
    const cutOff = (reason: string) => {
      if (cut !== undefined) return;
      cut = reason;
      refusals.push({ path: event.path, status, reason });
      if (!res.headersSent) gatewayJson(res, 502, 'Internal server error', {});
      else res.destroy();
    };
    let idle = setTimeout(() => cutOff('stream idle past the idle timeout'), streamLimits.idleMs);
    const longest = setTimeout(() => cutOff('stream past its maximum duration'), pacer.remainingMs());
    const stream = new LambdaResponseStream(async (chunk) => {
      clearTimeout(idle);
      idle = setTimeout(() => cutOff('stream idle past the idle timeout'), streamLimits.idleMs);
      if (cut !== undefined) throw new StreamCut(cut);
      if (status === 0) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(DELIMITER);
        if (end < 0) {
          if (head.length > PRELUDE_WINDOW) throw new StreamCut('no prelude within the first 16 KB');
          return;
        }
        const prelude = JSON.parse(head.subarray(0, end).toString()) as Partial<APIGatewayProxyResult>;
        status = typeof prelude.statusCode === 'number' ? prelude.statusCode : 200;
        const headers = responseHeadersForClient(
          headerPairs(prelude.headers, prelude.multiValueHeaders),
          requestId,
        );
        res.writeHead(status, flat(headers));
        chunk = head.subarray(end + DELIMITER.length);
      }
      let wait: number;
      try {
        wait = pacer.delayFor(chunk.length);
      } catch (error) {
        cutOff((error as Error).message);
        throw error;
      }
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      if (chunk.length > 0 && req.method !== 'HEAD' && !res.destroyed && !res.write(chunk)) {
        await new Promise<void>((done) => {
          const settle = () => {
            res.off('drain', settle);
            res.off('close', settle);
            done();
          };
          res.once('drain', settle);
          res.once('close', settle);
        });
      }
    });
    try {
      await handler(event, stream, context);
      await new Promise<void>((done, fail) => {
        if (stream.writableFinished) return done();
        stream.once('finish', done);
        stream.once('error', fail);
      });
    } catch (error) {
      if (cut !== undefined) return status;
      if (status === 0) {
        // "Stream | Not streaming format | ... return a 500 error response"
        return refuse500(res, event.path, `function error before its prelude: ${String(error)}`);
      }
      res.destroy();
      return status;
    } finally {
      clearTimeout(idle);
      clearTimeout(longest);
    }
    if (cut !== undefined) return status;
    if (stream.contentType !== HTTP_INTEGRATION_CONTENT_TYPE || status === 0) {
      return refuse500(res, event.path, 'stream without an HTTP integration prelude');
    }
    res.end();
    return status;
  }

  function refuse500(res: ServerResponse, path: string, reason: string): number {
    refusals.push({ path, status: 500, reason });
    if (res.headersSent) res.destroy();
    else gatewayJson(res, 500, 'Internal server error', {});
    return 500;
  }

  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/${stage}`,
    fn,
    invocations,
    refusals,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      if (!options.fn) await fn.stop();
    },
  };
}

function toEvent(
  req: IncomingMessage,
  stage: string,
  path: string,
  search: string,
  body: Buffer,
  requestId: string,
): APIGatewayProxyEvent {
  const raw: HeaderPair[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    raw.push({ name: req.rawHeaders[i] as string, value: req.rawHeaders[i + 1] as string });
  const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
  const added: HeaderPair[] = [
    { name: 'X-Forwarded-For', value: sourceIp },
    { name: 'X-Forwarded-Port', value: String(req.socket.localPort ?? 443) },
    { name: 'X-Forwarded-Proto', value: 'https' },
    { name: 'X-Amzn-Trace-Id', value: `Root=1-${randomBytes(12).toString('hex')}` },
  ];
  const multiValueHeaders: Record<string, string[]> = {};
  const headers: Record<string, string> = {};
  for (const { name, value } of [...requestHeadersForFunction(raw, body.length), ...added]) {
    // API Gateway keeps the client's spelling of header names.
    const existing =
      Object.keys(multiValueHeaders).find((n) => n.toLowerCase() === name.toLowerCase()) ?? name;
    multiValueHeaders[existing] = [...(multiValueHeaders[existing] ?? []), value];
    headers[existing] = value;
  }
  const multiQuery: Record<string, string[]> = {};
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(search)) {
    multiQuery[name] = [...(multiQuery[name] ?? []), value];
    query[name] = value;
  }
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource: '/{proxy+}',
    path,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: path === '/' ? null : { proxy: path.slice(1) },
    stageVariables: null,
    // binaryMediaTypes */* : every body arrives base64-encoded.
    body: body.length === 0 ? null : body.toString('base64'),
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      identity: { sourceIp, userAgent: req.headers['user-agent'] ?? null },
      path: `/${stage}${path}`,
      stage,
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'proxy',
      resourcePath: '/{proxy+}',
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}

function authorizerRequest(event: APIGatewayProxyEvent, stage: string): AuthorizerRequest {
  return {
    method: event.httpMethod,
    path: event.path,
    stage,
    headers: event.headers as Record<string, string>,
    multiValueHeaders: event.multiValueHeaders as Record<string, string[]>,
    query: event.queryStringParameters as Record<string, string> | null,
    multiValueQuery: event.multiValueQueryStringParameters as Record<string, string[]> | null,
    requestContext: event.requestContext as unknown as AuthorizerRequest['requestContext'],
  };
}

/** Names, values, ": " and CRLF of every header, as the quota counts them. */
function headerBytes(req: IncomingMessage): number {
  let total = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    total +=
      Buffer.byteLength(req.rawHeaders[i] as string) + Buffer.byteLength(req.rawHeaders[i + 1] as string) + 4;
  return total;
}

async function readAll(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) over = true;
    if (!over) chunks.push(chunk as Buffer);
  }
  return over ? null : Buffer.concat(chunks);
}

function gatewayJson(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string>,
): void {
  gatewayAnswer(res, status, JSON.stringify({ message }), headers);
}

/** A gateway response: JSON unless its parameters set another Content-Type. */
function gatewayAnswer(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string>,
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-ErrorType': 'GatewayResponse',
    ...headers,
  });
  res.end(body);
}

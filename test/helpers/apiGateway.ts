/**
 * A local stand-in for API Gateway (REST API, Lambda proxy integration, `{proxy+}` under one
 * stage, binaryMediaTypes `*\/*`) in front of a Lambda handler in this process, so real clients
 * talk HTTP to the Lambda handlers:
 *
 * - The request is read whole (API Gateway never streams requests); over 10 MB it is refused
 *   with 413 before any invocation.
 * - It becomes a payload format 1.0 event: path without the stage, `headers` with the last value
 *   of each name and `multiValueHeaders` with all, both query forms, the body base64-encoded.
 * - The event, as JSON, must fit Lambda's 6 MB request limit, or the invocation fails (413).
 * - A buffered handler's result, as JSON, must fit Lambda's 6 MB response limit (else 502); its
 *   body is base64-decoded. A streaming handler (marked by awslambda.streamifyResponse) writes
 *   the JSON prelude, eight NUL bytes and the body; the body is passed on as it arrives, and a
 *   stream past Lambda's streamed limit is cut off, as Lambda ends it.
 * - A handler that throws, or returns something that is not a proxy result, gives 502.
 *
 * Every invocation is recorded, so tests can tell which requests reached the function.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import {
  API_GATEWAY_PAYLOAD_LIMIT,
  LAMBDA_BUFFERED_RESPONSE_LIMIT,
  LAMBDA_REQUEST_LIMIT,
  LAMBDA_STREAMED_RESPONSE_LIMIT,
} from '../../functions/adapter/lambdaLimits.js';
import {
  HTTP_INTEGRATION_CONTENT_TYPE,
  isStreamingHandler,
  LambdaResponseStream,
  lambdaContext,
} from './lambdaRuntime.js';

type BufferedHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<unknown>;
type StreamingHandler = (
  event: APIGatewayProxyEvent,
  stream: LambdaResponseStream,
  context: Context,
) => Promise<unknown>;

export interface Invocation {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** Bytes of the event as Lambda received it (JSON). */
  readonly eventBytes: number;
}

export interface ApiGatewayOptions {
  readonly handler: unknown;
  readonly stage?: string;
  readonly limits?: {
    readonly payload?: number;
    readonly request?: number;
    readonly bufferedResponse?: number;
    readonly streamedResponse?: number;
  };
}

export interface RunningApiGateway {
  /** The stage's base URL, e.g. http://127.0.0.1:PORT/prod */
  readonly url: string;
  readonly invocations: Invocation[];
  /** Answers API Gateway gave without (or instead of) the function's, with the reason. */
  readonly refusals: { readonly path: string; readonly status: number; readonly reason: string }[];
  stop(): Promise<void>;
}

const DELIMITER = Buffer.alloc(8);

export async function startApiGateway(options: ApiGatewayOptions): Promise<RunningApiGateway> {
  const stage = options.stage ?? 'prod';
  const limits = {
    payload: options.limits?.payload ?? API_GATEWAY_PAYLOAD_LIMIT,
    request: options.limits?.request ?? LAMBDA_REQUEST_LIMIT,
    bufferedResponse: options.limits?.bufferedResponse ?? LAMBDA_BUFFERED_RESPONSE_LIMIT,
    streamedResponse: options.limits?.streamedResponse ?? LAMBDA_STREAMED_RESPONSE_LIMIT,
  };
  const invocations: Invocation[] = [];
  const refusals: RunningApiGateway['refusals'] = [];
  const streaming = isStreamingHandler(options.handler);
  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      refusals.push({ path: req.url ?? '', status: 502, reason: `harness: ${String(error)}` });
      if (!res.headersSent) json(res, 502, 'Internal server error');
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const fullPath = q < 0 ? raw : raw.slice(0, q);
    const prefix = `/${stage}`;
    if (fullPath !== prefix && !fullPath.startsWith(`${prefix}/`)) {
      req.resume();
      refuse(res, fullPath, 403, 'Missing Authentication Token', 'outside the stage');
      return;
    }
    const body = await readAll(req, limits.payload);
    if (body === null) {
      refuse(res, fullPath, 413, 'Request Too Long', 'over the API Gateway payload limit');
      return;
    }
    const event = toEvent(
      req,
      stage,
      fullPath.slice(prefix.length) || '/',
      q < 0 ? '' : raw.slice(q + 1),
      body,
    );
    const serialized = JSON.stringify(event);
    const eventBytes = Buffer.byteLength(serialized);
    if (eventBytes > limits.request) {
      refuse(
        res,
        event.path,
        413,
        'Request Too Long',
        `event of ${eventBytes} bytes over the Lambda request limit`,
      );
      return;
    }
    const delivered = JSON.parse(serialized) as APIGatewayProxyEvent;
    const context = lambdaContext('narwal-git');
    const status = streaming
      ? await invokeStreaming(options.handler as StreamingHandler, delivered, context, req, res)
      : await invokeBuffered(options.handler as BufferedHandler, delivered, context, req, res);
    invocations.push({ method: event.httpMethod, path: event.path, status, eventBytes });
  }

  async function invokeBuffered(
    handler: BufferedHandler,
    event: APIGatewayProxyEvent,
    context: Context,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<number> {
    let result: unknown;
    try {
      result = await handler(event, context);
    } catch (error) {
      return refuse(res, event.path, 502, 'Internal server error', `function error: ${String(error)}`);
    }
    const serialized = JSON.stringify(result) ?? '';
    if (Buffer.byteLength(serialized) > limits.bufferedResponse) {
      return refuse(res, event.path, 502, 'Internal server error', 'response over the Lambda response limit');
    }
    const proxy = result as Partial<APIGatewayProxyResult> | null;
    if (proxy === null || typeof proxy !== 'object' || typeof proxy.statusCode !== 'number') {
      return refuse(res, event.path, 502, 'Internal server error', 'malformed Lambda proxy response');
    }
    const body = Buffer.from(proxy.body ?? '', proxy.isBase64Encoded ? 'base64' : 'utf8');
    res.writeHead(proxy.statusCode, headerList(proxy.headers, proxy.multiValueHeaders));
    res.end(req.method === 'HEAD' ? undefined : body);
    return proxy.statusCode;
  }

  async function invokeStreaming(
    handler: StreamingHandler,
    event: APIGatewayProxyEvent,
    context: Context,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<number> {
    let head = Buffer.alloc(0);
    let status = 0;
    let sent = 0;
    const stream = new LambdaResponseStream(async (chunk) => {
      if (status === 0) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(DELIMITER);
        if (end < 0) return;
        const prelude = JSON.parse(head.subarray(0, end).toString()) as Partial<APIGatewayProxyResult>;
        status = typeof prelude.statusCode === 'number' ? prelude.statusCode : 200;
        res.writeHead(status, headerList(prelude.headers, prelude.multiValueHeaders));
        chunk = head.subarray(end + DELIMITER.length);
      }
      sent += chunk.length;
      if (sent > limits.streamedResponse) {
        refusals.push({ path: event.path, status, reason: 'stream over the Lambda streamed response limit' });
        res.destroy();
        throw new Error('response stream over the limit');
      }
      if (chunk.length > 0 && req.method !== 'HEAD' && !res.write(chunk)) {
        await new Promise<void>((done) => {
          res.once('drain', done);
          res.once('close', done);
        });
      }
    });
    try {
      await handler(event, stream, context);
    } catch (error) {
      if (status === 0)
        return refuse(res, event.path, 502, 'Internal server error', `function error: ${String(error)}`);
      res.destroy();
      return status;
    }
    await new Promise<void>((done) => (stream.writableFinished ? done() : stream.once('finish', done)));
    if (stream.contentType !== HTTP_INTEGRATION_CONTENT_TYPE || status === 0) {
      return refuse(
        res,
        event.path,
        502,
        'Internal server error',
        'stream without an HTTP integration prelude',
      );
    }
    res.end();
    return status;
  }

  function refuse(
    res: ServerResponse,
    path: string,
    status: number,
    message: string,
    reason: string,
  ): number {
    refusals.push({ path, status, reason });
    if (res.headersSent) res.destroy();
    else json(res, status, message);
    return status;
  }

  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/${stage}`,
    invocations,
    refusals,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

function toEvent(
  req: IncomingMessage,
  stage: string,
  path: string,
  search: string,
  body: Buffer,
): APIGatewayProxyEvent {
  const multiValueHeaders: Record<string, string[]> = {};
  const headers: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
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
  const requestId = randomBytes(16).toString('hex');
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
      identity: {
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: req.headers['user-agent'] ?? null,
      },
      path: `/${stage}${path}`,
      stage,
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'proxy',
      resourcePath: '/{proxy+}',
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}

function headerList(
  single: APIGatewayProxyResult['headers'] | undefined,
  multi: APIGatewayProxyResult['multiValueHeaders'] | undefined,
): string[] {
  // node:http takes repeated headers as one flat [name, value, name, value, ...] list.
  const list: string[] = [];
  for (const [name, value] of Object.entries(single ?? {})) list.push(name, String(value));
  for (const [name, values] of Object.entries(multi ?? {}))
    for (const v of values) list.push(name, String(v));
  return list;
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

function json(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ message }));
}

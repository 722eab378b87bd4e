/** The local (and pool) server: node:http in front of the core handler. */
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Logger, serializeError } from '../log.js';
import { type RecyclingBody, recycles } from '../util/RecyclingBody.js';
import { clientErrorResponse, connectRefused } from './errorResponse.js';
import { nextRequestId } from './requestId.js';
import type { CoreHandler, CoreRequest, CoreResponse } from './types.js';

export interface NodeServerOptions {
  /** Slow clients are cut off: headers must arrive within this... */
  readonly headersTimeoutMs?: number;
  /** ...and a whole request within this... */
  readonly requestTimeoutMs?: number;
  /** ...and a body the handler did not read is drained only while it keeps arriving. */
  readonly bodyIdleMs?: number;
}

export const MAX_HEADER_BYTES = 16 * 1024;

export function createNodeServer(
  handler: CoreHandler,
  logger: Logger,
  options: NodeServerOptions = {},
): Server {
  const headersTimeout = options.headersTimeoutMs ?? 30_000;
  const bodyIdleMs = options.bodyIdleMs ?? 30_000;
  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      // node checks both timeouts only this often (30 s by default), which would double them.
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
    },
    (req, res) => {
      void serve(handler, logger, req, res, bodyIdleMs);
    },
  );
  server.headersTimeout = headersTimeout;
  server.requestTimeout = options.requestTimeoutMs ?? 15 * 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(error, socket),
  );
  // node hands CONNECT to this event and, with no listener, drops the connection unanswered.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => writeRaw(socket, connectRefused()));
  return server;
}

/**
 * What node's HTTP parser refuses before a handler runs (oversized or malformed headers, a
 * request that took too long) gets the same text/plain answer as every other refusal, so git
 * prints why. A socket already carrying a response, or already gone, is just closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  writeRaw(socket, clientErrorResponse(error.code, MAX_HEADER_BYTES));
}

/** A buffered answer written straight to a socket no ServerResponse owns, then closed. */
function writeRaw(socket: Duplex, response: CoreResponse): void {
  const body = Buffer.isBuffer(response.body) ? response.body : Buffer.alloc(0);
  const head = [
    `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`,
    ...Object.entries(response.headers).map(([name, value]) => `${name}: ${value}`),
    `content-length: ${body.length}`,
    'connection: close',
    '',
    '',
  ].join('\r\n');
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
}

/**
 * Writes `body` a chunk at a time, each handed back to the body once node has written it (its
 * write callback), so the body can fill it again. A client that goes away ends the loop, which
 * destroys the body; a body that fails cuts the response off.
 */
async function writeRecycling(body: Readable & RecyclingBody, res: ServerResponse): Promise<void> {
  // 'close' also follows every response that was written whole: only one cut short is an error
  // (made, with its stack, only then).
  const gone = new Promise<never>((_, reject) =>
    res.once('close', () => {
      if (!res.writableFinished) reject(new Error('the client closed the connection'));
    }),
  );
  gone.catch(() => {});
  const written = (chunk: Buffer) =>
    new Promise<void>((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())));
  try {
    for await (const chunk of body) {
      await Promise.race([written(chunk as Buffer), gone]);
      body.recycle(chunk as Buffer);
    }
  } catch (error) {
    // As pipeline does: a body that fails midway cuts the response off, so the client sees it end.
    res.destroy(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  await Promise.race([new Promise<void>((resolve) => res.end(resolve)), gone]);
}

async function serve(
  handler: CoreHandler,
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  bodyIdleMs: number,
): Promise<void> {
  const started = performance.now();
  // The raw path, not a WHATWG-normalized one: a ".." must reach the router and be refused there.
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const request: CoreRequest = {
    method: req.method ?? 'GET',
    path: q < 0 ? raw : raw.slice(0, q),
    query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)),
    headers: req.headers as Record<string, string | undefined>,
    body: req,
    requestId: nextRequestId(),
    ...(req.socket.remoteAddress ? { remoteAddress: req.socket.remoteAddress } : {}),
    ...(req.socket.localAddress && req.socket.localPort
      ? { localAddress: req.socket.localAddress, localPort: req.socket.localPort }
      : {}),
  };
  const response = await handler(request);
  res.writeHead(response.status, response.headers);
  try {
    if (Buffer.isBuffer(response.body)) res.end(request.method === 'HEAD' ? undefined : response.body);
    else if (recycles(response.body)) await writeRecycling(response.body, res);
    else await pipeline(response.body, res);
  } catch (error) {
    logger.warn('response stream ended early', {
      requestId: request.requestId,
      error: serializeError(error),
    });
  } finally {
    // Drain whatever the handler did not read, so the connection can be reused or closed cleanly
    // (git reads a 401 only after sending its body), but not from a client that stopped sending.
    if (!req.complete) {
      req.resume();
      req.socket.setTimeout(bodyIdleMs, () => req.socket.destroy());
      req.once('end', () => req.socket.setTimeout(0));
    }
    logger.info('request', {
      requestId: request.requestId,
      method: request.method,
      path: request.path,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
  }
}

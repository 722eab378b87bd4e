/** The local (and pool) server: node:http in front of the core handler. */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../log.js';
import type { CoreHandler, CoreRequest } from './types.js';

export interface NodeServerOptions {
  /** Slow clients are cut off: headers must arrive within this... */
  readonly headersTimeoutMs?: number;
  /** ...and a whole request within this. */
  readonly requestTimeoutMs?: number;
}

export function createNodeServer(
  handler: CoreHandler,
  logger: Logger,
  options: NodeServerOptions = {},
): Server {
  const server = createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    void serve(handler, logger, req, res);
  });
  server.headersTimeout = options.headersTimeoutMs ?? 30_000;
  server.requestTimeout = options.requestTimeoutMs ?? 15 * 60_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

async function serve(
  handler: CoreHandler,
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
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
    requestId: randomBytes(8).toString('hex'),
    ...(req.socket.remoteAddress ? { remoteAddress: req.socket.remoteAddress } : {}),
  };
  const response = await handler(request);
  res.writeHead(response.status, response.headers);
  try {
    if (Buffer.isBuffer(response.body)) res.end(request.method === 'HEAD' ? undefined : response.body);
    else await pipeline(response.body as Readable, res);
  } catch (error) {
    logger.warn('response stream ended early', { requestId: request.requestId, error: String(error) });
  } finally {
    // Drain whatever the handler did not read, so the connection can be reused or closed cleanly.
    if (!req.complete) req.resume();
    logger.info('request', {
      requestId: request.requestId,
      method: request.method,
      path: request.path,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
  }
}

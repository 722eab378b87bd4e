/**
 * The floor of a fetch answered from memory: a bare node:http server that keeps the answer to
 * each distinct request (method, path, protocol header, body) and replays it, with no
 * authentication, store, lease or cache of its own to consult. The first of each is passed to an
 * upstream server (narwal) and its answer kept. A storm against it measures what node's HTTP, its
 * streams and its sockets cost per job before any of narwal's own work: per-job server CPU under
 * this is not to be had from a server written on node:http.
 */
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';

interface KeptAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** The headers a git client's request carries that the upstream reads. */
const FORWARDED = [
  'authorization',
  'content-type',
  'content-encoding',
  'git-protocol',
  'accept',
  'user-agent',
];
/** The headers of an answer a git client reads. */
const KEPT = ['content-type', 'cache-control', 'expires', 'pragma'];

export async function startFloor(options: { upstream: string; port?: number }): Promise<{
  url: string;
  stop(): Promise<void>;
}> {
  const upstream = new URL(options.upstream);
  const kept = new Map<string, KeptAnswer>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const key = `${req.method} ${req.url} ${req.headers['git-protocol'] ?? ''} ${body.toString('latin1')}`;
      const answer = kept.get(key);
      if (answer) return send(res, answer);
      fill(upstream, req.method ?? 'GET', req.url ?? '/', req.headers, body).then(
        (filled) => {
          if (filled.status === 200) kept.set(key, filled);
          send(res, filled);
        },
        (error: Error) => {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`floor: ${error.message}\n`);
        },
      );
    });
  });
  await new Promise<void>((done) => server.listen(options.port ?? 0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

function send(res: import('node:http').ServerResponse, answer: KeptAnswer): void {
  res.writeHead(answer.status, { ...answer.headers, 'content-length': answer.body.length });
  res.end(answer.body);
}

function fill(
  upstream: URL,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<KeptAnswer> {
  const forwarded: Record<string, string> = { 'content-length': String(body.length) };
  for (const name of FORWARDED) {
    const value = headers[name];
    if (typeof value === 'string') forwarded[name] = value;
  }
  return new Promise((done, fail) => {
    const req = request(new URL(path, upstream), { method, headers: forwarded }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('end', () => {
        const kept: Record<string, string> = {};
        for (const name of KEPT) {
          const value = res.headers[name];
          if (typeof value === 'string') kept[name] = value;
        }
        const challenge = res.headers['www-authenticate'];
        if (typeof challenge === 'string') kept['www-authenticate'] = challenge;
        done({ status: res.statusCode ?? 502, headers: kept, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', fail);
    req.end(body);
  });
}

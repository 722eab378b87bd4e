/**
 * The benchmark's peer: stock `git http-backend` run as a CGI script (RFC 3875) for every request
 * by a small node:http server, serving every bare repository under `root` - the reference narwal
 * is measured against. The CGI environment follows git-http-backend(1): GIT_PROJECT_ROOT,
 * GIT_HTTP_EXPORT_ALL, PATH_INFO, QUERY_STRING, REQUEST_METHOD, CONTENT_TYPE, CONTENT_LENGTH
 * (absent for a chunked body, which http-backend then reads to EOF), REMOTE_USER/REMOTE_ADDR,
 * GIT_PROTOCOL from the `Git-Protocol` header and HTTP_CONTENT_ENCODING for gzip'd bodies (which
 * http-backend inflates itself). receive-pack is enabled with `http.receivepack=true` so push
 * benchmarks can use the same peer.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PeerOptions {
  /** Directory holding the bare repositories (GIT_PROJECT_ROOT). */
  readonly root: string;
  /**
   * When set, every request must carry these Basic credentials (401 otherwise), as narwal demands
   * a token: git then makes the same requests, including the 401 probe, against both servers.
   */
  readonly auth?: { readonly user: string; readonly password: string };
  readonly host?: string;
  readonly port?: number;
  /** git's trace2 event target (a directory: one file per git process), for push profiles. */
  readonly trace2Dir?: string;
}

export interface RunningPeer {
  readonly url: string;
  stop(): Promise<void>;
}

export async function startPeer(options: PeerOptions): Promise<RunningPeer> {
  const server = createServer((req, res) => {
    serveCgi(options, req, res);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function serveCgi(options: PeerOptions, req: IncomingMessage, res: ServerResponse): void {
  const user = checkAuth(options, req.headers.authorization);
  if (user === null) {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="peer"', 'content-type': 'text/plain' });
    res.end('authentication required\n');
    req.resume();
    return;
  }
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const child = spawn('git', ['http-backend'], {
    env: cgiEnv(options, req, {
      pathInfo: decodeURIComponent(q < 0 ? raw : raw.slice(0, q)),
      query: q < 0 ? '' : raw.slice(q + 1),
      user,
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-16 * 1024);
  });
  child.stdin.on('error', () => {});
  req.pipe(child.stdin);
  res.once('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  child.once('error', (error) => fail(res, `git http-backend: ${error.message}`));
  child.once('close', (code) => {
    // An answer without a CGI head (a crash, or output cut short) is the server's failure.
    if (!res.headersSent) fail(res, `git http-backend exited with ${code} before answering: ${stderr}`);
  });
  readCgiHead(child.stdout, (head, rest) => {
    res.writeHead(head.status, head.headers);
    if (rest.length > 0) res.write(rest);
    child.stdout.pipe(res);
  });
}

/** The user name when the request may proceed, null when it must be answered with 401. */
function checkAuth(options: PeerOptions, header: string | undefined): string | null {
  const expected = options.auth;
  if (!expected) return '';
  const match = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  if (decoded.slice(0, colon) !== expected.user || decoded.slice(colon + 1) !== expected.password)
    return null;
  return expected.user;
}

function cgiEnv(
  options: PeerOptions,
  req: IncomingMessage,
  parts: { pathInfo: string; query: string; user: string },
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.receivepack',
    GIT_CONFIG_VALUE_0: 'true',
    GIT_PROJECT_ROOT: options.root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    SERVER_SOFTWARE: 'narwal-bench-peer',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: parts.pathInfo,
    QUERY_STRING: parts.query,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  if (parts.user !== '') env.REMOTE_USER = parts.user;
  if (options.trace2Dir !== undefined) env.GIT_TRACE2_EVENT = options.trace2Dir;
  const type = req.headers['content-type'];
  if (type !== undefined) env.CONTENT_TYPE = type;
  const length = req.headers['content-length'];
  // A chunked body has no length; http-backend then reads stdin to EOF.
  if (length !== undefined && req.headers['transfer-encoding'] === undefined) env.CONTENT_LENGTH = length;
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined) env.HTTP_CONTENT_ENCODING = encoding;
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') {
    env.GIT_PROTOCOL = protocol;
    env.HTTP_GIT_PROTOCOL = protocol;
  }
  return env;
}

interface CgiHead {
  readonly status: number;
  readonly headers: Record<string, string>;
}

/**
 * Reads the CGI response head (header lines up to an empty line, RFC 3875 section 6) and hands
 * over what followed it; the caller then pipes the rest of stdout.
 */
function readCgiHead(stdout: NodeJS.ReadableStream, done: (head: CgiHead, rest: Buffer) => void): void {
  let buffered = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    const end = headEnd(buffered);
    if (end === null) return;
    stdout.off('data', onData);
    stdout.pause();
    done(
      parseCgiHead(buffered.subarray(0, end.at).toString('latin1')),
      buffered.subarray(end.at + end.length),
    );
  };
  stdout.on('data', onData);
}

function headEnd(buffer: Buffer): { at: number; length: number } | null {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf < 0 && lf < 0) return null;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  return { at: lf, length: 2 };
}

export function parseCgiHead(text: string): CgiHead {
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'status') status = Number.parseInt(value, 10) || 500;
    else headers[name] = value;
  }
  return { status, headers };
}

function fail(res: ServerResponse, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(500, { 'content-type': 'text/plain' });
  res.end(`${message}\n`);
}

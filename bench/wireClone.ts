/**
 * A clone without the client's work: the requests `git clone --bare` makes in protocol v2
 * (gitprotocol-v2(5): capability advertisement, `ls-refs`, then `fetch` wanting every advertised
 * ref, with `done`), over one kept-alive connection as git's curl makes them, the pack counted
 * and thrown away instead of indexed. A real client spends about twice the server's CPU on
 * index-pack; on one machine that, not the server, sets the pace, so this client measures what
 * the server alone can serve. It reads with node:http and keeps no byte it does not need: the
 * whole harness is one process, and a client costing more per clone than the server (fetch's
 * web streams did) would measure itself.
 */
import { Agent, request as httpRequest } from 'node:http';

export interface WireCloneResult {
  readonly ms: number;
  readonly packBytes: number;
}

const AGENT = 'agent=narwal-bench\n';

/** One client's kept-alive connection to a repository, as git's curl keeps it for a transfer. */
export interface WireConnection {
  call(method: 'GET' | 'POST', suffix: string, body?: string, keep?: boolean): Promise<Exchange>;
  close(): void;
}

/** A connection to `repoUrl` (plain http, its credentials as Basic auth), speaking protocol v2. */
export function wireConnection(repoUrl: string, signal?: AbortSignal): WireConnection {
  const url = new URL(repoUrl);
  if (url.protocol !== 'http:') throw new Error(`the wire client speaks plain http, not ${url.protocol}`);
  const headers: Record<string, string> = { 'git-protocol': 'version=2' };
  if (url.username !== '')
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  const path = url.pathname.replace(/\/$/, '');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return {
    call: (method, suffix, body, keep = true) =>
      exchange({
        agent,
        host: url.hostname,
        port: Number(url.port),
        method,
        path: path + suffix,
        headers,
        body,
        keep,
        signal,
      }),
    close: () => agent.destroy(),
  };
}

export async function wireClone(repoUrl: string, signal?: AbortSignal): Promise<WireCloneResult> {
  const started = performance.now();
  const connection = wireConnection(repoUrl, signal);
  const call = connection.call;
  try {
    const advertised = await call('GET', '/info/refs?service=git-upload-pack');
    if (advertised.status !== 200 || !advertised.text.includes('version 2'))
      throw new Error(`info/refs answered ${advertised.status} without a v2 advertisement`);

    const listed = await call(
      'POST',
      '/git-upload-pack',
      request('ls-refs', [
        'peel\n',
        'symrefs\n',
        'ref-prefix HEAD\n',
        'ref-prefix refs/heads/\n',
        'ref-prefix refs/tags/\n',
      ]),
    );
    const wants = new Set<string>();
    for (const match of listed.text.matchAll(/^[0-9a-f]{4}([0-9a-f]{40}) /gm))
      if (match[1]) wants.add(match[1]);
    if (listed.status !== 200 || wants.size === 0) throw new Error(`ls-refs answered ${listed.status}`);

    const fetched = await call(
      'POST',
      '/git-upload-pack',
      request('fetch', [
        'ofs-delta\n',
        'no-progress\n',
        ...[...wants].map((oid) => `want ${oid}\n`),
        'done\n',
      ]),
      false,
    );
    if (fetched.status !== 200) throw new Error(`fetch answered ${fetched.status}`);
    // The response ends with a flush-pkt after the packfile section; anything else was cut short.
    if (fetched.tail.toString('latin1') !== '0000') throw new Error('the fetch response ended early');
    return { ms: performance.now() - started, packBytes: fetched.bytes };
  } finally {
    connection.close();
  }
}

export interface Exchange {
  readonly status: number;
  /** The body as latin1 when it was kept, else empty. */
  readonly text: string;
  readonly bytes: number;
  /** The body's last four bytes. */
  readonly tail: Buffer;
}

function exchange(options: {
  agent: Agent;
  host: string;
  port: number;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** Keep the body (small answers) or only count it (the pack). */
  keep: boolean;
  signal: AbortSignal | undefined;
}): Promise<Exchange> {
  const { body } = options;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        agent: options.agent,
        host: options.host,
        port: options.port,
        method: options.method,
        path: options.path,
        headers: {
          ...options.headers,
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/x-git-upload-pack-request',
                'content-length': String(Buffer.byteLength(body)),
              }),
        },
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (res) => {
        const kept: Buffer[] = [];
        let bytes = 0;
        let tail: Buffer = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          tail = chunk.length >= 4 ? chunk.subarray(-4) : Buffer.concat([tail, chunk]).subarray(-4);
          if (options.keep) kept.push(chunk);
        });
        res.once('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(kept).toString('latin1'),
            bytes,
            tail: Buffer.from(tail),
          }),
        );
        res.once('error', reject);
        res.once('close', () => {
          if (!res.complete)
            reject(new Error(`the answer to ${options.method} ${options.path} was cut short`));
        });
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

/** A v2 command request: command, capabilities, delim-pkt, arguments, flush-pkt. */
export function request(command: string, args: readonly string[], capabilities = [AGENT]): string {
  return [pkt(`command=${command}\n`), ...capabilities.map(pkt), '0001', ...args.map(pkt), '0000'].join('');
}

function pkt(line: string): string {
  return (line.length + 4).toString(16).padStart(4, '0') + line;
}

/**
 * An HTTP/1.1 client over a bare socket, for requests no well-behaved client sends: lying
 * Content-Length, chunked bodies without their end, bytes trickled one at a time, headers of any
 * size. It reports what came back (if anything), when, and whether the server closed.
 */
import { connect } from 'node:net';

export interface RawRequest {
  /** Request line and headers, without the blank line that ends them. */
  readonly head: string;
  /** Body bytes, written after the head (each part at once, or trickled). */
  readonly body?: readonly Buffer[];
  /** Pause between single bytes of the head and body; undefined writes each part at once. */
  readonly trickleMs?: number;
  /** Write the head at once and trickle only the body (default: trickle both). */
  readonly trickleBodyOnly?: boolean;
  /** Closes the connection when aborted (the answer so far is reported). */
  readonly signal?: AbortSignal;
  /** Write the head's ending blank line (false: headers that never end). */
  readonly endHeaders?: boolean;
  /** Give up after this long (a server that never answers fails the case). */
  readonly deadlineMs: number;
}

export interface RawResponse {
  /** 0 when the server closed without a status line. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The response was complete (by Content-Length, chunked end, or close after headers). */
  readonly complete: boolean;
  readonly ms: number;
  readonly timedOut: boolean;
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  complete: boolean;
}

function parse(bytes: Buffer, closed: boolean): Parsed | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const rest = bytes.subarray(end + 4);
  if (status === 100) return parse(rest, closed);
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return { status, headers, body: rest.subarray(0, length), complete: rest.length >= length };
  }
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') return dechunk(status, headers, rest);
  return { status, headers, body: rest, complete: closed };
}

function dechunk(status: number, headers: Record<string, string>, rest: Buffer): Parsed {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) break;
    if (size === 0) return { status, headers, body: Buffer.concat(parts), complete: true };
    if (rest.length < lineEnd + 2 + size + 2) break;
    parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return { status, headers, body: Buffer.concat(parts), complete: false };
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export function rawRequest(url: string, request: RawRequest): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean, timedOut = false) => {
      if (settled) return;
      const parsed = parse(Buffer.concat(received), closed);
      if (!closed && !timedOut && !parsed?.complete) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      resolve({
        status: parsed?.status ?? 0,
        headers: parsed?.headers ?? {},
        body: parsed?.body ?? Buffer.alloc(0),
        complete: parsed?.complete ?? false,
        ms: performance.now() - started,
        timedOut,
      });
    };
    const deadline = setTimeout(() => finish(false, true), request.deadlineMs);
    request.signal?.addEventListener('abort', () => finish(true), { once: true });
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    void (async () => {
      const head = Buffer.from(
        `${request.head}${request.endHeaders === false ? '\r\n' : '\r\n\r\n'}`,
        'latin1',
      );
      const parts = [head, ...(request.body ?? [])];
      for (const part of parts) {
        if (settled || socket.destroyed) return;
        if (request.trickleMs === undefined || (request.trickleBodyOnly && part === head)) {
          socket.write(part);
          continue;
        }
        for (const byte of part) {
          if (settled || socket.destroyed) return;
          socket.write(Buffer.of(byte));
          await sleep(request.trickleMs);
        }
      }
    })();
  });
}

export interface GitReport {
  /** ERR pkt-lines and side-band 3 (fatal) messages. */
  readonly errors: string[];
  /** `unpack ...`, `ok <ref>`, `ng <ref> <reason>` lines of a push report. */
  readonly report: string[];
}

/** The git-level outcome of a 200 answer: errors and push report lines, side-band demultiplexed. */
export function gitReport(body: Buffer): GitReport {
  const errors: string[] = [];
  const report: string[] = [];
  const band1: Buffer[] = [];
  const walk = (bytes: Buffer, sideband: boolean) => {
    for (let at = 0; at + 4 <= bytes.length; ) {
      const length = Number.parseInt(bytes.subarray(at, at + 4).toString('latin1'), 16);
      if (!Number.isFinite(length) || (length > 0 && length < 4) || at + Math.max(4, length) > bytes.length)
        return;
      const payload = bytes.subarray(at + 4, at + Math.max(4, length));
      at += Math.max(4, length);
      if (payload.length === 0) continue;
      const line = payload.toString('utf8').replace(/\n$/, '');
      if (line.startsWith('ERR ')) errors.push(line);
      else if (sideband && payload[0] === 1) band1.push(payload.subarray(1));
      else if (sideband && payload[0] === 3) errors.push(payload.subarray(1).toString('utf8').trim());
      else if (/^(unpack |ok |ng )/.test(line)) report.push(line);
    }
  };
  walk(body, true);
  if (band1.length > 0) walk(Buffer.concat(band1), false);
  return { errors, report };
}

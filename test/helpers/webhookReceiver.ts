/**
 * A webhook receiver for tests, on a real HTTP port: verifies each delivery's HMAC signature,
 * accepts each idempotency key once (a repeat is answered 200 and counted as a duplicate), and
 * can be told to fail the next requests (an HTTP status, or a hang past the sender's timeout) or
 * to stop listening altogether (the sender sees its connection refused) and start again on the
 * same port.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { PushEvent } from '../../lib/events/PushEvent.js';

export type Failure = number | 'hang';

export interface Delivery {
  readonly key: string | undefined;
  readonly seq: number | undefined;
  readonly answer: number | 'hang';
  readonly signed: boolean;
}

export class WebhookReceiver {
  readonly accepted: PushEvent[] = [];
  readonly duplicates: PushEvent[] = [];
  readonly deliveries: Delivery[] = [];
  readonly #failures: Failure[] = [];
  readonly #secret: string;
  #server: Server | undefined;
  #port = 0;

  constructor(secret: string) {
    this.#secret = secret;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hooks/narwal`;
  }

  /** The next requests fail, one failure each, in this order. */
  failNext(...failures: Failure[]): void {
    this.#failures.push(...failures);
  }

  async listen(): Promise<void> {
    const server = createServer((request, response) => {
      void body(request).then((raw) => {
        const failure = this.#failures.shift();
        const signed = this.#verify(raw, request.headers['x-narwal-signature-256']);
        let event: PushEvent | undefined;
        try {
          event = JSON.parse(raw) as PushEvent;
        } catch {}
        const key = request.headers['idempotency-key'] as string | undefined;
        this.deliveries.push({ key, seq: event?.seq, answer: failure ?? (signed ? 200 : 401), signed });
        if (failure === 'hang') return; // never answered: the sender times out
        if (failure !== undefined || !signed || event === undefined || key !== event.id) {
          response.writeHead(failure ?? 400).end();
          return;
        }
        if (this.accepted.some((e) => e.id === key)) this.duplicates.push(event);
        else this.accepted.push(event);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((done) => server.listen(this.#port, '127.0.0.1', done));
    const address = server.address();
    this.#port = typeof address === 'object' && address ? address.port : 0;
    this.#server = server;
  }

  /** Stops listening (connections are refused) but keeps the port for the next listen(). */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }

  #verify(raw: string, header: string | string[] | undefined): boolean {
    if (typeof header !== 'string') return false;
    const expected = `sha256=${createHmac('sha256', this.#secret).update(raw).digest('hex')}`;
    return header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
  }
}

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

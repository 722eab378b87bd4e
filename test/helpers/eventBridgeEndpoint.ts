/**
 * A local HTTP endpoint that answers the AWS SDK's real PutEvents requests (the awsJson1_1
 * protocol: `POST /`, `X-Amz-Target: AWSEvents.PutEvents`, a SigV4 `Authorization`), records
 * every entry it accepted, and can fail the next requests whole (an HTTP status with an AWS error
 * body) or fail chosen entries of one request (FailedEntryCount with an ErrorCode per entry).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface ReceivedEntry {
  readonly EventBusName?: string;
  readonly Source?: string;
  readonly DetailType?: string;
  readonly Detail?: string;
  readonly Time?: number;
}

export type EndpointFailure =
  | { readonly status: number; readonly type: string }
  | { readonly failEntries: number[] };

export class EventBridgeEndpoint {
  readonly accepted: ReceivedEntry[] = [];
  readonly requests: { target: string | undefined; authorization: string | undefined; entries: number }[] =
    [];
  readonly #failures: EndpointFailure[] = [];
  #server: Server | undefined;
  #next = 1;

  get url(): string {
    const address = this.#server?.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  failNext(...failures: EndpointFailure[]): void {
    this.#failures.push(...failures);
  }

  async listen(): Promise<void> {
    this.#server = createServer((request, response) => {
      void body(request).then((raw) => {
        const target = request.headers['x-amz-target'] as string | undefined;
        const parsed = JSON.parse(raw || '{}') as { Entries?: ReceivedEntry[] };
        const entries = parsed.Entries ?? [];
        this.requests.push({ target, authorization: request.headers.authorization, entries: entries.length });
        const reply = (status: number, value: unknown) =>
          response
            .writeHead(status, { 'content-type': 'application/x-amz-json-1.1' })
            .end(JSON.stringify(value));
        if (target !== 'AWSEvents.PutEvents') return reply(400, { __type: 'UnknownOperationException' });
        const failure = this.#failures.shift();
        if (failure && 'status' in failure)
          return reply(failure.status, { __type: failure.type, message: 'injected failure' });
        const failing = new Set(failure && 'failEntries' in failure ? failure.failEntries : []);
        const results = entries.map((entry, i) => {
          if (failing.has(i)) return { ErrorCode: 'InternalFailure', ErrorMessage: 'injected entry failure' };
          this.accepted.push(entry);
          return { EventId: `event-${this.#next++}` };
        });
        reply(200, { FailedEntryCount: failing.size, Entries: results });
      });
    });
    await new Promise<void>((done) => this.#server?.listen(0, '127.0.0.1', done));
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
}

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

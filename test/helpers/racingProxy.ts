/**
 * A plain HTTP proxy in front of narwal that can run an action just before it forwards the next
 * push (`POST .../git-receive-pack`): after the client read the refs, before its commands reach
 * the server. With it a test moves a ref in that window for clients that have no pre-push hook,
 * so only the server can see that the old value the client sends is stale.
 */
import { createServer, request } from 'node:http';

export interface RacingProxy {
  readonly url: string;
  /** Runs `action` once, before the next receive-pack POST is forwarded. */
  beforeNextPush(action: () => Promise<void>): void;
  stop(): Promise<void>;
}

export async function startRacingProxy(target: string): Promise<RacingProxy> {
  const upstream = new URL(target);
  let pending: (() => Promise<void>) | undefined;
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method === 'POST' && path.endsWith('/git-receive-pack') && pending) {
        const action = pending;
        pending = undefined;
        await action();
      }
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    beforeNextPush(action) {
      pending = action;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

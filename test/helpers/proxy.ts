/**
 * A plain HTTP proxy for tests: each request goes to the upstream `choose` picks for it (after
 * whatever `choose` awaits), with its method, path, headers and body unchanged.
 */
import { createServer, type IncomingMessage, request } from 'node:http';

export interface Proxy {
  readonly url: string;
  stop(): Promise<void>;
}

export async function startProxy(choose: (req: IncomingMessage) => URL | Promise<URL>): Promise<Proxy> {
  const server = createServer((req, res) => {
    void (async () => {
      const upstream = await choose(req);
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
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

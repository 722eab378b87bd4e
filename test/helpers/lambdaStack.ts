/**
 * The local stack for the Lambda handlers: an app built like a Lambda container's (same
 * createApp, own configuration), the handler of one function around it, and API Gateway in
 * front (test/helpers/apiGateway.ts). Optionally a pool: a `narwal serve`-style node server on
 * the same data directory (same store, same shared cache), counting the requests it serves.
 */
import type { Server } from 'node:http';
import { type Container, lazyContainer } from '../../functions/adapter/container.js';
import { type App, createApp } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import { createNodeServer } from '../../lib/http/nodeServer.js';
import type { CoreHandler } from '../../lib/http/types.js';
import type { Logger } from '../../lib/log.js';
import { type ApiGatewayOptions, type RunningApiGateway, startApiGateway } from './apiGateway.js';
import { installLambdaRuntime } from './lambdaRuntime.js';
import { ADMIN_TOKEN } from './narwalServer.js';

export type FunctionKind = 'streamed' | 'buffered';

export interface LambdaStack {
  readonly api: RunningApiGateway;
  readonly app: App;
  stop(): Promise<void>;
}

export async function startLambdaStack(options: {
  dataDir: string;
  kind: FunctionKind;
  logger: Logger;
  env?: Record<string, string>;
  limits?: ApiGatewayOptions['limits'];
}): Promise<LambdaStack> {
  installLambdaRuntime();
  const config = loadConfig(
    { NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, ...options.env },
    { dataDir: options.dataDir },
  );
  const app = await createApp(config, options.logger);
  const container: Container = lazyContainer(async () => app, options.logger);
  // Loaded after the runtime global exists, as the Lambda runtime loads a handler module.
  const handler =
    options.kind === 'streamed'
      ? (await import('../../functions/git.js')).gitHandler(container)
      : (await import('../../functions/http.js')).httpHandler(container);
  const api = await startApiGateway({ handler, ...(options.limits ? { limits: options.limits } : {}) });
  return {
    api,
    app,
    async stop() {
      await api.stop();
      await app.close();
    },
  };
}

export interface Pool {
  readonly url: string;
  readonly requests: { readonly method: string; readonly path: string }[];
  readonly app: App;
  stop(): Promise<void>;
}

/** The pool: the same app and node server as `narwal serve`, on the same data directory. */
export async function startPool(options: {
  dataDir: string;
  logger: Logger;
  env?: Record<string, string>;
}): Promise<Pool> {
  const config = loadConfig(
    { NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, ...options.env },
    { dataDir: options.dataDir, port: 0 },
  );
  const app = await createApp(config, options.logger);
  const requests: Pool['requests'] = [];
  const counting: CoreHandler = (request) => {
    requests.push({ method: request.method, path: request.path });
    return app.handler(request);
  };
  const server: Server = createNodeServer(counting, options.logger);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    app,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      await app.close();
    },
  };
}

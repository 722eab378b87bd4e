/**
 * The local stack for the Lambda handlers, shaped as the deployment is (serverless.yml): the git
 * function runs in sandboxes (lambdaSandboxes.ts), each with its own container and its own
 * `NARWAL_DATA` in its `/tmp`, sharing only the store and the cache directory (S3 and EFS in AWS);
 * API Gateway in front (apiGateway.ts), with the deployment's REQUEST authorizer and gateway
 * responses unless a test asks for none. Optionally a pool: a `narwal serve`-style node server on
 * the same store and cache, counting the requests it serves.
 */

import type { Server } from 'node:http';
import { join } from 'node:path';
import { type Container, lazyContainer } from '../../../functions/adapter/container.js';
import { type App, createApp } from '../../../lib/app.js';
import { loadConfig } from '../../../lib/config.js';
import { createNodeServer } from '../../../lib/http/nodeServer.js';
import type { CoreHandler } from '../../../lib/http/types.js';
import type { Logger } from '../../../lib/log.js';
import { ADMIN_TOKEN } from '../narwalServer.js';
import { type ApiGatewayOptions, type RunningApiGateway, startApiGateway } from './apiGateway.js';
import { DEPLOYED_AUTHORIZER, DEPLOYED_GATEWAY_RESPONSES } from './deployment.js';
import { type AuthorizerHandler, GatewayAuthorizer } from './gatewayAuthorizer.js';
import { installLambdaRuntime } from './lambdaRuntime.js';
import { LambdaFunction } from './lambdaSandboxes.js';

export type FunctionKind = 'streamed' | 'buffered';

export interface LambdaStack {
  readonly api: RunningApiGateway;
  /** The deployment's REQUEST authorizer, unless the stack was started without one. */
  readonly authorizer: GatewayAuthorizer | null;
  /** The apps of the git function's sandboxes started so far. */
  readonly apps: readonly App[];
  stop(): Promise<void>;
}

/** What every sandbox and the pool share: the store and the cache (S3 and EFS in AWS). */
export function sharedEnv(dataDir: string): Record<string, string> {
  return { NARWAL_STORE_DIR: join(dataDir, 'store'), NARWAL_CACHE_DIR: join(dataDir, 'cache') };
}

export async function startLambdaStack(options: {
  dataDir: string;
  kind: FunctionKind;
  logger: Logger;
  env?: Record<string, string>;
  limits?: ApiGatewayOptions['limits'];
  chunkedRequests?: ApiGatewayOptions['chunkedRequests'];
  stream?: ApiGatewayOptions['stream'];
  /** The authorizer's settings; the deployment's by default, `false` for none. */
  authorizer?: false | { identitySources: string[]; resultTtlSeconds: number };
}): Promise<LambdaStack> {
  installLambdaRuntime();
  const apps: App[] = [];
  const env = { NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, ...sharedEnv(options.dataDir), ...options.env };
  // Loaded after the runtime global exists, as the Lambda runtime loads a handler module.
  const handlerOf =
    options.kind === 'streamed'
      ? (await import('../../../functions/git.js')).gitHandler
      : (await import('../../../functions/http.js')).httpHandler;
  const fn = new LambdaFunction<unknown>('narwal-git', {
    async start({ tmpDir }) {
      const config = loadConfig(env, { dataDir: join(tmpDir, 'narwal') });
      // As the deployment's container makes it (functions/adapter/container.ts).
      const app = await createApp(config, options.logger);
      await app.primeTransfers();
      apps.push(app);
      const container: Container = lazyContainer(async () => app, options.logger);
      return { handler: handlerOf(container), close: () => app.close() };
    },
  });
  const authorizerFn = new LambdaFunction<AuthorizerHandler>('narwal-authorizer', {
    async start({ tmpDir }) {
      const { authorizerContainer, authorizerHandler } = await import('../../../functions/authorizer.js');
      const handler = authorizerHandler(authorizerContainer({ ...env, NARWAL_DATA: join(tmpDir, 'narwal') }));
      return { handler: handler as AuthorizerHandler, close: async () => {} };
    },
  });
  const authorizer =
    options.authorizer === false
      ? null
      : new GatewayAuthorizer({
          ...(options.authorizer ?? DEPLOYED_AUTHORIZER),
          invoke: (event) => authorizerFn.invoke((sandbox, context) => sandbox.handler(event, context)),
        });
  const api = await startApiGateway({
    fn,
    gatewayResponses: DEPLOYED_GATEWAY_RESPONSES,
    ...(authorizer ? { authorizer } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.chunkedRequests ? { chunkedRequests: options.chunkedRequests } : {}),
    ...(options.stream ? { stream: options.stream } : {}),
  });
  return {
    api,
    authorizer,
    apps,
    async stop() {
      await api.stop();
      await fn.stop();
      await authorizerFn.stop();
    },
  };
}

export interface Pool {
  readonly url: string;
  readonly requests: { readonly method: string; readonly path: string }[];
  readonly app: App;
  stop(): Promise<void>;
}

/** The pool: the same app and node server as `narwal serve`, on the same store and cache. */
export async function startPool(options: {
  dataDir: string;
  logger: Logger;
  env?: Record<string, string>;
}): Promise<Pool> {
  const config = loadConfig(
    { NARWAL_ADMIN_TOKEN: ADMIN_TOKEN, ...sharedEnv(options.dataDir), ...options.env },
    { dataDir: options.dataDir, port: 0 },
  );
  const app = await createApp(config, options.logger);
  await app.primeTransfers();
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

/** `narwal serve`: the local (or pool) server, with idle eviction of the shared cache. */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../../lib/app.js';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { createNodeServer } from '../../lib/http/nodeServer.js';
import { jsonLogger, serializeError } from '../../lib/log.js';
import type { ExitCode } from './context.js';

export async function serve(args: string[]): Promise<ExitCode> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, host: { type: 'string' }, data: { type: 'string' } },
  });
  const config = loadConfig(process.env, {
    ...(values.port !== undefined ? { port: portNumber(values.port) } : {}),
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(values.data !== undefined ? { dataDir: values.data } : {}),
  });
  // The admin token read from Secrets Manager joins the secrets the logs are scrubbed of.
  const secrets = [config.adminToken];
  const logger = jsonLogger({ quiet: config.quiet, secrets });
  const app = await createApp(config, logger);
  secrets.push(app.adminToken.value);
  await app.primeTransfers();
  await app.warmUp();
  const server = createNodeServer(app.handler, logger, {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    bodyIdleMs: config.bodyIdleMs,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = config.publicUrl ?? `http://${config.host}:${port}`;
  const tokenFile = join(config.dataDir, 'admin-token');
  // The admin token itself is never printed: server output ends up in logs.
  const credential = config.adminToken ? '$NARWAL_ADMIN_TOKEN' : `$(cat ${tokenFile})`;
  console.log(
    [
      `narwal listening on ${url} (store: ${config.store.kind === 'fs' ? config.store.root : `s3://${config.store.bucket}`})`,
      app.adminToken.generated ? `admin token generated and saved in ${tokenFile}` : '',
      'push a repository:',
      `  git push ${url.replace('://', `://admin:${credential}@`)}/me/project.git HEAD:main`,
      `  git clone ${url.replace('://', `://admin:${credential}@`)}/me/project.git`,
    ]
      .filter((line) => line !== '')
      .join('\n'),
  );
  // Idle eviction of the shared cache, as a scheduled function does it in Lambda.
  const sweeper = setInterval(
    () =>
      void app
        .sweep()
        .catch((error: unknown) => logger.warn('sweep failed', { error: serializeError(error) })),
    Math.min(config.idleEvictMs, 5 * 60_000),
  );
  sweeper.unref();
  // Event deliveries that ran out of retries (a receiver down) resume from their cursors.
  const catchUp = () =>
    void app
      .catchUpEvents()
      .catch((error: unknown) => logger.warn('event catch-up failed', { error: serializeError(error) }));
  const eventTimer = app.events ? setInterval(catchUp, config.events.catchUpMs) : undefined;
  eventTimer?.unref();
  if (app.events) catchUp();
  const stop = (signal: string) => {
    logger.warn('stopping', { signal });
    clearInterval(sweeper);
    clearInterval(eventTimer);
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // A stray rejection in background work (prewarm, checkpoint, lease renewal) must not take
  // the node down: log it and keep serving.
  process.on('unhandledRejection', (error) =>
    logger.error('unhandled rejection', { error: serializeError(error) }),
  );
  await new Promise<void>((resolve) => server.once('close', () => resolve()));
  await app.close();
  return 0;
}
function portNumber(raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`--port must be 0-65535, not ${raw}`);
  return port;
}

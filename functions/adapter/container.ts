/**
 * What one Lambda container builds once and reuses across invocations: the configuration, the
 * logger and the app with its store, presence and AWS clients. A failed start is not cached, so
 * the next invocation tries again.
 */
import { type App, createApp } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import { jsonLogger, type Logger, serializeError } from '../../lib/log.js';

export interface Container {
  /** For what the adapters themselves report; the app logs through its own. */
  readonly logger: Logger;
  app(): Promise<App>;
  /**
   * Waits for the app's background work. A container is frozen once its handler returns, so work
   * still running (the prewarm invocation after a push) must finish first.
   */
  idle(): Promise<void>;
}

export function lazyContainer(start: () => Promise<App>, logger: Logger): Container {
  let app: Promise<App> | undefined;
  let started: App | undefined;
  return {
    logger,
    app() {
      app ??= start().then(
        (ready) => {
          started = ready;
          return ready;
        },
        (error: unknown) => {
          app = undefined;
          throw error;
        },
      );
      return app;
    },
    async idle() {
      await started?.idle();
    },
  };
}

/**
 * The container of this process, configured from the environment. Its own logger reports what
 * happens before the app exists (warnings and errors are never quiet).
 */
export const container: Container = lazyContainer(async () => {
  const config = loadConfig();
  // The admin token read from Secrets Manager joins the secrets the logs are scrubbed of.
  const secrets = [config.adminToken];
  const app = await createApp(config, jsonLogger({ quiet: config.quiet, secrets }));
  secrets.push(app.adminToken.value);
  await app.primeTransfers();
  return app;
}, jsonLogger());

/**
 * Makes the app while Lambda runs the function's init phase, so the first invocation of an
 * execution environment finds it made instead of making it (the store's and the log's clients,
 * the cache directory, the admin token from Secrets Manager, git's v2 capability list). A handler module awaits this at its
 * top level; Lambda loads an ES module handler with its top-level awaits inside the init phase
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html, "Init phase",
 * and https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html#nodejs-initialization). Outside
 * Lambda (tests, the pool) it does nothing: `AWS_LAMBDA_FUNCTION_NAME` is one of the variables
 * Lambda sets in every execution environment. A failed start is logged, and the first invocation
 * tries again.
 */
export async function startInInit(from: Container, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (env.AWS_LAMBDA_FUNCTION_NAME === undefined) return;
  await from.app().catch((error: unknown) =>
    from.logger.error('start in the init phase failed; the first invocation tries again', {
      error: serializeError(error),
    }),
  );
}

import { describe, expect, it } from 'vitest';
import { lazyContainer, startInInit } from '../../../functions/adapter/container.js';
import type { App } from '../../../lib/app.js';
import type { Logger } from '../../../lib/log.js';

function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return { errors, info: () => {}, warn: () => {}, error: (message) => errors.push(message) };
}

describe('startInInit', () => {
  it('makes the app in a Lambda execution environment, once, for the invocations that follow', async () => {
    let starts = 0;
    const app = { idle: async () => {} } as unknown as App;
    const container = lazyContainer(async () => {
      starts++;
      return app;
    }, recordingLogger());
    await startInInit(container, { AWS_LAMBDA_FUNCTION_NAME: 'narwal-git' });
    expect(starts).toBe(1);
    expect(await container.app()).toBe(app);
    expect(starts).toBe(1);
  });

  it('does nothing outside Lambda, where the first request makes the app', async () => {
    let starts = 0;
    const container = lazyContainer(async () => {
      starts++;
      return {} as App;
    }, recordingLogger());
    await startInInit(container, {});
    expect(starts).toBe(0);
  });

  it('logs a failed start without failing the init phase, and the first invocation tries again', async () => {
    let starts = 0;
    const logger = recordingLogger();
    const container = lazyContainer(async () => {
      starts++;
      if (starts === 1) throw new Error('Secrets Manager unreachable');
      return {} as App;
    }, logger);
    await startInInit(container, { AWS_LAMBDA_FUNCTION_NAME: 'narwal-git' });
    expect(logger.errors).toEqual(['start in the init phase failed; the first invocation tries again']);
    await container.app();
    expect(starts).toBe(2);
  });
});

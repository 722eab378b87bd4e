/**
 * Secrets read at run time from Secrets Manager (the stand-in on its wire protocol, with the real
 * SDK client): a node configured with the secret's id, never its value, accepts the admin token
 * the secret holds, and signs webhook deliveries with the key its secret holds.
 */
import { createHmac } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsManagerStandIn, startSecretsManager } from '../helpers/aws/secretsManager.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { startInProcess, tempDataDir } from '../helpers/narwalServer.js';

const ADMIN_VALUE = 'admin-token-from-secrets-manager';
const WEBHOOK_KEY = 'webhook-key-from-secrets-manager';

let sm: SecretsManagerStandIn;
const saved = { id: process.env.AWS_ACCESS_KEY_ID, key: process.env.AWS_SECRET_ACCESS_KEY };

beforeAll(async () => {
  sm = await startSecretsManager();
  sm.put('narwal/admin', ADMIN_VALUE);
  sm.put('narwal/webhook', WEBHOOK_KEY);
  // The SDK signs its requests with the usual credentials, as on AWS with the role's.
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'example-secret';
});
afterAll(async () => {
  await sm?.stop();
  if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
  else process.env.AWS_ACCESS_KEY_ID = saved.id;
  if (saved.key === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  else process.env.AWS_SECRET_ACCESS_KEY = saved.key;
});

describe('secrets read at run time', () => {
  it('accepts the admin token its secret holds, and signs webhooks with the key its secret holds', async () => {
    const deliveries: { body: string; signature: string | undefined }[] = [];
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        deliveries.push({
          body: Buffer.concat(chunks).toString(),
          signature: req.headers['x-narwal-signature-256'] as string | undefined,
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    const address = receiver.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const dataDir = await tempDataDir();
    const node = await startInProcess({
      dataDir,
      env: {
        NARWAL_ADMIN_TOKEN: '',
        NARWAL_ADMIN_TOKEN_SECRET_ID: 'narwal/admin',
        NARWAL_SECRETS_MANAGER_ENDPOINT: sm.endpoint,
        NARWAL_WEBHOOK_URL: `http://127.0.0.1:${port}/hook`,
        NARWAL_WEBHOOK_SECRET_ID: 'narwal/webhook',
        NARWAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    try {
      const home = await makeHome();
      const work = await workRepo(home, 1, 'secret');
      const url = (token: string) => `${node.url.replace('://', `://admin:${token}@`)}/team/secret.git`;
      expect((await git(['push', url('test-admin-token'), 'main'], { cwd: work, home })).code).not.toBe(0);
      await gitOk(['push', '-q', url(ADMIN_VALUE), 'main'], { cwd: work, home });
      await node.app.idle();
      for (let i = 0; i < 50 && deliveries.length === 0; i++)
        await new Promise((done) => setTimeout(done, 100));
      const delivery = deliveries[0];
      expect(delivery?.signature).toBe(
        `sha256=${createHmac('sha256', WEBHOOK_KEY)
          .update(delivery?.body ?? '')
          .digest('hex')}`,
      );
      expect(sm.reads).toEqual(expect.arrayContaining(['narwal/admin', 'narwal/webhook']));
    } finally {
      await node.stop();
      receiver.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses to start with both a token and where to read one', async () => {
    const { loadConfig } = await import('../../lib/config.js');
    expect(() =>
      loadConfig({ NARWAL_ADMIN_TOKEN: 'a-token-of-sixteen-or-more', NARWAL_ADMIN_TOKEN_SECRET_ID: 'x' }),
    ).toThrow('set NARWAL_ADMIN_TOKEN or NARWAL_ADMIN_TOKEN_SECRET_ID, not both');
  });
});

/**
 * Secrets read at run time: the cache bounds (a value at most five minutes old, at most one read
 * per half minute whatever strangers do), and the Secrets Manager adapter with the real SDK client
 * against a stand-in on the service's wire protocol.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedSecret } from '../../../lib/secrets/Secret.js';
import { SecretUnavailable, secretsManagerSecret } from '../../../lib/secrets/SecretsManagerSecret.js';
import { type SecretsManagerStandIn, startSecretsManager } from '../../helpers/aws/secretsManager.js';

describe('cachedSecret', () => {
  it('reads again after maxAgeMs, refreshes at most every minAgeMs, and keeps no failed read', async () => {
    let now = 0;
    let reads = 0;
    let fail = false;
    const secret = cachedSecret({
      fetch: async () => {
        reads++;
        if (fail) throw new Error('down');
        return `v${reads}`;
      },
      maxAgeMs: 300_000,
      minAgeMs: 30_000,
      now: () => now,
    });
    expect(await secret.current()).toBe('v1');
    now = 10_000;
    expect(await secret.refresh()).toBe('v1');
    now = 40_000;
    expect(await secret.refresh()).toBe('v2');
    now = 339_000;
    expect(await secret.current()).toBe('v2');
    now = 341_000;
    fail = true;
    await expect(secret.current()).rejects.toThrow('down');
    fail = false;
    expect(await secret.current()).toBe('v4');
  });
});

describe('secretsManagerSecret', () => {
  let sm: SecretsManagerStandIn;
  let client: SecretsManagerClient;
  beforeAll(async () => {
    sm = await startSecretsManager();
    client = new SecretsManagerClient({
      endpoint: sm.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    client?.destroy();
    await sm?.stop();
  });

  it('reads the current value, and a rotated one once refreshed', async () => {
    sm.put('narwal/admin', 'first-value\n');
    const secret = secretsManagerSecret(client, 'narwal/admin', { minAgeMs: 0 });
    expect(await secret.current()).toBe('first-value');
    sm.put('narwal/admin', 'rotated-value');
    expect(await secret.current()).toBe('first-value');
    expect(await secret.refresh()).toBe('rotated-value');
    expect(sm.reads).toEqual(['narwal/admin', 'narwal/admin']);
  });

  it('names the secret it cannot read, with the service’s error as the cause', async () => {
    const error = await secretsManagerSecret(client, 'narwal/missing')
      .current()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretUnavailable);
    expect((error as Error).message).toBe('cannot read secret narwal/missing');
    expect(((error as Error).cause as Error).name).toBe('ResourceNotFoundException');
  });
});

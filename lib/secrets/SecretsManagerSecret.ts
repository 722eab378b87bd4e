/**
 * A secret in AWS Secrets Manager, read with GetSecretValue (the AWSCURRENT version) and cached
 * as the AWS Parameters and Secrets Lambda Extension does (5 minutes by default), so a rotated
 * value reaches every function and pool instance within that, or at once where a caller asks
 * for a refresh. https://docs.aws.amazon.com/secretsmanager/latest/userguide/retrieving-secrets_lambda.html
 */
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { type CachedSecretOptions, cachedSecret, type Secret } from './Secret.js';

export class SecretUnavailable extends Error {
  readonly code = 'SecretUnavailable';
  override readonly name = 'SecretUnavailable';
}

export function secretsManagerSecret(
  client: SecretsManagerClient,
  secretId: string,
  options: Omit<CachedSecretOptions, 'fetch'> = {},
): Secret {
  return cachedSecret({
    ...options,
    fetch: async () => {
      let value: string | undefined;
      try {
        value = (await client.send(new GetSecretValueCommand({ SecretId: secretId }))).SecretString;
      } catch (error) {
        throw new SecretUnavailable(`cannot read secret ${secretId}`, { cause: error });
      }
      if (!value) throw new SecretUnavailable(`secret ${secretId} has no string value`);
      return value.trim();
    },
  });
}

/**
 * A secret the configuration gives either as a value or as the id of a secret in AWS Secrets
 * Manager. The Secrets Manager SDK is loaded only when an id is configured, so the embedded default
 * starts without it; one client serves every secret of a process.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { fixedSecret, type Secret } from './Secret.js';

export interface SecretsManagerAccess {
  readonly region: string;
  readonly endpoint: string | undefined;
}

export class SecretsManagerClients {
  #client: Promise<SecretsManagerClient> | undefined;

  constructor(private readonly access: SecretsManagerAccess) {}

  async secret(secretId: string): Promise<Secret> {
    const [{ secretsManagerSecret }, client] = await Promise.all([
      import('./SecretsManagerSecret.js'),
      this.#get(),
    ]);
    return secretsManagerSecret(client, secretId);
  }

  #get(): Promise<SecretsManagerClient> {
    this.#client ??= import('@aws-sdk/client-secrets-manager').then(
      ({ SecretsManagerClient }) =>
        new SecretsManagerClient({
          region: this.access.region,
          ...(this.access.endpoint ? { endpoint: this.access.endpoint } : {}),
        }),
    );
    return this.#client;
  }
}

/** The value when the configuration has one, else the Secrets Manager secret it names. */
export async function configuredSecret(
  source: { readonly value: string | undefined; readonly secretId: string | undefined },
  clients: SecretsManagerClients,
): Promise<Secret | undefined> {
  if (source.value !== undefined) return fixedSecret(source.value);
  if (source.secretId !== undefined) return clients.secret(source.secretId);
  return undefined;
}

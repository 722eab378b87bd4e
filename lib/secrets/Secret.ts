/**
 * A secret narwal reads at run time (the admin token, the webhook signing key): from the
 * environment, or from AWS Secrets Manager so that it never sits in a function's configuration
 * (a `{{resolve:secretsmanager:...}}` in a template becomes a plain environment variable that
 * anyone who may read the function's configuration sees, and is not updated on rotation:
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references-secretsmanager.html).
 */
export interface Secret {
  /** The current value (cached by the source, at most `maxAgeMs` old). */
  current(): Promise<string>;
  /**
   * Reads the value again if the cached one is older than `minAgeMs`, for a caller that has a
   * reason to think it was rotated (a presented admin token that did not match). Returns it.
   */
  refresh(): Promise<string>;
}

/** A value known at start, e.g. from the environment: never changes. */
export function fixedSecret(value: string): Secret {
  return { current: async () => value, refresh: async () => value };
}

/** How a source fetches the value; it throws when it cannot. */
export type SecretFetch = () => Promise<string>;

export interface CachedSecretOptions {
  readonly fetch: SecretFetch;
  /** A value is used this long before it is read again (the Lambda extension's default: 300 s). */
  readonly maxAgeMs?: number;
  /** `refresh()` reads again only when the value is older than this (a bound on reads a stranger can cause). */
  readonly minAgeMs?: number;
  readonly now?: () => number;
}

/** A fetched secret, cached: read at most every `minAgeMs`, and again after `maxAgeMs`. */
export function cachedSecret(options: CachedSecretOptions): Secret {
  const now = options.now ?? Date.now;
  const maxAgeMs = options.maxAgeMs ?? 300_000;
  const minAgeMs = options.minAgeMs ?? 30_000;
  let held: { value: Promise<string>; at: number } | undefined;
  const read = (): Promise<string> => {
    const at = now();
    const value = options.fetch();
    held = { value, at };
    // A failed read is not kept: the next caller tries again.
    value.catch(() => {
      if (held?.value === value) held = undefined;
    });
    return value;
  };
  return {
    current: () => (held && now() - held.at < maxAgeMs ? held.value : read()),
    refresh: () => (held && now() - held.at < minAgeMs ? held.value : read()),
  };
}

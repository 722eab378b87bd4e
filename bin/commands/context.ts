/**
 * What the management commands share: the configured store and the log, without a node's cache or
 * git, so they behave the same against the embedded store and against S3.
 */
import { TokenStore } from '../../lib/auth/TokenStore.js';
import { loadConfig } from '../../lib/config.js';
import { createObjectStore } from '../../lib/store/createObjectStore.js';
import type { ObjectStore } from '../../lib/store/ObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';

export interface CliContext {
  readonly store: ObjectStore;
  readonly wal: Wal;
  readonly tokens: TokenStore;
}

export async function cliContext(): Promise<CliContext> {
  const config = loadConfig();
  const store = await createObjectStore(config);
  // A command reads the store afresh every time: nothing to cache across requests. It checks no
  // presented token, so it needs no admin token, and must not make one: only `narwal serve`
  // generates the data directory's admin token, when none is configured.
  const tokens = new TokenStore(store, undefined, { cacheMs: 0 });
  return { store, wal: new Wal(store), tokens };
}

/** A command's exit status: 0 success, 1 failure, 2 usage error. */
export type ExitCode = 0 | 1 | 2;

export class UsageError extends Error {
  readonly code = 'UsageError';
}

/**
 * Presence records live where every node sharing the cache directory can see them: DynamoDB in
 * AWS, a directory beside the shared cache otherwise. The DynamoDB SDK is loaded only when
 * configured.
 */
import { join } from 'node:path';
import { FsObjectStore } from '../store/FsObjectStore.js';
import { type StoreSpanSink, TracingObjectStore } from '../store/TracingObjectStore.js';
import { ObjectPresenceStore } from './ObjectPresenceStore.js';
import type { PresenceStore } from './PresenceStore.js';

export type PresenceConfig = { readonly kind: 'local' } | PresenceDynamoConfig;

export interface PresenceDynamoConfig {
  readonly kind: 'dynamodb';
  readonly table: string;
  readonly region: string;
  readonly endpoint: string | undefined;
}

export interface PresenceSettings {
  readonly presence: PresenceConfig;
  /** The shared cache: local records live in `presence/` beside it. */
  readonly cacheDir: string;
}

export async function createPresenceStore(
  settings: PresenceSettings,
  now: () => number = Date.now,
  trace?: StoreSpanSink,
): Promise<PresenceStore> {
  const { presence } = settings;
  if (presence.kind === 'local') {
    // Records come and go under one directory per repository: keep those directories.
    const local = new FsObjectStore(join(settings.cacheDir, 'presence'), { keepEmptyDirs: true });
    return new ObjectPresenceStore({
      store: trace ? new TracingObjectStore(local, 'presence', trace) : local,
      now,
    });
  }
  const [{ DynamoDBClient }, { DynamoPresenceStore }] = await Promise.all([
    import('@aws-sdk/client-dynamodb'),
    import('./DynamoPresenceStore.js'),
  ]);
  return new DynamoPresenceStore({
    client: new DynamoDBClient({
      region: presence.region,
      ...(presence.endpoint ? { endpoint: presence.endpoint } : {}),
    }),
    table: presence.table,
    now,
  });
}

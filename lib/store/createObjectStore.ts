/**
 * The object store the configuration names: the embedded filesystem store or S3 (any
 * S3-compatible store with conditional writes), behind the fault decorator when latency or faults
 * are injected. The S3 SDK is loaded only when configured, so the embedded default starts
 * without it.
 */

import { FaultyObjectStore } from './FaultyObjectStore.js';
import { FsObjectStore } from './FsObjectStore.js';
import type { FaultRule } from './faultSpec.js';
import type { ObjectStore } from './ObjectStore.js';

export type StoreConfig = { readonly kind: 'fs'; readonly root: string } | S3Config;

export interface S3Config {
  readonly kind: 's3';
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly forcePathStyle: boolean;
}

export interface StoreSettings {
  readonly store: StoreConfig;
  /** Added to every operation (stands in for S3's round trips). */
  readonly storeLatencyMs: number;
  readonly storeFaults: readonly FaultRule[];
}

export async function createObjectStore(
  settings: StoreSettings,
  onFault?: (fault: FaultRule, key: string) => void,
): Promise<ObjectStore> {
  const { store } = settings;
  let base: ObjectStore;
  if (store.kind === 'fs') {
    base = new FsObjectStore(store.root);
  } else {
    const [{ S3Client }, { S3ObjectStore }] = await Promise.all([
      import('@aws-sdk/client-s3'),
      import('./S3ObjectStore.js'),
    ]);
    base = new S3ObjectStore({
      client: new S3Client({
        region: store.region,
        forcePathStyle: store.forcePathStyle,
        // Checksums only where S3 requires them: S3-compatible stores (Ceph RGW 16) refuse the
        // default streamed-upload checksums with 411.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        ...(store.endpoint ? { endpoint: store.endpoint } : {}),
      }),
      bucket: store.bucket,
      prefix: store.prefix,
    });
  }
  if (settings.storeLatencyMs === 0 && settings.storeFaults.length === 0) return base;
  return new FaultyObjectStore(base, {
    latencyMs: settings.storeLatencyMs,
    faults: settings.storeFaults,
    ...(onFault ? { onFault } : {}),
  });
}

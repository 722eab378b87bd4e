/**
 * `GET /healthz`: whether this node can do its work, for the load balancer (the pool's target
 * group checks every 15 s and takes a failing instance out) and for the pool's start-up signal.
 * It asks each dependency one cheap question: the store (a HEAD of a key that need not exist),
 * the presence table (a read of a record that need not exist) and the shared cache (a file
 * written and removed: EFS mounted and writable). Answers are kept for a few seconds, so the
 * checks cost the same however many load balancer nodes ask.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PresenceStore } from '../presence/PresenceStore.js';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';

export interface HealthReport {
  readonly ok: boolean;
  /** Each check: `ok`, or the name of the error that failed it (never its message: no secrets). */
  readonly checks: Readonly<Record<'store' | 'presence' | 'cache', string>>;
}

export interface HealthDeps {
  readonly store: ObjectStore;
  readonly presence: PresenceStore;
  readonly cacheDir: string;
  readonly now?: () => number;
  /** How long a report is reused (default 5 s). */
  readonly reuseMs?: number;
}

export type HealthCheck = () => Promise<HealthReport>;

const PROBE_KEY = 'health/probe';

export function healthCheck(deps: HealthDeps): HealthCheck {
  const now = deps.now ?? Date.now;
  let last: { at: number; report: Promise<HealthReport> } | undefined;
  return () => {
    if (last && now() - last.at < (deps.reuseMs ?? 5_000)) return last.report;
    last = { at: now(), report: run(deps) };
    return last.report;
  };
}

async function run(deps: HealthDeps): Promise<HealthReport> {
  const [store, presence, cache] = await Promise.all([
    outcome(async () => {
      try {
        await deps.store.head(PROBE_KEY);
      } catch (error) {
        if (!isStoreError(error, 'NotFound')) throw error;
      }
    }),
    outcome(() => deps.presence.get('health', 'probe').then(() => undefined)),
    outcome(async () => {
      const dir = join(deps.cacheDir, 'health');
      await mkdir(dir, { recursive: true });
      const file = join(dir, `probe-${randomBytes(8).toString('hex')}`);
      await writeFile(file, 'ok');
      await rm(file, { force: true });
    }),
  ]);
  return { ok: store === 'ok' && presence === 'ok' && cache === 'ok', checks: { store, presence, cache } };
}

async function outcome(check: () => Promise<void>): Promise<string> {
  try {
    await check();
    return 'ok';
  } catch (error) {
    if (error instanceof Error)
      return 'code' in error && typeof error.code === 'string' ? error.code : error.name;
    return 'failed';
  }
}

/**
 * The scheduled maintenance function: idle eviction of the shared cache, and checkpoints of the
 * repositories in it that are due one (after a push, the prewarm function makes them; this
 * catches whatever a lost or throttled invocation left), catching up event deliveries from
 * their cursors, and the orphan sweep of the store (objects no index names, older than
 * NARWAL_SWEEP_RETENTION_MS).
 */
import middy from '@middy/core';
import type { ScheduledEvent } from 'aws-lambda';
import type { App } from '../lib/app.js';
import { cachedRepositories } from '../lib/cache/evict.js';
import { mapLimit } from '../lib/util/mapLimit.js';
import { sweepOrphans } from '../lib/wal/sweepOrphans.js';
import { type Container, container } from './adapter/container.js';

export interface MaintenanceOutcome {
  readonly evicted: { readonly generations: number; readonly repositories: number };
  /** Repositories whose checkpoint policy was checked (and applied when due). */
  readonly checked: number;
  /** Orphans the store sweep deleted, and unnamed objects it kept for being too young. */
  readonly orphans: { readonly deleted: number; readonly young: number };
  /** Events delivered by catching up from the cursors (deliveries a failure left behind). */
  readonly events: number;
}

/** Checkpoints are repacks: a few at a time leave the function's CPU to each of them. */
const CHECKPOINT_CONCURRENCY = 2;

export function maintenanceHandler(from: Container) {
  return middy<ScheduledEvent | Record<string, never>, MaintenanceOutcome>(
    async (): Promise<MaintenanceOutcome> => {
      const app = await from.app();
      const evicted = await app.sweep();
      const checked = await checkpointDue(app, from);
      const progress = await app.catchUpEvents();
      for (const p of progress) if (p.error) from.logger.warn('event delivery stopped', { ...p });
      const swept = await sweepOrphans(app.wal, { retentionMs: app.config.sweepRetentionMs, dryRun: false });
      for (const r of swept.repos) {
        if (r.missing.length > 0)
          from.logger.error('the log names missing objects', {
            repo: r.repo,
            missing: r.missing.slice(0, 20),
          });
      }
      if (swept.deleted > 0) from.logger.info('store swept', { deleted: swept.deleted, young: swept.young });
      return {
        evicted,
        checked,
        events: progress.reduce((sum, p) => sum + p.delivered, 0),
        orphans: { deleted: swept.deleted, young: swept.young },
      };
    },
    { requestEnd: () => from.idle() },
  );
}

async function checkpointDue(app: App, from: Container): Promise<number> {
  const repos = await cachedRepositories(app.config.cacheDir);
  // One repository's failure never stops the rest; the next run tries it again.
  await mapLimit(repos, CHECKPOINT_CONCURRENCY, async (repo) => {
    try {
      const loaded = await app.wal.readIndex(repo);
      if (loaded !== null) await app.checkpointer.maybe(repo, loaded);
    } catch (error) {
      from.logger.warn('maintenance skipped a repository', { repo, error: String(error) });
    }
  });
  return repos.length;
}

export const handler = maintenanceHandler(container);

/**
 * The scheduled maintenance function: idle eviction of the shared cache, and checkpoints of the
 * repositories in it that are due one (after a push, the prewarm function makes them; this
 * catches whatever a lost or throttled invocation left), catching up event deliveries from
 * their cursors, and the orphan sweep of the store (objects no index names, older than
 * NARWAL_SWEEP_RETENTION_MS).
 *
 * Runs one at a time (the deployment reserves a concurrency of 1 for it) and within its own
 * time: no checkpoint starts when too little of the invocation is left for a repack, and the
 * sweep stops between repositories and leaves a cursor in the store that the next run resumes
 * from, so a store too large for one run is swept over several.
 */
import middy from '@middy/core';
import type { Context, ScheduledEvent } from 'aws-lambda';
import type { App } from '../lib/app.js';
import { cachedRepositories } from '../lib/cache/evict.js';
import { serializeError } from '../lib/log.js';
import { isStoreError } from '../lib/store/errors.js';
import { mapLimit } from '../lib/util/mapLimit.js';
import { sweepOrphans } from '../lib/wal/sweepOrphans.js';
import { type Container, container, startInInit } from './adapter/container.js';

export interface MaintenanceOutcome {
  readonly evicted: { readonly generations: number; readonly repositories: number };
  /** Repositories whose checkpoint policy was checked (and applied when due). */
  readonly checked: number;
  /** Orphans the store sweep deleted, and unnamed objects it kept for being too young. */
  readonly orphans: { readonly deleted: number; readonly young: number };
  /** Repositories the sweep went through in this run. */
  readonly sweptRepositories: number;
  /** Where the sweep stopped for lack of time (the next run resumes after it), if it did. */
  readonly sweepStoppedAfter: string | null;
  /** Repositories whose checkpoint was not looked at for lack of time. */
  readonly checkpointsDeferred: number;
  /** Events delivered by catching up from the cursors (deliveries a failure left behind). */
  readonly events: number;
}

/** Checkpoints are repacks: a few at a time leave the function's CPU to each of them. */
const CHECKPOINT_CONCURRENCY = 2;
/** No checkpoint starts with less of the invocation left: a repack of a large repository takes minutes. */
export const CHECKPOINT_RESERVE_MS = 5 * 60_000;
/** The sweep starts no repository with less left than this. */
export const SWEEP_RESERVE_MS = 60_000;
/** Where a bounded sweep stopped (outside `repos/`, so no sweep ever considers it). */
export const SWEEP_CURSOR_KEY = 'maintenance/sweep-cursor.json';

export function maintenanceHandler(from: Container) {
  return middy<ScheduledEvent | Record<string, never>, MaintenanceOutcome>(
    async (_event: unknown, context: Context): Promise<MaintenanceOutcome> => {
      const app = await from.app();
      const left = () => context.getRemainingTimeInMillis();
      const evicted = await app.sweep();
      const { checked, deferred } = await checkpointDue(app, from, () => left() < CHECKPOINT_RESERVE_MS);
      const progress = await app.catchUpEvents();
      for (const p of progress) if (p.error) from.logger.warn('event delivery stopped', { ...p });
      const startAfter = await readCursor(app);
      const swept = await sweepOrphans(app.wal, {
        retentionMs: app.config.sweepRetentionMs,
        dryRun: false,
        stop: () => left() < SWEEP_RESERVE_MS,
        ...(startAfter !== undefined ? { startAfter } : {}),
      });
      await writeCursor(app, swept.resumeAfter);
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
        checkpointsDeferred: deferred,
        events: progress.reduce((sum, p) => sum + p.delivered, 0),
        orphans: { deleted: swept.deleted, young: swept.young },
        sweptRepositories: swept.repos.length,
        sweepStoppedAfter: swept.resumeAfter ?? null,
      };
    },
    { requestEnd: () => from.idle() },
  );
}

async function checkpointDue(
  app: App,
  from: Container,
  outOfTime: () => boolean,
): Promise<{ checked: number; deferred: number }> {
  const repos = await cachedRepositories(app.config.cacheDir);
  let deferred = 0;
  // One repository's failure never stops the rest; the next run tries it again.
  await mapLimit(repos, CHECKPOINT_CONCURRENCY, async (repo) => {
    if (outOfTime()) {
      deferred++;
      return;
    }
    try {
      const loaded = await app.wal.readIndex(repo);
      if (loaded !== null) await app.checkpointer.maybe(repo, loaded);
    } catch (error) {
      from.logger.warn('maintenance skipped a repository', { repo, error: serializeError(error) });
    }
  });
  return { checked: repos.length - deferred, deferred };
}

/** The repository a bounded sweep stopped after, if the last run stopped early. */
async function readCursor(app: App): Promise<string | undefined> {
  try {
    const got = await app.store.get(SWEEP_CURSOR_KEY);
    if (got.notModified) return undefined;
    const cursor = JSON.parse(got.body.toString('utf8')) as { after?: unknown };
    return typeof cursor.after === 'string' ? cursor.after : undefined;
  } catch (error) {
    if (isStoreError(error, 'NotFound') || error instanceof SyntaxError) return undefined;
    throw error;
  }
}

/** Remembers where the sweep stopped, or that it went through (the next run starts over). */
async function writeCursor(app: App, after: string | undefined): Promise<void> {
  const body = Buffer.from(JSON.stringify(after === undefined ? {} : { after }));
  await app.store.put(SWEEP_CURSOR_KEY, body, { contentType: 'application/json' });
}

export const handler = maintenanceHandler(container);

await startInInit(container);

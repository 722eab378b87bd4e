/**
 * Which server takes a transfer: Lambda, or the pool of long-running servers. Pure policy.
 *
 * Lambda carries at most 6 MB per buffered request or response (a streamed response more, but
 * throttled after the first megabytes), and API Gateway never streams a request. git follows a
 * redirect only on its first request, `GET info/refs`, and then sends its POST to the redirected
 * base URL (http.followRedirects=initial, git-config(1)), so the route of a whole transfer is
 * chosen there, before its size is known: from the log's record of the repository.
 */
import type { LogItem, RepoIndex } from '../wal/types.js';

export type TransferService = 'git-upload-pack' | 'git-receive-pack';

export interface RouteLimits {
  /** A clone whose estimated pack is larger goes to the pool. */
  readonly maxCloneBytes: number;
  /** Pushes go to the pool once a recent push was larger than this. */
  readonly maxPushBytes: number;
}

export interface RouteInput {
  readonly service: TransferService;
  /** The repository's index, or null when it does not exist. */
  readonly index: RepoIndex | null;
  /** For a fetch: the log items after the index's checkpoint (all of them without one). */
  readonly itemsAfterCheckpoint: readonly Pick<LogItem, 'bytes'>[];
  /** For a push: the newest log items (RECENT_PUSHES of them, or all when the log is shorter). */
  readonly recentItems: readonly Pick<LogItem, 'updates' | 'bytes'>[];
  /** The client asked for the pool (see CLIENT_ROUTE_HEADER). */
  readonly clientAsked: boolean;
  /** For a push: one to this repository was too large for one request lately (chunkedPushes.ts). */
  readonly chunkedPushNoted?: boolean;
  readonly limits: RouteLimits;
}

export interface RouteDecision {
  readonly target: 'lambda' | 'pool';
  readonly reason: string;
}

/** `git -c http.extraHeader="X-Narwal-Route: pool" clone URL` sends the whole transfer to the pool. */
export const CLIENT_ROUTE_HEADER = 'x-narwal-route';

/** How many of the newest pushes speak for the size of the next one. */
export const RECENT_PUSHES = 10;

export function decideTransferRoute(input: RouteInput): RouteDecision {
  if (input.clientAsked) return { target: 'pool', reason: 'the client asked for the pool' };
  const { index, limits } = input;
  if (input.service === 'git-upload-pack') {
    // A missing repository is answered where the request is (401 or 404): nothing to transfer.
    if (index === null) return { target: 'lambda', reason: 'no such repository' };
    const estimate = estimatePackBytes(index, input.itemsAfterCheckpoint);
    return estimate > limits.maxCloneBytes
      ? {
          target: 'pool',
          reason: `estimated pack of ${estimate} bytes exceeds ${limits.maxCloneBytes}`,
        }
      : { target: 'lambda', reason: `estimated pack of ${estimate} bytes` };
  }
  // The first push into a repository is usually an import of its whole history.
  if (index === null || index.seq === 0) return { target: 'pool', reason: 'push to an empty repository' };
  const largest = largestRecentPush(input.recentItems);
  if (largest > limits.maxPushBytes)
    return { target: 'pool', reason: `a recent push of ${largest} bytes exceeds ${limits.maxPushBytes}` };
  if (input.chunkedPushNoted)
    return { target: 'pool', reason: 'a push too large for one request was refused lately' };
  return { target: 'lambda', reason: `recent pushes at most ${largest} bytes` };
}

/**
 * An upper bound on a full clone's pack: the checkpoint's consolidated pack plus every pack pushed
 * after it (git's deltas across them only make the real pack smaller). Items logged without a
 * size count as empty.
 */
export function estimatePackBytes(index: RepoIndex, itemsAfterCheckpoint: readonly Pick<LogItem, 'bytes'>[]) {
  return (
    (index.checkpoint?.bytes ?? 0) + itemsAfterCheckpoint.reduce((sum, item) => sum + (item.bytes ?? 0), 0)
  );
}

/** The largest of the newest RECENT_PUSHES pushes among `recentItems` (the newest log items). */
export function largestRecentPush(recentItems: readonly Pick<LogItem, 'updates' | 'bytes'>[]): number {
  const pushes = recentItems.filter((item) => item.updates.length > 0).slice(-RECENT_PUSHES);
  return pushes.reduce((max, item) => Math.max(max, item.bytes ?? 0), 0);
}

/**
 * The request's URL on the pool: same path and query, so git's `/info/refs?service=...` suffix
 * survives and git takes the pool's URL as the base for its POST.
 */
export function poolLocation(poolUrl: string, path: string, query: URLSearchParams): string {
  const search = query.toString();
  return `${poolUrl}${path.startsWith('/') ? path : `/${path}`}${search === '' ? '' : `?${search}`}`;
}

/** The client's answer in CLIENT_ROUTE_HEADER: absent, or `pool`; anything else is an error. */
export function parseClientRoute(value: string | undefined): 'pool' | null | 'invalid' {
  if (value === undefined) return null;
  const trimmed = value.trim().toLowerCase();
  if (trimmed === '') return null;
  return trimmed === 'pool' ? 'pool' : 'invalid';
}

/**
 * The prewarm function, invoked asynchronously after a publish (lib/lambda/LambdaPrewarmTrigger.ts):
 * builds the generation of the repository's current index in the shared cache and makes a
 * checkpoint when one is due. The event is only a hint: the index is read again here, and a
 * reader still proves freshness itself. Bad events are logged and dropped, not thrown: Lambda
 * would retry an asynchronous invocation that fails.
 */
import middy from '@middy/core';
import { inProcessPrewarm } from '../lib/cache/prewarmTrigger.js';
import type { PrewarmEvent } from '../lib/lambda/LambdaPrewarmTrigger.js';
import { InvalidRepoName, parseRepoName } from '../lib/repoName.js';
import { type Container, container, startInInit } from './adapter/container.js';

export type PrewarmOutcome =
  | { readonly repo: string; readonly built: true; readonly seq: number }
  | { readonly repo: string | null; readonly built: false; readonly reason: string };

export function prewarmHandler(from: Container) {
  return middy<Partial<PrewarmEvent>, PrewarmOutcome>(
    async (event: Partial<PrewarmEvent>): Promise<PrewarmOutcome> => {
      const repo = repoOf(event);
      if (repo === null) {
        from.logger.warn('prewarm event without a valid repository', {
          event: JSON.stringify(event).slice(0, 200),
        });
        return { repo: null, built: false, reason: 'invalid event' };
      }
      const app = await from.app();
      const loaded = await app.wal.readIndex(repo);
      if (loaded === null) return { repo, built: false, reason: 'no such repository' };
      await inProcessPrewarm(app).trigger(repo, loaded);
      return { repo, built: true, seq: loaded.index.seq };
    },
    { requestEnd: () => from.idle() },
  );
}

function repoOf(event: Partial<PrewarmEvent> | null | undefined): string | null {
  if (typeof event?.repo !== 'string') return null;
  try {
    return parseRepoName(event.repo);
  } catch (error) {
    if (error instanceof InvalidRepoName) return null;
    throw error;
  }
}

export const handler = prewarmHandler(container);

await startInInit(container);

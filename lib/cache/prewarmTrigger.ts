/**
 * What follows a publish, off the push's path: building the generation of the new index (so the
 * next fetch finds it) and, when the policy says one is due, a checkpoint. Only a hint: a reader
 * still proves freshness by reading the index, and builds what is missing itself.
 *
 * A long-running server does this in its own process. A Lambda function cannot: its container is
 * frozen once it has answered, so work left running would stall, holding its writer lock until
 * the lock lapses. There the trigger invokes the prewarm function asynchronously instead
 * (lib/lambda/LambdaPrewarmTrigger.ts), which does the same work in an invocation of its own.
 */
import type { LoadedIndex } from '../wal/types.js';
import type { CacheTarget } from './RepoCache.js';

export interface PrewarmTrigger {
  /** Never rejects: a failure is logged and the next reader does the work. */
  trigger(repo: string, loaded: LoadedIndex): Promise<void>;
}

/** The work itself, as the prewarm function and a long-running server run it. */
export interface PrewarmWork {
  readonly cache: { target(loaded: LoadedIndex): CacheTarget; prewarm(target: CacheTarget): Promise<void> };
  readonly checkpointer: { maybe(repo: string, loaded: LoadedIndex): Promise<void> };
  /** Makes what the state's first clones would otherwise wait for (transfer/plansAhead.ts); never rejects. */
  readonly plansAhead?: ((target: CacheTarget) => Promise<void>) | undefined;
}

export function inProcessPrewarm(work: PrewarmWork): PrewarmTrigger {
  return {
    async trigger(repo, loaded) {
      // All log and swallow their own failures; the checkpoint reuses the generation just built.
      const target = work.cache.target(loaded);
      await work.cache.prewarm(target);
      await work.plansAhead?.(target);
      await work.checkpointer.maybe(repo, loaded);
    },
  };
}

import type { CacheTarget } from '../cache/RepoCache.js';
import type { LoadedIndex } from '../wal/types.js';

/** How the cache names the states a transfer reads (RepoCache). */
export interface StateTargets {
  target(loaded: LoadedIndex): CacheTarget;
  targetAt(loaded: LoadedIndex, seq: number): Promise<CacheTarget>;
}

/** The state a transfer reads: the current index, or the state after entry `at` (`REPO.git@SEQ`). */
export function targetFor(
  cache: StateTargets,
  loaded: LoadedIndex,
  at: number | undefined,
): Promise<CacheTarget> {
  return at === undefined ? Promise.resolve(cache.target(loaded)) : cache.targetAt(loaded, at);
}

/**
 * The repositories in a store, in name order. The store has no directory listing, so this skips
 * from one repository's keys to the next with one short list and one head per repository: the
 * cost follows the number of repositories, not the number of objects they hold.
 */
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { indexKey, REPOS_PREFIX } from './keys.js';

/** Sorts after every key under a repository's prefix (keys are ASCII). */
const PAST_REPO = '\u{10ffff}';

export async function listRepos(store: ObjectStore, options: { limit?: number } = {}): Promise<string[]> {
  const limit = options.limit ?? 1000;
  const repos: string[] = [];
  let startAfter: string | undefined;
  while (repos.length < limit) {
    const page = await store.list(REPOS_PREFIX, { limit: 1, ...(startAfter ? { startAfter } : {}) });
    const key = page.keys[0];
    if (key === undefined) break;
    const match = /^repos\/(.+?)\.git\//.exec(key);
    if (match === null) {
      startAfter = key;
      continue;
    }
    const repo = match[1] as string;
    if (await exists(store, indexKey(repo))) repos.push(repo);
    startAfter = `${REPOS_PREFIX}${repo}.git/${PAST_REPO}`;
  }
  return repos;
}

async function exists(store: ObjectStore, key: string): Promise<boolean> {
  try {
    await store.head(key);
    return true;
  } catch (error) {
    if (isStoreError(error, 'NotFound')) return false;
    throw error;
  }
}

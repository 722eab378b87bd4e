/** Where a repository's log lives in the object store. `repo` is a validated `owner/name` or `name`. */
export function repoPrefix(repo: string): string {
  return `repos/${repo}.git/`;
}

export const indexKey = (repo: string) => `${repoPrefix(repo)}index.json`;
export const entryKey = (repo: string, sha: string) => `${repoPrefix(repo)}entries/${sha}.json`;
export const tableKey = (repo: string, sha: string) => `${repoPrefix(repo)}tables/${sha}.json`;
export const segmentKey = (repo: string, sha: string) => `${repoPrefix(repo)}segments/${sha}.json`;
export const checkpointKey = (repo: string, sha: string) => `${repoPrefix(repo)}checkpoints/${sha}.json`;
export const packKey = (repo: string, pack: string, ext: 'pack' | 'idx' | 'bitmap') =>
  `${repoPrefix(repo)}packs/${pack}.${ext}`;
export const REPOS_PREFIX = 'repos/';

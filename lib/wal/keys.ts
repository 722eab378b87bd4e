/** Where a repository's log lives in the object store. `repo` is a validated `owner/name` or `name`. */
import { createHash } from 'node:crypto';

export function repoPrefix(repo: string): string {
  return `repos/${repo}.git/`;
}

/**
 * A short id of one incarnation of a repository (its creation time), so that a repository
 * deleted and created again never reads the old one's pages or cache.
 */
export function incarnationId(created: string): string {
  return createHash('sha256').update(created).digest('hex').slice(0, 12);
}

export const indexKey = (repo: string) => `${repoPrefix(repo)}index.json`;
export const entryKey = (repo: string, sha: string) => `${repoPrefix(repo)}entries/${sha}.json`;
export const tableKey = (repo: string, sha: string) => `${repoPrefix(repo)}tables/${sha}.json`;
export const pageKey = (repo: string, created: string, page: number) =>
  `${repoPrefix(repo)}log/${incarnationId(created)}/${String(page).padStart(10, '0')}.json`;
export const chunkKey = (repo: string, created: string, chunk: number) =>
  `${repoPrefix(repo)}log/${incarnationId(created)}/chunk-${String(chunk).padStart(10, '0')}.json`;
export const checkpointKey = (repo: string, sha: string) => `${repoPrefix(repo)}checkpoints/${sha}.json`;
export const packKey = (repo: string, pack: string, ext: 'pack' | 'idx' | 'bitmap') =>
  `${repoPrefix(repo)}packs/${pack}.${ext}`;
export const REPOS_PREFIX = 'repos/';

/**
 * A repository's Git LFS objects, beside its log under `lfs/`: objects addressed by their SHA-256
 * (the LFS oid), immutable and created only once; uploads narwal must still check, at a key per
 * upload under `incoming/`; lock tables under `locks/`, content-addressed and named by the index.
 */
export const lfsPrefix = (repo: string) => `${repoPrefix(repo)}lfs/`;
export const lfsObjectsPrefix = (repo: string) => `${lfsPrefix(repo)}objects/`;
export const lfsObjectKey = (repo: string, oid: string) => `${lfsObjectsPrefix(repo)}${oid}`;
export const lfsIncomingPrefix = (repo: string) => `${lfsPrefix(repo)}incoming/`;
export const lfsIncomingKey = (repo: string, oid: string, upload: string) =>
  `${lfsIncomingPrefix(repo)}${oid}/${upload}`;
export const lfsLocksPrefix = (repo: string) => `${lfsPrefix(repo)}locks/`;
export const lfsLocksKey = (repo: string, sha: string) => `${lfsLocksPrefix(repo)}${sha}.json`;
/** Where a store is probed once for whether it checks SHA-256 checksums (Presigner.verifiesChecksums). */
export const lfsChecksumProbeKey = (repo: string) => `${lfsIncomingPrefix(repo)}checksum-probe`;

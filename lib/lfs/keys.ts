/**
 * Where a repository's Git LFS objects live in the store: beside its log, under
 * `repos/<repo>.git/lfs/`. Objects are addressed by their SHA-256 (the LFS oid), so they are
 * immutable and created only once; uploads that narwal must still check land under `incoming/`
 * first (a key per upload), lock tables under `locks/` (content-addressed, named by the index).
 */
import { repoPrefix } from '../wal/keys.js';

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

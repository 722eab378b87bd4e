/**
 * Where a repository's cache lives in the shared cache directory (EFS in production, a local
 * directory here), shared by every node and invocation:
 *
 *   repos/<repo>.git/<incarnation>/objects/         one add-only object store (packs from the log)
 *   repos/<repo>.git/<incarnation>/gens/<seq>-<etag>/  immutable bare repos, one per index etag,
 *                                                     borrowing the objects through alternates
 *
 * The incarnation is derived from the index's creation time, so a repository deleted and created
 * again never sees the old one's objects.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { LoadedIndex } from '../wal/types.js';

export function incarnationDir(root: string, repo: string, created: string): string {
  return join(root, 'repos', `${repo}.git`, `i-${shortHash(created)}`);
}

export function objectsDir(incarnation: string): string {
  return join(incarnation, 'objects');
}

export function gensDir(incarnation: string): string {
  return join(incarnation, 'gens');
}

/** Sortable by sequence number, unique per etag. */
export function generationName(loaded: LoadedIndex): string {
  return `${String(loaded.index.seq).padStart(12, '0')}-${shortHash(loaded.etag)}`;
}

/** The generation of the state after entry `seq`, whatever index names it (it never changes). */
export function pastGenerationName(seq: number): string {
  return `${String(seq).padStart(12, '0')}-${shortHash(`state after ${seq}`)}`;
}

export function generationSeq(name: string): number | undefined {
  const match = /^(\d{12})-[0-9a-f]{12}$/.exec(name);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

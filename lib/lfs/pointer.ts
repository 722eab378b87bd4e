/**
 * Git LFS pointer files and object ids, as the specification defines them:
 * https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md
 *
 *   version https://git-lfs.github.com/spec/v1
 *   oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393
 *   size 12345
 *
 * "version" comes first, the other keys in order, each line `key value\n`. git-lfs treats only
 * blobs smaller than 1024 bytes as possible pointers, and so does narwal.
 */

/** Blobs this size or larger are never pointers (git-lfs's blobSizeCutoff). */
export const MAX_POINTER_BYTES = 1024;

/** The versions git-lfs reads: the current one and the one from before it was renamed (hawser). */
const VERSIONS = new Set(['https://git-lfs.github.com/spec/v1', 'https://hawser.github.com/spec/v1']);

const OID = /^[0-9a-f]{64}$/;

export function isOid(value: unknown): value is string {
  return typeof value === 'string' && OID.test(value);
}

export interface Pointer {
  readonly oid: string;
  readonly size: number;
}

/** The object a pointer file names, or null when `data` is not a pointer file. */
export function parsePointer(data: Buffer): Pointer | null {
  if (data.length >= MAX_POINTER_BYTES || data[data.length - 1] !== 0x0a) return null;
  const lines = data.toString('utf8').slice(0, -1).split('\n');
  const fields = new Map<string, string>();
  let previous = '';
  for (const [i, line] of lines.entries()) {
    const match = /^([a-z0-9.-]+) ([^\r\n]*)$/.exec(line);
    if (match === null) return null;
    const [, key = '', value = ''] = match;
    if (i === 0 ? key !== 'version' : key <= previous || key === 'version') return null;
    previous = i === 0 ? '' : key;
    fields.set(key, value);
  }
  if (!VERSIONS.has(fields.get('version') ?? '')) return null;
  const oid = /^sha256:([0-9a-f]{64})$/.exec(fields.get('oid') ?? '')?.[1];
  const size = fields.get('size') ?? '';
  if (oid === undefined || !/^\d{1,16}$/.test(size) || !Number.isSafeInteger(Number(size))) return null;
  return { oid, size: Number(size) };
}

/**
 * The Git LFS pointers among a push's new objects: the objects of the packs it sent (read from
 * their indexes), their types and sizes asked of git in one `cat-file --batch-check`, and only the
 * blobs small enough to be pointers (under 1024 bytes) read, in one `cat-file --batch`. Objects the
 * repository already had are never looked at, so the cost follows the push, not the repository.
 */
import { readFile } from 'node:fs/promises';
import type { GitRunner } from '../git/GitRunner.js';
import { MAX_POINTER_BYTES, type Pointer, parsePointer } from './pointer.js';

/** A pack index (git's pack-format(5), version 2): magic, version, fan-out, then the sorted names. */
const IDX_MAGIC = 0xff744f63;
const SHA1_BYTES = 20;

/** The object ids a pack index lists (SHA-1 repositories, as narwal's are). */
export async function packObjectIds(idxPath: string): Promise<string[]> {
  const idx = await readFile(idxPath);
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== IDX_MAGIC || idx.readUInt32BE(4) !== 2)
    throw new Error(`${idxPath} is not a version 2 pack index`);
  const count = idx.readUInt32BE(8 + 255 * 4);
  const start = 8 + 256 * 4;
  if (idx.length < start + count * SHA1_BYTES) throw new Error(`${idxPath} is truncated`);
  const oids = new Array<string>(count);
  for (let i = 0; i < count; i++)
    oids[i] = idx.toString('hex', start + i * SHA1_BYTES, start + (i + 1) * SHA1_BYTES);
  return oids;
}

/** The pointers among `oids` (objects of `dir`), by the id of the blob that holds each. */
export async function pointersAmong(
  git: GitRunner,
  dir: string,
  oids: readonly string[],
): Promise<Map<string, Pointer>> {
  const found = new Map<string, Pointer>();
  if (oids.length === 0) return found;
  const infos = await git.check(['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)'], {
    cwd: dir,
    withinSlot: true,
    input: `${oids.join('\n')}\n`,
  });
  const candidates: string[] = [];
  for (const line of infos.toString('utf8').split('\n')) {
    const [oid, type, size] = line.split(' ');
    if (oid !== undefined && type === 'blob' && Number(size) > 0 && Number(size) < MAX_POINTER_BYTES)
      candidates.push(oid);
  }
  if (candidates.length === 0) return found;
  const out = await git.check(['cat-file', '--batch'], {
    cwd: dir,
    withinSlot: true,
    input: `${candidates.join('\n')}\n`,
  });
  // `<oid> <type> <size>\n<contents>\n` per object (git-cat-file(1), BATCH OUTPUT).
  for (let at = 0; at < out.length; ) {
    const eol = out.indexOf(10, at);
    if (eol < 0) break;
    const [oid, , sizeText] = out.toString('utf8', at, eol).split(' ');
    const size = Number(sizeText);
    if (oid === undefined || !Number.isSafeInteger(size)) break;
    const pointer = parsePointer(out.subarray(eol + 1, eol + 1 + size));
    if (pointer) found.set(oid, pointer);
    at = eol + 1 + size + 1;
  }
  return found;
}

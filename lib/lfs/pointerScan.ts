/**
 * The Git LFS pointers among a push's new objects: the objects of the packs it sent (read from
 * their indexes), their types and sizes, and only the blobs small enough to be pointers (under 1024
 * bytes) read - all from the received packs in this process when they are small enough to read here
 * (git/receivedObjects.ts). Objects the repository already had are never looked at, so the cost
 * follows the push, not the repository.
 */
import type { ReceivedObjects } from '../git/receivedObjects.js';
import { MAX_POINTER_BYTES, type Pointer, parsePointer } from './pointer.js';

/** The pointers among `oids` (objects the push received), by the id of the blob that holds each. */
export async function pointersAmong(
  objects: ReceivedObjects,
  oids: readonly string[],
): Promise<Map<string, Pointer>> {
  const found = new Map<string, Pointer>();
  if (oids.length === 0) return found;
  const infos = await objects.infos(oids);
  const candidates = [...infos]
    .filter(([, info]) => info.type === 'blob' && info.size > 0 && info.size < MAX_POINTER_BYTES)
    .map(([oid]) => oid);
  if (candidates.length === 0) return found;
  for (const [oid, body] of await objects.contents(candidates)) {
    const pointer = parsePointer(body);
    if (pointer) found.set(oid, pointer);
  }
  return found;
}

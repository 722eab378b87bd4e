/**
 * The cache keeps every ref in one `packed-refs` file, written once per generation. Format:
 * gitrepository-layout(5) and refs/packed-backend.c. The `sorted` trait lets git binary-search
 * the file; `fully-peeled` tells git that every annotated tag's peeled value follows it on a `^`
 * line and that a ref without one is not a tag, so git advertises refs (with their peeled values)
 * without reading objects - a generation's refs are usable before its packs are downloaded.
 */

import { compareNames } from '../protocol/refName.js';
import type { RefValue } from '../protocol/refValue.js';

export const PACKED_REFS_HEADER = '# pack-refs with: peeled fully-peeled sorted \n';

export function writePackedRefs(refs: ReadonlyMap<string, RefValue>): string {
  const names = [...refs.keys()].sort(compareNames);
  const lines = [PACKED_REFS_HEADER];
  for (const name of names) {
    const value = refs.get(name) as RefValue;
    lines.push(`${value.oid} ${name}\n`);
    if (value.peeled) lines.push(`^${value.peeled}\n`);
  }
  return lines.join('');
}

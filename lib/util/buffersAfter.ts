/**
 * What is left of `buffers` once their first `bytes` bytes are done: for a scatter read or a
 * gather write (readv(2), writev(2)) that stopped part way and goes on from there. The buffers
 * are not copied: a partly done one is a view of its rest.
 */
export function buffersAfter(buffers: readonly Buffer[], bytes: number): Buffer[] {
  const rest: Buffer[] = [];
  let skip = bytes;
  for (const buffer of buffers) {
    if (skip >= buffer.length) skip -= buffer.length;
    else {
      rest.push(skip > 0 ? buffer.subarray(skip) : buffer);
      skip = 0;
    }
  }
  return rest;
}

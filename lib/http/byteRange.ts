/**
 * One byte range of a `Range` request header (RFC 9110 section 14): `bytes=500-999`, `bytes=500-`
 * or `bytes=-500` (the last 500). A header naming several ranges, or another unit, is ignored and
 * the whole representation sent, which the RFC allows; a range starting past the end cannot be
 * satisfied (416).
 */
import type { ByteRange } from '../store/ObjectStore.js';

export type RangeRequest =
  | { readonly kind: 'whole' }
  | { readonly kind: 'unsatisfiable' }
  | ({ readonly kind: 'range' } & Required<ByteRange>);

export function parseRange(header: string | undefined, size: number): RangeRequest {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return { kind: 'whole' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0) return { kind: 'unsatisfiable' };
    return size === 0
      ? { kind: 'unsatisfiable' }
      : { kind: 'range', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (!Number.isSafeInteger(start) || start >= size) return { kind: 'unsatisfiable' };
  if (end < start) return { kind: 'whole' };
  return { kind: 'range', start, end };
}

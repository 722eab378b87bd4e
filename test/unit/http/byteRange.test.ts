import { describe, expect, it } from 'vitest';
import { parseRange } from '../../../lib/http/byteRange.js';

describe('Range headers', () => {
  it('reads one byte range as RFC 9110 writes it', () => {
    expect(parseRange('bytes=10-19', 100)).toEqual({ kind: 'range', start: 10, end: 19 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'range', start: 90, end: 99 });
    expect(parseRange('bytes=90-1000', 100)).toEqual({ kind: 'range', start: 90, end: 99 });
    expect(parseRange('bytes=-10', 100)).toEqual({ kind: 'range', start: 90, end: 99 });
    expect(parseRange('bytes=-1000', 100)).toEqual({ kind: 'range', start: 0, end: 99 });
  });

  it('sends the whole object for what it does not serve, and refuses a range past the end', () => {
    for (const header of [undefined, 'items=1-2', 'bytes=1-2,5-6', 'bytes=5-1', 'bytes=-', 'bytes=a-b'])
      expect(parseRange(header, 100), String(header)).toEqual({ kind: 'whole' });
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
  });
});

import { describe, expect, it } from 'vitest';
import { buffersAfter } from '../../../lib/util/buffersAfter.js';

describe('buffersAfter', () => {
  it('goes on from the first byte not done, mid-buffer or at a boundary, without copying', () => {
    const buffers = [Buffer.from('abc'), Buffer.from('defg'), Buffer.from('h')];
    const text = (rest: Buffer[]) => rest.map((c) => c.toString()).join('|');
    expect(text(buffersAfter(buffers, 0))).toBe('abc|defg|h');
    expect(text(buffersAfter(buffers, 2))).toBe('c|defg|h');
    expect(text(buffersAfter(buffers, 3))).toBe('defg|h');
    expect(text(buffersAfter(buffers, 6))).toBe('g|h');
    expect(text(buffersAfter(buffers, 8))).toBe('');
    // A partly done buffer is a view: filling it fills the original.
    const [rest] = buffersAfter(buffers, 5);
    rest?.fill('x');
    expect(buffers[1]?.toString()).toBe('dexx');
  });
});

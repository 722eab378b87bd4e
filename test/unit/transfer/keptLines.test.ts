/** The lines kept before cached packs: given back as stored, bounded by bytes, oldest out first. */
import { describe, expect, it } from 'vitest';
import { KeptLines } from '../../../lib/transfer/KeptLines.js';

describe('KeptLines', () => {
  it('keeps what it is given within its bytes, letting the oldest go first', () => {
    const kept = new KeptLines(10);
    kept.set('a', Buffer.from('1234'));
    kept.set('b', Buffer.from('5678'));
    expect(kept.get('a')?.toString()).toBe('1234');
    // Two more bytes than fit: the oldest goes.
    kept.set('c', Buffer.from('90'));
    expect(kept.get('a')?.toString()).toBe('1234');
    kept.set('d', Buffer.from('xyz'));
    expect(kept.get('a')).toBeUndefined();
    expect(kept.get('b')?.toString()).toBe('5678');
    expect(kept.get('d')?.toString()).toBe('xyz');
    // Larger than the whole bound: not kept, and nothing else is pushed out for it.
    kept.set('e', Buffer.alloc(11));
    expect(kept.get('e')).toBeUndefined();
    expect(kept.get('b')?.toString()).toBe('5678');
    // Set twice, counted once.
    kept.set('b', Buffer.from('5678'));
    kept.set('f', Buffer.from('0'));
    expect(kept.get('c')?.toString()).toBe('90');
  });
});

/**
 * Which git processes a push's profile counts: those that ended within its window, from its start
 * at the earliest (a receive-pack started ahead waits for the push before it works for it).
 */
import { describe, expect, it } from 'vitest';
import { traceOf } from '../../../bench/pushProfile.js';

describe('traceOf', () => {
  it('counts a process started before the push from the push, and none that ended outside it', () => {
    const window = { start: 1_000, ms: 100 };
    const trace = traceOf(
      window,
      [
        { name: 'receive-pack', start: 400, ms: 650 },
        { name: 'receive-pack/index-pack', start: 1_010, ms: 5 },
        { name: 'receive-pack/index-pack', start: 1_020, ms: 3 },
        // The next push's receive-pack, started ahead during this one: not this push's.
        { name: 'receive-pack', start: 1_080, ms: 900 },
        // Ended before the push began.
        { name: 'multi-pack-index', start: 900, ms: 50 },
      ],
      [],
    );
    expect(trace.git).toEqual({ 'receive-pack': 50, 'receive-pack/index-pack': 8 });
    expect(trace.clientMs).toBe(100);
  });
});

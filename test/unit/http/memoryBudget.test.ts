import { describe, expect, it } from 'vitest';
import { MemoryBudget } from '../../../lib/http/MemoryBudget.js';
import { Busy } from '../../../lib/util/Busy.js';

describe('MemoryBudget', () => {
  it('charges bytes as they come, per client and in all, and gives them back once', () => {
    const budget = new MemoryBudget(100, 60);
    const a1 = budget.reserve('a');
    const a2 = budget.reserve('a');
    const b = budget.reserve('b');
    a1.add(40);
    a2.add(20);
    expect(() => a2.add(1)).toThrow(Busy);
    expect(() => a2.add(1)).toThrow(/this client's fetch requests already hold 60 bytes/);
    b.add(40);
    expect(() => b.add(1)).toThrow(/too many fetch requests are being read at once/);
    expect(budget.held).toBe(100);
    a1.release();
    a1.release();
    expect(budget.held).toBe(60);
    b.add(20);
    a2.release();
    b.release();
    expect(budget.held).toBe(0);
    // A released account charges nothing more.
    b.add(50);
    expect(budget.held).toBe(0);
  });
});

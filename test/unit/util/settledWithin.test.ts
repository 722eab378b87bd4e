import { describe, expect, it } from 'vitest';
import { settledWithin } from '../../../lib/util/settledWithin.js';

describe('settledWithin', () => {
  it('says whether a promise settled, either way, within the time given', async () => {
    expect(await settledWithin(Promise.resolve('done'), 1000)).toBe(true);
    expect(await settledWithin(Promise.reject(new Error('failed')), 1000)).toBe(true);
    expect(await settledWithin(new Promise(() => {}), 20)).toBe(false);
  });

  it('leaves no timer behind once the promise settles', async () => {
    const before = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    await settledWithin(Promise.resolve(), 60_000);
    const after = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    expect(after).toBe(before);
  });
});

import { describe, expect, it } from 'vitest';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { Busy } from '../../../lib/util/Busy.js';

/** Whether `promise` has settled after the microtask queue drains. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('GitBudget', () => {
  it('grants up to max slots at once', async () => {
    const budget = new GitBudget(3, 1000);
    const releases = await Promise.all([budget.acquire(), budget.acquire(), budget.acquire()]);
    expect(budget.running).toBe(3);
    for (const release of releases) release();
    expect(budget.running).toBe(0);
  });

  it('releases a slot only once however often release is called', async () => {
    const budget = new GitBudget(2, 1000);
    const first = await budget.acquire();
    await budget.acquire();
    expect(budget.running).toBe(2);
    first();
    first();
    first();
    expect(budget.running).toBe(1);
  });

  it('makes a waiter wait for a release, then hands it the slot', async () => {
    const budget = new GitBudget(1, 1000);
    const release = await budget.acquire();
    const waiting = budget.acquire();
    expect(await settled(waiting)).toBe(false);
    release();
    const next = await waiting;
    expect(budget.running).toBe(1);
    // The first holder's second release does not free the slot the waiter now holds.
    release();
    expect(budget.running).toBe(1);
    next();
    expect(budget.running).toBe(0);
  });

  it('grants waiters in arrival order', async () => {
    const budget = new GitBudget(1, 1000);
    const release = await budget.acquire();
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      budget.acquire().then((r) => {
        order.push(n);
        return r;
      }),
    );
    release();
    (await waiters[0])?.();
    (await waiters[1])?.();
    (await waiters[2])?.();
    expect(order).toEqual([1, 2, 3]);
    expect(budget.running).toBe(0);
  });

  it('refuses with Busy after maxWaitMs and forgets the waiter', async () => {
    const budget = new GitBudget(1, 20);
    const release = await budget.acquire();
    const started = Date.now();
    const error = await budget.acquire().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(error).toBeInstanceOf(Busy);
    expect((error as Busy).code).toBe('Busy');
    expect((error as Busy).retryAfterSeconds).toBe(1);
    expect((error as Busy).message).toBe('narwal: server busy (1 git processes running); retry in a moment');
    // The timed-out waiter does not take the slot when it frees.
    release();
    expect(budget.running).toBe(0);
    const again = await budget.acquire();
    expect(budget.running).toBe(1);
    again();
  });

  it('times out only the waiters that were not granted', async () => {
    const budget = new GitBudget(1, 40);
    const release = await budget.acquire();
    const granted = budget.acquire();
    const refused = budget.acquire();
    setTimeout(release, 5);
    const slot = await granted;
    await expect(refused).rejects.toBeInstanceOf(Busy);
    expect(budget.running).toBe(1);
    slot();
    expect(budget.running).toBe(0);
  });

  it('lets one owner hold at most its share of the slots, the rest staying for others', async () => {
    const budget = new GitBudget(4, 0, 3);
    const mine = await Promise.all([budget.acquire('a'), budget.acquire('a'), budget.acquire('a')]);
    const error = await budget.acquire('a').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Busy);
    expect((error as Busy).message).toBe(
      'narwal: busy: this client already runs 3 git processes on this server; retry when one has finished',
    );
    const theirs = await budget.acquire('b');
    expect(budget.running).toBe(4);
    mine[0]?.();
    const again = await budget.acquire('a');
    expect(budget.running).toBe(4);
    for (const release of [again, theirs, ...mine]) release();
    expect(budget.running).toBe(0);
  });

  it('counts work with no owner against the total only', async () => {
    const budget = new GitBudget(3, 0, 1);
    const background = await Promise.all([budget.acquire(), budget.acquire()]);
    const a = await budget.acquire('a');
    await expect(budget.acquire('b')).rejects.toThrow('server busy (3 git processes running)');
    for (const release of [a, ...background]) release();
  });

  it('hands a freed slot to the first waiter whose owner is under its share', async () => {
    const budget = new GitBudget(2, 1000, 1);
    const a = await budget.acquire('a');
    const b = await budget.acquire('b');
    const moreA = budget.acquire('a');
    const c = budget.acquire('c');
    b();
    // c is granted although a waited longer: a still holds its one slot.
    const slotC = await c;
    expect(await settled(moreA)).toBe(false);
    a();
    const slotA = await moreA;
    expect(budget.running).toBe(2);
    slotA();
    slotC();
    expect(budget.running).toBe(0);
  });
});

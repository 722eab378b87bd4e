import { describe, expect, it } from 'vitest';
import { StateAnswers } from '../../../lib/transfer/StateAnswers.js';

const state = (name: string, created = '2026-01-01T00:00:00.000Z') => ({ repo: 'team/app', created, name });
const bytes = (n: number, fill = 'a') => Buffer.alloc(n, fill);

describe('StateAnswers', () => {
  it('keys each question by state, incarnation, protocol and request', () => {
    const key = StateAnswers.key(state('g1'), 'ls-refs', 'version=2', Buffer.from('peel'));
    const others = [
      StateAnswers.key(state('g2'), 'ls-refs', 'version=2', Buffer.from('peel')),
      StateAnswers.key(state('g1', '2026-02-01T00:00:00.000Z'), 'ls-refs', 'version=2', Buffer.from('peel')),
      StateAnswers.key({ ...state('g1'), repo: 'team/other' }, 'ls-refs', 'version=2', Buffer.from('peel')),
      StateAnswers.key(state('g1'), 'advertise', 'version=2', Buffer.from('peel')),
      StateAnswers.key(state('g1'), 'ls-refs', undefined, Buffer.from('peel')),
      StateAnswers.key(state('g1'), 'ls-refs', 'version=2', Buffer.from('symrefs')),
      StateAnswers.key(null, 'ls-refs', 'version=2', Buffer.from('peel')),
    ];
    expect(new Set([key, ...others]).size).toBe(others.length + 1);
    expect(StateAnswers.key(state('g1'), 'ls-refs', 'version=2', Buffer.from('peel'))).toBe(key);
  });

  it('keeps answers within its byte bound, dropping the least recently used first', () => {
    const answers = new StateAnswers({ maxBytes: 300, maxAnswerBytes: 200 });
    answers.set('a', bytes(100, 'a'));
    answers.set('b', bytes(100, 'b'));
    answers.set('c', bytes(100, 'c'));
    expect(answers.get('a')?.toString()).toBe('a'.repeat(100));
    answers.set('d', bytes(100, 'd'));
    // b was the least recently used.
    expect(answers.get('b')).toBeUndefined();
    expect(answers.get('a')).toBeDefined();
    expect(answers.get('c')).toBeDefined();
    expect(answers.get('d')).toBeDefined();
    expect(answers.size).toBe(3);
    // Too large to keep at all; replacing a key counts its bytes once.
    answers.set('huge', bytes(201));
    expect(answers.get('huge')).toBeUndefined();
    answers.set('a', bytes(50, 'x'));
    answers.set('e', bytes(50, 'e'));
    expect(answers.size).toBe(4);
    expect(answers.get('a')?.toString()).toBe('x'.repeat(50));
  });

  /** A `make` that counts its calls and whose answer the test settles when it likes. */
  const pending = () => {
    let settle = (_outcome: Buffer | Error) => {};
    const make = Object.assign(
      () => {
        make.calls++;
        return new Promise<Buffer>((resolve, reject) => {
          settle = (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome));
        });
      },
      { calls: 0 },
    );
    return { make, settle: (outcome: Buffer | Error) => settle(outcome) };
  };

  it('makes an answer once for the callers that ask while it is made, and keeps it', async () => {
    const answers = new StateAnswers({ maxBytes: 1000, maxAnswerBytes: 500 });
    const { make, settle } = pending();
    const waiting = [answers.made('k', make), answers.made('k', make), answers.made('k', make)];
    settle(bytes(10, 'k'));
    const got = await Promise.all(waiting);
    expect(make.calls).toBe(1);
    expect(got.every((answer) => answer === got[0])).toBe(true);
    expect(await answers.made('k', make)).toBe(got[0]);
    expect(make.calls).toBe(1);
  });

  it('shares a failure with the callers that waited, and makes the answer again for the next', async () => {
    const answers = new StateAnswers({ maxBytes: 1000, maxAnswerBytes: 500 });
    const { make, settle } = pending();
    const waiting = [answers.made('k', make), answers.made('k', make)];
    settle(new Error('read failed'));
    for (const one of waiting) await expect(one).rejects.toThrow('read failed');
    expect(make.calls).toBe(1);
    expect(answers.size).toBe(0);
    expect((await answers.made('k', async () => bytes(5, 'n'))).toString()).toBe('nnnnn');
    expect(answers.size).toBe(1);
  });
  it('gives a promised answer to the questions that ask before it is kept, and tells the promiser they did', async () => {
    const answers = new StateAnswers({ maxBytes: 1000, maxAnswerBytes: 500 });
    expect(answers.answer('k')).toBeUndefined();
    const promised = answers.promise('k');
    expect(promised.asked()).toBe(false);
    const waiting = [answers.answer('k'), answers.answer('k')];
    expect(promised.asked()).toBe(true);
    promised.keep(Promise.resolve(bytes(10, 'p')));
    // Only the first keep counts.
    promised.keep(bytes(10, 'x'));
    const got = await Promise.all(waiting);
    expect(got.every((answer) => answer?.toString() === 'p'.repeat(10))).toBe(true);
    // Kept: the next question is answered at once, by the same bytes.
    expect(answers.answer('k')).toBe(got[0]);
  });

  it('gives no answer for a promise kept with none or with a failure, and forgets it', async () => {
    const answers = new StateAnswers({ maxBytes: 1000, maxAnswerBytes: 500 });
    const none = answers.promise('none');
    const waitingForNone = answers.answer('none');
    none.keep(undefined);
    expect(await waitingForNone).toBeUndefined();
    expect(answers.answer('none')).toBeUndefined();

    const broken = answers.promise('broken');
    const waitingForBroken = answers.answer('broken');
    broken.keep(Promise.reject(new Error('read failed')));
    expect(await waitingForBroken).toBeUndefined();
    expect(answers.size).toBe(0);
    // Nothing is promised any more: the next question finds its own answer.
    expect(answers.answer('broken')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { checkHistory, type RepoHistory, ZERO_OID } from '../../chaos/checkHistory.js';
import type { LoggedEntry, Outcome, PushOp, ReadOp } from '../../chaos/history.js';

const oid = (n: number) => n.toString(16).padStart(40, 'a');
const MAIN = 'refs/heads/main';
const TOPIC = 'refs/heads/topic';

let nextId = 1;
function pushOp(
  start: number,
  end: number,
  commands: { ref: string; old: string; new: string; outcome: Outcome; reason?: string }[],
  atomic = false,
): PushOp {
  return {
    kind: 'push',
    id: nextId++,
    repo: 'r',
    node: 'n0',
    style: atomic ? 'atomic' : 'single',
    atomic,
    start,
    end,
    commands,
  };
}
function readOp(start: number, end: number, refs: Record<string, string>): ReadOp {
  return {
    kind: 'fetch',
    id: nextId++,
    repo: 'r',
    node: 'n0',
    start,
    end,
    outcome: 'ok',
    refs: new Map(Object.entries(refs)),
  };
}
const entry = (seq: number, updates: LoggedEntry['updates'], atomic = false): LoggedEntry => ({
  seq,
  kind: 'push',
  atomic,
  updates,
});

/** A clean history: main created, then moved; topic created by an atomic push with main. */
function clean(): RepoHistory {
  const a = pushOp(0, 10, [{ ref: MAIN, old: ZERO_OID, new: oid(1), outcome: 'ok' }]);
  const b = pushOp(20, 30, [{ ref: MAIN, old: oid(1), new: oid(2), outcome: 'ok' }]);
  const c = pushOp(
    40,
    50,
    [
      { ref: MAIN, old: oid(2), new: oid(3), outcome: 'ok' },
      { ref: TOPIC, old: ZERO_OID, new: oid(4), outcome: 'ok' },
    ],
    true,
  );
  const refused = pushOp(41, 49, [
    { ref: MAIN, old: oid(1), new: oid(9), outcome: 'ng', reason: 'fetch first' },
  ]);
  return {
    repo: 'r',
    ops: [
      a,
      b,
      c,
      refused,
      readOp(31, 35, { [MAIN]: oid(2) }),
      readOp(51, 52, { [MAIN]: oid(3), [TOPIC]: oid(4) }),
    ],
    entries: [
      entry(1, [{ ref: MAIN, old: ZERO_OID, new: oid(1) }]),
      entry(2, [{ ref: MAIN, old: oid(1), new: oid(2) }]),
      entry(
        3,
        [
          { ref: MAIN, old: oid(2), new: oid(3) },
          { ref: TOPIC, old: ZERO_OID, new: oid(4) },
        ],
        true,
      ),
    ],
    finalRefs: new Map([
      [MAIN, oid(3)],
      [TOPIC, oid(4)],
    ]),
  };
}

describe('checkHistory', () => {
  it('passes a history where the log agrees with every client', () => {
    const result = checkHistory(clean());
    expect(result.violations).toEqual([]);
    expect(result.readsChecked).toBe(2);
  });

  it('finds an acknowledged update missing from the log', () => {
    const h = clean();
    const violations = checkHistory({
      ...h,
      entries: h.entries.slice(0, 2),
      finalRefs: new Map([[MAIN, oid(2)]]),
    }).violations;
    expect(
      violations.some((v) => v.includes('heard ok for refs/heads/main') && v.includes('not in the log')),
    ).toBe(true);
  });

  it('finds a refused update that is visible under another old value', () => {
    const h = clean();
    const entries = [...h.entries, entry(4, [{ ref: MAIN, old: oid(3), new: oid(9) }])];
    const violations = checkHistory({
      ...h,
      entries,
      finalRefs: new Map([
        [MAIN, oid(9)],
        [TOPIC, oid(4)],
      ]),
    }).violations;
    // Logged with an old value its client did not expect: a lost update, and a refusal that shows.
    expect(violations.some((v) => v.includes('lost update'))).toBe(true);
  });

  it('finds a lost update: two leases on one value both acknowledged, one applied over the other', () => {
    const h = clean();
    const first = pushOp(60, 70, [{ ref: MAIN, old: oid(3), new: oid(5), outcome: 'ok' }]);
    const second = pushOp(61, 71, [{ ref: MAIN, old: oid(3), new: oid(6), outcome: 'ok' }]);
    const entries = [
      ...h.entries,
      entry(4, [{ ref: MAIN, old: oid(3), new: oid(5) }]),
      // The server took the second push over the first's value: the first's update is gone.
      entry(5, [{ ref: MAIN, old: oid(5), new: oid(6) }]),
    ];
    const violations = checkHistory({
      ...h,
      ops: [...h.ops, first, second],
      entries,
      finalRefs: new Map([
        [MAIN, oid(6)],
        [TOPIC, oid(4)],
      ]),
    }).violations;
    expect(violations.some((v) => v.includes('entry 5') && v.includes('lost update'))).toBe(true);
    expect(violations.some((v) => v.includes(`push #${second.id} heard ok`))).toBe(true);
  });

  it('finds a refused update that is visible with the old value its client sent', () => {
    const h = clean();
    const refused = pushOp(60, 70, [{ ref: TOPIC, old: oid(4), new: oid(8), outcome: 'ng', reason: 'busy' }]);
    const entries = [...h.entries, entry(4, [{ ref: TOPIC, old: oid(4), new: oid(8) }])];
    const violations = checkHistory({
      ...h,
      ops: [...h.ops, refused],
      entries,
      finalRefs: new Map([
        [MAIN, oid(3)],
        [TOPIC, oid(8)],
      ]),
    }).violations;
    expect(violations.some((v) => v.includes('heard ng (busy)'))).toBe(true);
  });

  it('finds a ref moved to a value nobody pushed', () => {
    const h = clean();
    const entries = [...h.entries, entry(4, [{ ref: TOPIC, old: oid(4), new: oid(77) }])];
    const violations = checkHistory({
      ...h,
      entries,
      finalRefs: new Map([
        [MAIN, oid(3)],
        [TOPIC, oid(77)],
      ]),
    }).violations;
    expect(violations.some((v) => v.includes('which nobody pushed'))).toBe(true);
  });

  it('finds an atomic push that landed in part', () => {
    const h = clean();
    const entries = [
      h.entries[0],
      h.entries[1],
      entry(3, [{ ref: MAIN, old: oid(2), new: oid(3) }], true),
    ].filter((e): e is LoggedEntry => e !== undefined);
    const violations = checkHistory({ ...h, entries, finalRefs: new Map([[MAIN, oid(3)]]) }).violations;
    expect(violations.some((v) => v.includes('landed 1 of its 2 updates'))).toBe(true);
  });

  it('finds entries out of real-time order', () => {
    const h = clean();
    // b (acknowledged at 30) and c (started at 40) swapped in the log.
    const a = pushOp(0, 10, [{ ref: MAIN, old: ZERO_OID, new: oid(1), outcome: 'ok' }]);
    const b = pushOp(20, 30, [{ ref: TOPIC, old: ZERO_OID, new: oid(5), outcome: 'ok' }]);
    const c = pushOp(40, 50, [{ ref: MAIN, old: oid(1), new: oid(2), outcome: 'ok' }]);
    const violations = checkHistory({
      ...h,
      ops: [a, b, c],
      entries: [
        entry(1, [{ ref: MAIN, old: ZERO_OID, new: oid(1) }]),
        entry(2, [{ ref: MAIN, old: oid(1), new: oid(2) }]),
        entry(3, [{ ref: TOPIC, old: ZERO_OID, new: oid(5) }]),
      ],
      finalRefs: new Map([
        [MAIN, oid(2)],
        [TOPIC, oid(5)],
      ]),
    }).violations;
    expect(violations.some((v) => v.includes('started after push'))).toBe(true);
  });

  it('finds a stale read, a read of a state that never was, and one from the future', () => {
    const h = clean();
    const stale = readOp(31, 35, { [MAIN]: oid(1) });
    const never = readOp(31, 35, { [MAIN]: oid(1), [TOPIC]: oid(4) });
    const future = readOp(11, 15, { [MAIN]: oid(2) });
    const violations = checkHistory({ ...h, ops: [...h.ops, stale, never, future] }).violations;
    expect(violations.some((v) => v.includes('stale read'))).toBe(true);
    expect(violations.some((v) => v.includes('match no state of the log'))).toBe(true);
    expect(violations.some((v) => v.includes('newer than entry'))).toBe(true);
  });

  it('finds a log that moves a ref from a value it did not have, and refs that differ from the replay', () => {
    const h = clean();
    const entries = [h.entries[0], entry(2, [{ ref: MAIN, old: oid(5), new: oid(2) }])].filter(
      (e): e is LoggedEntry => e !== undefined,
    );
    const violations = checkHistory({ ...h, entries }).violations;
    expect(violations.some((v) => v.includes('from 0') || v.includes('but it was'))).toBe(true);
    expect(violations.some((v) => v.includes('differ from the replay'))).toBe(true);
  });

  it('counts unknown outcomes either way without calling them violations', () => {
    const h = clean();
    const landed = pushOp(60, Number.POSITIVE_INFINITY, [
      { ref: TOPIC, old: oid(4), new: oid(6), outcome: 'unknown' },
    ]);
    const lost = pushOp(61, Number.POSITIVE_INFINITY, [
      { ref: TOPIC, old: oid(4), new: oid(7), outcome: 'unknown' },
    ]);
    const result = checkHistory({
      ...h,
      ops: [...h.ops, landed, lost],
      entries: [...h.entries, entry(4, [{ ref: TOPIC, old: oid(4), new: oid(6) }])],
      finalRefs: new Map([
        [MAIN, oid(3)],
        [TOPIC, oid(6)],
      ]),
    });
    expect(result.violations).toEqual([]);
    expect(result.unknownLanded).toBe(1);
    expect(result.unknownNotLanded).toBe(1);
  });
});

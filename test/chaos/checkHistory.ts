/**
 * The history checker: compares what clients heard with what the log says, one repository at a
 * time. Pure code over the recorded operations and the log's entries, so it can be tested with
 * hand-made histories that break each rule.
 *
 * Rules (docs/architecture.md invariants 1, 3, 5 and 6):
 * - the log is a sequence: seqs 1..N, and every update moves a ref from the value it had;
 * - every update in the log was pushed by some client with exactly that expected old value
 *   (no ref moved to a value nobody pushed, no update applied over a value its client did not see);
 * - every update a client heard `ok` for is in the log, exactly once;
 * - an update a client heard `ng` or `error` for is not in the log;
 * - one push is one entry; an atomic push is all or nothing, in the log and in what it reported;
 * - real-time order: a push acknowledged before another push started has the smaller seq;
 * - every successful read saw the state of the log at some seq no older than the newest push
 *   acknowledged before the read started, and no newer than the first push started after it ended;
 * - the final refs are the replay of the log.
 */
import { createHash } from 'node:crypto';
import type { LoggedEntry, Op, PushCommandRecord, PushOp, ReadOp } from './history.js';

export const ZERO_OID = '0000000000000000000000000000000000000000';

export interface RepoHistory {
  readonly repo: string;
  readonly ops: readonly Op[];
  /** Every published entry, oldest first. */
  readonly entries: readonly LoggedEntry[];
  /** The refs the current index names (refs/heads/* -> oid). */
  readonly finalRefs: ReadonlyMap<string, string>;
}

export interface CheckResult {
  readonly violations: string[];
  /** Pushes whose client heard nothing definite but whose updates are in the log. */
  readonly unknownLanded: number;
  readonly unknownNotLanded: number;
  readonly readsChecked: number;
}

interface Landing {
  readonly seq: number;
  readonly command: PushCommandRecord;
}

export function checkHistory(history: RepoHistory): CheckResult {
  const violations: string[] = [];
  const v = (message: string) => violations.push(`${history.repo}: ${message}`);
  const pushes = history.ops.filter((op): op is PushOp => op.kind === 'push');
  const reads = history.ops.filter((op): op is ReadOp => op.kind !== 'push');

  // The log is a sequence of states.
  const fingerprints: bigint[] = [0n];
  const state = new Map<string, string>();
  let fp = 0n;
  history.entries.forEach((entry, i) => {
    if (entry.seq !== i + 1) v(`entry ${i + 1} of the log has seq ${entry.seq}`);
    for (const u of entry.updates) {
      const current = state.get(u.ref) ?? ZERO_OID;
      if (current !== u.old)
        v(`entry ${entry.seq} moves ${u.ref} from ${short(u.old)} but it was ${short(current)}`);
      if (current !== ZERO_OID) fp ^= refHash(u.ref, current);
      if (u.new === ZERO_OID) state.delete(u.ref);
      else {
        state.set(u.ref, u.new);
        fp ^= refHash(u.ref, u.new);
      }
    }
    fingerprints.push(fp);
  });
  const last = history.entries.length;

  // Attribute every logged update to the push command that asked for it.
  const byTriple = new Map<string, PushCommandRecord>();
  const byTarget = new Map<string, PushCommandRecord[]>();
  const opOf = new Map<PushCommandRecord, PushOp>();
  for (const op of pushes) {
    for (const c of op.commands) {
      byTriple.set(`${c.ref} ${c.old} ${c.new}`, c);
      const target = `${c.ref} ${c.new}`;
      byTarget.set(target, [...(byTarget.get(target) ?? []), c]);
      opOf.set(c, op);
    }
  }
  const landed = new Map<PushCommandRecord, Landing>();
  for (const entry of history.entries) {
    for (const u of entry.updates) {
      const command = byTriple.get(`${u.ref} ${u.old} ${u.new}`);
      if (command === undefined) {
        if (byTarget.has(`${u.ref} ${u.new}`))
          v(
            `entry ${entry.seq} moved ${u.ref} from ${short(u.old)}, which no client pushing ${short(u.new)} expected (lost update)`,
          );
        else v(`entry ${entry.seq} moved ${u.ref} to ${short(u.new)}, which nobody pushed`);
        continue;
      }
      if (landed.has(command)) v(`${u.ref} -> ${short(u.new)} is in the log twice`);
      else landed.set(command, { seq: entry.seq, command });
    }
  }

  // What each push heard against what landed.
  const seqOfOp = new Map<PushOp, number>();
  let unknownLanded = 0;
  let unknownNotLanded = 0;
  for (const op of pushes) {
    const seqs = new Set<number>();
    for (const c of op.commands) {
      const landing = landed.get(c);
      if (landing) seqs.add(landing.seq);
      if (c.outcome === 'ok' && !landing)
        v(`push #${op.id} heard ok for ${c.ref} -> ${short(c.new)}, which is not in the log`);
      if ((c.outcome === 'ng' || c.outcome === 'error') && landing)
        v(
          `push #${op.id} heard ${c.outcome} (${c.reason ?? ''}) for ${c.ref} -> ${short(c.new)}, but entry ${landing.seq} has it`,
        );
      if (c.outcome === 'unknown') {
        if (landing) unknownLanded++;
        else unknownNotLanded++;
      }
    }
    if (seqs.size > 1) v(`push #${op.id} landed in ${seqs.size} entries (${[...seqs].join(', ')})`);
    const [seq] = seqs;
    if (seq !== undefined) seqOfOp.set(op, seq);
    if (op.atomic) {
      const count = op.commands.filter((c) => landed.has(c)).length;
      if (count > 0 && count < op.commands.length)
        v(`atomic push #${op.id} landed ${count} of its ${op.commands.length} updates`);
      const heard = new Set(op.commands.map((c) => c.outcome));
      if (heard.has('ok') && heard.size > 1)
        v(`atomic push #${op.id} heard ok for some refs and ${[...heard].join('/')} overall`);
      if (seq !== undefined && history.entries[seq - 1]?.atomic !== true)
        v(`atomic push #${op.id} landed in entry ${seq}, which is not atomic`);
    }
  }

  // Real-time order of pushes.
  const acked = pushes
    .filter((op) => seqOfOp.has(op) && op.commands.some((c) => c.outcome === 'ok'))
    .sort((a, b) => a.end - b.end);
  const maxAckedBefore = maxSeqEndedBefore(acked, seqOfOp);
  for (const op of pushes) {
    const seq = seqOfOp.get(op);
    if (seq === undefined) continue;
    const before = maxAckedBefore(op.start);
    if (before !== null && before.seq >= seq)
      v(
        `push #${op.id} (entry ${seq}) started after push #${before.op.id} (entry ${before.seq}) was acknowledged`,
      );
  }
  const landedByStart = [...seqOfOp].sort((a, b) => a[0].start - b[0].start);

  // Reads saw a state of the log, not a stale one and not one from the future.
  let readsChecked = 0;
  for (const read of reads) {
    if (read.outcome !== 'ok' || read.refs === undefined) continue;
    readsChecked++;
    let observed = 0n;
    for (const [ref, oid] of read.refs) observed ^= refHash(ref, oid);
    const low = maxAckedBefore(read.start)?.seq ?? 0;
    let high = last;
    for (const [op, seq] of landedByStart) if (op.start > read.end && seq - 1 < high) high = seq - 1;
    let match = -1;
    for (let s = low; s <= high; s++) if (fingerprints[s] === observed) match = s;
    if (match >= 0) continue;
    const anywhere = fingerprints.lastIndexOf(observed);
    if (anywhere < 0)
      v(`${read.kind} #${read.id} saw refs that match no state of the log (${describe(read.refs)})`);
    else if (anywhere < low)
      v(
        `${read.kind} #${read.id} saw the state at entry ${anywhere}, older than entry ${low} acknowledged before it started (stale read)`,
      );
    else
      v(
        `${read.kind} #${read.id} saw the state at entry ${anywhere}, newer than entry ${high + 1} pushed after it ended`,
      );
  }

  // The index names what the log replays to.
  const final = [...history.finalRefs].sort().join('\n');
  const replayed = [...state].sort().join('\n');
  if (final !== replayed)
    v(`the index's refs differ from the replay of the log:\nindex:\n${final}\nreplay:\n${replayed}`);

  return { violations, unknownLanded, unknownNotLanded, readsChecked };
}

/** For pushes sorted by end time: the acknowledged push with the highest seq that ended before `t`. */
function maxSeqEndedBefore(
  acked: readonly PushOp[],
  seqOf: ReadonlyMap<PushOp, number>,
): (t: number) => { op: PushOp; seq: number } | null {
  const best: ({ op: PushOp; seq: number } | null)[] = [];
  let running: { op: PushOp; seq: number } | null = null;
  for (const op of acked) {
    const seq = seqOf.get(op) ?? 0;
    if (running === null || seq > running.seq) running = { op, seq };
    best.push(running);
  }
  return (t) => {
    let low = 0;
    let high = acked.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((acked[mid] as PushOp).end < t) low = mid + 1;
      else high = mid;
    }
    return low === 0 ? null : (best[low - 1] ?? null);
  };
}

function refHash(ref: string, oid: string): bigint {
  return BigInt(`0x${createHash('sha1').update(`${ref}\0${oid}`).digest('hex').slice(0, 16)}`);
}

function short(oid: string): string {
  return oid === ZERO_OID ? '(none)' : oid.slice(0, 10);
}

function describe(refs: ReadonlyMap<string, string>): string {
  return [...refs].map(([ref, oid]) => `${ref}=${short(oid)}`).join(' ');
}

/**
 * What the chaos run records: every client operation with when it started and ended (by this
 * process's monotonic clock) and what the client heard. The checker compares this with the log.
 */
import type { EntryKind } from '../../lib/wal/types.js';

/**
 * What a client heard about one ref of a push: `ok`, a refusal (`ng`: the server or git itself
 * rejected it), `error` (the push never reached a server that could publish it, e.g. connection
 * refused), or `unknown` (the connection broke or the server said the outcome is unknown).
 */
export type Outcome = 'ok' | 'ng' | 'error' | 'unknown';

export interface PushCommandRecord {
  readonly ref: string;
  /** The value the client expected the ref to have (ZERO_OID: absent). */
  readonly old: string;
  /** ZERO_OID for a deletion. */
  readonly new: string;
  outcome: Outcome;
  reason?: string;
}

export type PushStyle = 'seed' | 'single' | 'multi' | 'atomic' | 'lease' | 'delete';

export interface PushOp {
  readonly kind: 'push';
  readonly id: number;
  readonly repo: string;
  readonly node: string;
  readonly style: PushStyle;
  readonly atomic: boolean;
  readonly start: number;
  end: number;
  readonly commands: PushCommandRecord[];
}

export type ReadKind = 'clone' | 'fetch' | 'ls-remote';

export interface ReadOp {
  readonly kind: ReadKind;
  readonly id: number;
  readonly repo: string;
  readonly node: string;
  readonly start: number;
  end: number;
  outcome: 'ok' | 'error';
  /** The branches the client saw (refs/heads/* -> oid), when it succeeded. */
  refs?: ReadonlyMap<string, string>;
  reason?: string;
}

export type Op = PushOp | ReadOp;

/** One published entry as the checker needs it: every update, not only the index's summary. */
export interface LoggedEntry {
  readonly seq: number;
  readonly kind: EntryKind;
  readonly atomic: boolean;
  readonly updates: readonly { readonly ref: string; readonly old: string; readonly new: string }[];
}

export class Recorder {
  readonly ops: Op[] = [];
  /** Clones whose objects were incomplete (git fsck failed): data loss, reported as violations. */
  readonly corrupt: string[] = [];
  /**
   * Operations git gave up on at the client's own timeout, the server having neither answered nor
   * dropped the connection: a real git client has no such timeout and would wait on. Violations.
   */
  readonly unanswered: string[] = [];
  readonly #inFlight = new Map<number, Op>();
  #next = 1;

  nextId(): number {
    return this.#next++;
  }

  begin<T extends Op>(op: T): T {
    this.ops.push(op);
    this.#inFlight.set(op.id, op);
    return op;
  }

  finish(op: Op): void {
    op.end = performance.now();
    this.#inFlight.delete(op.id);
  }

  /** Ends tracking of an operation whose outcome is unknown: its end stays open. */
  forget(op: Op): void {
    this.#inFlight.delete(op.id);
  }

  /** Operations in flight on `node`, of `kind` when given. */
  inFlight(node: string, kind?: Op['kind']): Op[] {
    return [...this.#inFlight.values()].filter(
      (op) => op.node === node && (kind === undefined || op.kind === kind),
    );
  }
}

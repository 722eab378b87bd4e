/**
 * Delivers every published entry of a repository, in order, to each destination, from that
 * destination's cursor in the store. Triggered after each publish (never before: events are read
 * from the published index), by a periodic catch-up (the server, the maintenance function) and
 * by `narwal events replay`.
 *
 * Per repository and destination one delivery runs at a time on a node, and events are sent one
 * batch at a time with exponential backoff between failed attempts (a bounded number of them);
 * when they run out delivery stops at the first undelivered event and the next catch-up resumes
 * there. Across nodes the cursor's conditional PUT decides who advances it; a destination may
 * then see an event twice, always with the same idempotency key.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type LoggedError, type Logger, serializeError } from '../log.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { KeyedMutex } from '../util/KeyedMutex.js';
import { RepoNotFound } from '../wal/errors.js';
import { incarnationId } from '../wal/keys.js';
import type { RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { advanceCursor, CursorMoved, type EventCursor, readCursor } from './EventCursor.js';
import { DeliveryFailed, type EventSink } from './EventSink.js';
import { eventsAfter, type PushEvent } from './PushEvent.js';

export interface RetryPolicy {
  /** Attempts per batch before delivery stops until the next catch-up. */
  readonly attempts: number;
  readonly baseMs: number;
  readonly capMs: number;
}

export interface DispatcherDeps {
  readonly wal: Wal;
  readonly store: ObjectStore;
  readonly sinks: readonly EventSink[];
  readonly logger: Logger;
  readonly retry: RetryPolicy;
  readonly now?: () => Date;
  readonly random?: () => number;
}

export interface SinkProgress {
  readonly sink: string;
  /** Events this call delivered. */
  readonly delivered: number;
  /** The cursor afterwards. */
  readonly cursor: number;
  /** The log's head: delivery is complete when it equals the cursor. */
  readonly head: number;
  /** Why delivery stopped short, if it did: the error's message, as the CLI prints it... */
  readonly error?: string;
  /** ...and the error itself as logs write errors (name, message, code, cause). */
  readonly cause?: LoggedError;
}

export class EventDispatcher {
  readonly #deps: DispatcherDeps;
  readonly #mutex = new KeyedMutex();
  readonly #running = new Map<string, { again: boolean; done: Promise<void> }>();

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
  }

  get sinks(): readonly EventSink[] {
    return this.#deps.sinks;
  }

  /**
   * After a publish: catch the repository up in the background. Triggers that arrive while one
   * runs are folded into one more round, so a burst of pushes costs a few rounds, not one each.
   */
  trigger(repo: string): Promise<void> {
    const running = this.#running.get(repo);
    if (running) {
      running.again = true;
      return running.done;
    }
    const state = { again: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        do {
          state.again = false;
          for (const p of await this.catchUp(repo)) {
            if (p.error) this.#deps.logger.warn('event delivery stopped', { repo, ...p });
          }
        } while (state.again);
      } catch (error) {
        this.#deps.logger.warn('event delivery failed', { repo, error: serializeError(error) });
      } finally {
        this.#running.delete(repo);
      }
    })();
    this.#running.set(repo, state);
    return state.done;
  }

  /** Delivers every event after each destination's cursor up to the log's head. */
  async catchUp(repo: string): Promise<SinkProgress[]> {
    return Promise.all(
      this.#deps.sinks.map((sink) =>
        this.#mutex.run(`${repo}\0${sink.name}`, () => this.#catchUpSink(repo, sink)),
      ),
    );
  }

  /**
   * Delivers the events with seq >= `from` again (to `sinkNames`, or to every destination),
   * whatever the cursors say; a cursor behind the replayed events moves up, never back.
   */
  async replay(repo: string, from: number, sinkNames?: readonly string[]): Promise<SinkProgress[]> {
    const sinks = this.#deps.sinks.filter((s) => sinkNames === undefined || sinkNames.includes(s.name));
    return Promise.all(
      sinks.map((sink) => this.#mutex.run(`${repo}\0${sink.name}`, () => this.#replaySink(repo, sink, from))),
    );
  }

  async #catchUpSink(repo: string, sink: EventSink): Promise<SinkProgress> {
    let delivered = 0;
    let cursor: EventCursor | undefined;
    let head = 0;
    try {
      for (;;) {
        const index = await this.#index(repo);
        head = index.seq;
        cursor = await readCursor(this.#deps.store, repo, sink.name, incarnationId(index.created));
        if (cursor.seq >= index.seq) return { sink: sink.name, delivered, cursor: cursor.seq, head };
        const events = await eventsAfter(this.#deps.wal, index, cursor.seq, sink.batchSize);
        const accepted = await this.#deliver(sink, events);
        delivered += accepted.length;
        const last = accepted[accepted.length - 1];
        try {
          if (last) cursor = await advanceCursor(this.#deps.store, cursor, last.seq, this.#now());
        } catch (error) {
          if (!(error instanceof CursorMoved)) throw error;
        }
      }
    } catch (error) {
      return { sink: sink.name, delivered, cursor: cursor?.seq ?? 0, head, ...stopped(error) };
    }
  }

  async #replaySink(repo: string, sink: EventSink, from: number): Promise<SinkProgress> {
    let delivered = 0;
    const index = await this.#index(repo);
    let next = Math.max(1, from);
    let cursor = await readCursor(this.#deps.store, repo, sink.name, incarnationId(index.created));
    try {
      while (next <= index.seq) {
        const events = await eventsAfter(this.#deps.wal, index, next - 1, sink.batchSize);
        const accepted = await this.#deliver(sink, events);
        delivered += accepted.length;
        next += accepted.length;
        const last = accepted[accepted.length - 1];
        // Only a cursor that this replay has caught up with may move: events between it and
        // `from` were never delivered.
        if (last && cursor.seq >= (accepted[0]?.seq ?? 0) - 1) {
          cursor = await advanceCursor(this.#deps.store, cursor, last.seq, this.#now()).catch(
            async (error) => {
              if (!(error instanceof CursorMoved)) throw error;
              return readCursor(this.#deps.store, repo, sink.name, incarnationId(index.created));
            },
          );
        }
      }
      return { sink: sink.name, delivered, cursor: cursor.seq, head: index.seq };
    } catch (error) {
      return { sink: sink.name, delivered, cursor: cursor.seq, head: index.seq, ...stopped(error) };
    }
  }

  /** One batch, retried with exponential backoff; resolves with the events accepted. */
  async #deliver(sink: EventSink, events: readonly PushEvent[]): Promise<readonly PushEvent[]> {
    const { attempts, baseMs, capMs } = this.#deps.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        const accepted = await sink.deliver(events);
        if (accepted < 1 || accepted > events.length)
          throw new DeliveryFailed(sink.name, `accepted ${accepted} of ${events.length} events`);
        return events.slice(0, accepted);
      } catch (error) {
        if (!(error instanceof DeliveryFailed) || attempt >= attempts) throw error;
        const ceiling = Math.min(capMs, baseMs * 2 ** (attempt - 1));
        // Half fixed, half jitter: retries of many nodes spread out but never fire at once.
        await sleep(Math.round(ceiling / 2 + (this.#deps.random ?? Math.random)() * (ceiling / 2)));
      }
    }
  }

  async #index(repo: string): Promise<RepoIndex> {
    const loaded = await this.#deps.wal.readIndex(repo);
    if (loaded === null) throw new RepoNotFound(repo);
    return loaded.index;
  }

  #now(): Date {
    return (this.#deps.now ?? (() => new Date()))();
  }
}

/** Why a delivery stopped, for the progress report. */
function stopped(error: unknown): { error: string; cause: LoggedError } {
  const cause = serializeError(error);
  return { error: cause.message, cause };
}

/**
 * What upload-pack answered about a repository state, kept in memory. A generation is built for
 * exactly one state and never changes, so the same question about it always gets an equivalent
 * answer. Two kinds are kept, each in an instance of its own: about refs, a ref advertisement
 * (v0/v1), an `ls-refs` answer (v2; most written by narwal as git would,
 * protocol/lsRefsAnswer.ts) or the v2 capability advertisement, so a clone storm starts one git
 * process for its refs, not one per clone (starting a process costs the node's main thread about
 * as much as sending the clone's whole pack); and small whole answers to repeatable fetches
 * (clonePack.ts), so a storm of CI checkouts of one state reads no file and takes no lease per job.
 *
 * Only answers that were checked whole are kept (see checkedRefs.ts). Bounded by
 * total bytes, least recently used first out.
 */
import { createHash } from 'node:crypto';

export interface AnsweredState {
  readonly repo: string;
  /** The repository's incarnation: a deleted and recreated repository is another. */
  readonly created: string;
  /** The generation name, unique per state. */
  readonly name: string;
}

/** An answer one question promised to the identical ones (StateAnswers.promise). */
export interface PromisedAnswer {
  /** Whether any question has waited for it so far. */
  asked(): boolean;
  /** Gives the answer (undefined: none to share); only the first call counts. */
  keep(answer: Buffer | Promise<Buffer | undefined> | undefined): void;
}

export class StateAnswers {
  readonly #maxBytes: number;
  readonly #maxAnswerBytes: number;
  readonly #answers = new Map<string, Buffer>();
  /** Answers being made, by key, for the callers arriving meanwhile (made). */
  readonly #making = new Map<string, Promise<Buffer>>();
  /** Answers a request making them promised, by key, for the identical ones arriving meanwhile (promise). */
  readonly #promised = new Map<string, { asked: boolean; answer: Promise<Buffer | undefined> }>();
  #bytes = 0;

  constructor(options: { maxBytes: number; maxAnswerBytes?: number }) {
    this.#maxBytes = options.maxBytes;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? Math.floor(options.maxBytes / 8);
  }

  /** The key of one question: the state (null: not about any repository), and what was asked. */
  static key(state: AnsweredState | null, question: string, protocol: string | undefined, request?: Buffer) {
    const hash = createHash('sha256');
    hash.update(state ? `${state.repo}\0${state.created}\0${state.name}` : '-');
    hash.update(`\0${question}\0${protocol ?? ''}\0`);
    if (request) hash.update(request);
    return hash.digest('hex');
  }

  /** Whether an answer of `bytes` would be kept. */
  accepts(bytes: number): boolean {
    return bytes <= this.#maxAnswerBytes;
  }

  get(key: string): Buffer | undefined {
    const answer = this.#answers.get(key);
    if (answer === undefined) return undefined;
    this.#answers.delete(key);
    this.#answers.set(key, answer);
    return answer;
  }

  /**
   * The answer kept under `key`, or the one `make` gives, then kept: one `make` per key at a time,
   * its result shared by every caller that arrives while it runs (and its failure too).
   */
  made(key: string, make: () => Promise<Buffer>): Promise<Buffer> {
    const kept = this.get(key);
    if (kept !== undefined) return Promise.resolve(kept);
    const running = this.#making.get(key);
    if (running !== undefined) return running;
    const making = make().then(
      (answer) => {
        this.#making.delete(key);
        this.set(key, answer);
        return answer;
      },
      (error: unknown) => {
        this.#making.delete(key);
        throw error;
      },
    );
    this.#making.set(key, making);
    return making;
  }

  /**
   * Promises an answer under `key` to the identical questions that arrive before the caller gives
   * it (keep), so they wait for it (answer) instead of asking git or the files it leaves. The
   * caller must keep its promise on every path, with undefined where it has no answer to share
   * (the waiting ones then find their own); only the first keep counts, and a failure is no answer.
   */
  promise(key: string): PromisedAnswer {
    let give = (_answer: Promise<Buffer | undefined>) => {};
    const entry = {
      asked: false,
      answer: new Promise<Buffer | undefined>((resolve) => {
        give = resolve;
      }).then((made) => {
        if (this.#promised.get(key) === entry) this.#promised.delete(key);
        if (made !== undefined) this.set(key, made);
        return made;
      }),
    };
    this.#promised.set(key, entry);
    let kept = false;
    return {
      asked: () => entry.asked,
      keep: (answer) => {
        if (kept) return;
        kept = true;
        give(Promise.resolve(answer).catch(() => undefined));
      },
    };
  }

  /**
   * The answer kept under `key`, or the one another question promised (which settles undefined
   * when it had none to give); undefined when there is neither.
   */
  answer(key: string): Buffer | Promise<Buffer | undefined> | undefined {
    const kept = this.get(key);
    if (kept !== undefined) return kept;
    const promised = this.#promised.get(key);
    if (promised === undefined) return undefined;
    promised.asked = true;
    return promised.answer;
  }

  set(key: string, answer: Buffer): void {
    if (answer.length > this.#maxAnswerBytes) return;
    const old = this.#answers.get(key);
    if (old !== undefined) {
      this.#answers.delete(key);
      this.#bytes -= old.length;
    }
    this.#answers.set(key, answer);
    this.#bytes += answer.length;
    for (const [oldest, value] of this.#answers) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#answers.delete(oldest);
      this.#bytes -= value.length;
    }
  }

  get size(): number {
    return this.#answers.size;
  }
}

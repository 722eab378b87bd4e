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

export class StateAnswers {
  readonly #maxBytes: number;
  readonly #maxAnswerBytes: number;
  readonly #answers = new Map<string, Buffer>();
  /** Answers being made, by key, for the callers arriving meanwhile (made). */
  readonly #making = new Map<string, Promise<Buffer>>();
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

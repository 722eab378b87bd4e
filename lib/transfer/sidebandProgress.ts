/**
 * A response body that git reads as its own: it starts with the bytes git's answer is known to
 * start with (see protocol/uploadPackRequest.ts), then carries narwal's progress on sideband
 * band 2 while the repository is prepared, then relays git's real output without those first
 * bytes. A failure after the response has started is reported on band 3, which git prints as
 * `remote error: ...` and fails on (gitprotocol-pack(5), "Packfile Data").
 */
import { PassThrough, type Readable } from 'node:stream';
import { failureMessageIn } from '../protocol/PktFraming.js';
import { encodeSideband } from '../protocol/pktLine.js';

export class SidebandProgress {
  readonly body = new PassThrough();
  readonly #prefix: Buffer;
  #ended = false;

  constructor(prefix: Buffer) {
    this.#prefix = prefix;
    if (prefix.length > 0) this.body.write(prefix);
    this.body.once('close', () => {
      this.#ended = true;
    });
  }

  /** Whether the client is gone (or the body was ended). */
  get closed(): boolean {
    return this.#ended;
  }

  /** One progress line; intermediate ones rewrite the line (CR), final ones end it. */
  progress(message: string, final = false): void {
    if (this.#ended) return;
    for (const packet of encodeSideband(2, `${message}${final ? '\n' : '\r'}`)) this.body.write(packet);
  }

  fail(message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const packet of encodeSideband(3, `${message}\n`)) this.body.write(packet);
    this.body.end();
  }

  /**
   * Relays `output` (git's stdout) after checking that it starts with the prefix already sent.
   * Resolves false, after reporting on band 3, when it does not.
   */
  relay(output: Readable): Promise<boolean> {
    return new Promise((resolve) => {
      let pending: Buffer = Buffer.alloc(0);
      let checked = this.#prefix.length === 0;
      const onData = (chunk: Buffer) => {
        if (checked) {
          if (!this.body.write(chunk)) output.pause();
          return;
        }
        pending = Buffer.concat([pending, chunk]);
        if (pending.length < this.#prefix.length) return;
        if (!pending.subarray(0, this.#prefix.length).equals(this.#prefix)) {
          output.off('data', onData);
          output.destroy();
          // git may have stopped before the prefix was whole, its output ending with why.
          this.fail(
            failureMessageIn(pending) ??
              'narwal: internal error: git answered in an unexpected way; retry the fetch',
          );
          resolve(false);
          return;
        }
        checked = true;
        const rest = pending.subarray(this.#prefix.length);
        if (rest.length > 0 && !this.body.write(rest)) output.pause();
      };
      this.body.on('drain', () => output.resume());
      // An output that fails midway (see pktChildBody) cuts the response off: nothing valid can follow.
      output.once('error', (error) => {
        this.#ended = true;
        this.body.destroy(error);
        resolve(false);
      });
      output.on('data', onData);
      output.once('end', () => {
        if (!checked) {
          this.fail(failureMessageIn(pending) ?? 'narwal: git ended its answer early; retry the fetch');
          resolve(false);
          return;
        }
        this.#ended = true;
        this.body.end();
        resolve(true);
      });
    });
  }
}

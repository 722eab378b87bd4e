/**
 * Hashes and counts a body as it passes, for `putStream`: it fails as soon as the body brings a
 * byte more than announced, and at the end when it brought fewer or its SHA-256 differs. The
 * failure surfaces through the stream pipeline before any adapter makes the object visible, so
 * what is stored has always been checked.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { ContentMismatch } from './errors.js';
import type { PutStreamOptions } from './ObjectStore.js';

export class ContentCheck extends Transform {
  readonly #hash = createHash('sha256');
  #seen = 0;

  constructor(
    readonly key: string,
    readonly expected: Pick<PutStreamOptions, 'size' | 'sha256'>,
  ) {
    super();
  }

  /** Bytes seen so far. */
  get seen(): number {
    return this.#seen;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.expected.size) {
      callback(this.#sizeMismatch('more than'));
      return;
    }
    this.#hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#seen !== this.expected.size) {
      callback(this.#sizeMismatch('only'));
      return;
    }
    const actual = this.#hash.digest('hex');
    if (actual !== this.expected.sha256) {
      callback(
        new ContentMismatch(
          this.key,
          'sha256',
          `the body's SHA-256 is ${actual}, not ${this.expected.sha256}`,
        ),
      );
      return;
    }
    callback();
  }

  #sizeMismatch(how: string): ContentMismatch {
    return new ContentMismatch(
      this.key,
      'size',
      `the body brought ${how} ${this.#seen} bytes; ${this.expected.size} were announced`,
    );
  }
}

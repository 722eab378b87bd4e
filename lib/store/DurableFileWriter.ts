/**
 * Writes a stream to a new file (create-only) and has it on disk before the stream finishes.
 *
 * An fsync(2) at the end alone would find the whole body still in the page cache and write all of
 * it back while the client waits (a second or so for a 200 MB LFS object on this project's
 * machines). So every `syncBytes` an fdatasync(2) is started in the background: the kernel writes
 * pages back while the rest of the body arrives, and the final fsync has little left to do. Both
 * calls flush what was written before them, whatever else is in flight on the file
 * (https://man7.org/linux/man-pages/man2/fsync.2.html). Chunks are gathered into writes of
 * `writeBytes`: a write per 64 KiB socket chunk costs a system call and a trip to libuv's pool each.
 * Each such write is one writev(2) of the chunks themselves, not of a copy of them.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { buffersAfter } from '../util/buffersAfter.js';

export interface DurableFileWriterOptions {
  /** Bytes gathered before they are written. */
  readonly writeBytes: number;
  /** Bytes written between background flushes to disk. */
  readonly syncBytes: number;
}

export class DurableFileWriter extends Writable {
  readonly #path: string;
  readonly #options: DurableFileWriterOptions;
  #handle: FileHandle | undefined;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #position = 0;
  #sinceSync = 0;
  #syncing: Promise<void> | undefined;
  #syncError: unknown;

  constructor(path: string, options: DurableFileWriterOptions) {
    super({ highWaterMark: options.writeBytes });
    this.#path = path;
    this.#options = options;
  }

  override _construct(callback: (error?: Error | null) => void): void {
    open(this.#path, 'wx').then((handle) => {
      this.#handle = handle;
      callback();
    }, callback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    if (this.#pendingBytes < this.#options.writeBytes) {
      callback(this.#failure());
      return;
    }
    this.#flush().then(() => callback(this.#failure()), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#flush()
      .then(() => this.#syncing)
      .then(() => {
        const failure = this.#failure();
        if (failure) throw failure;
        return this.#handle?.sync();
      })
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.#handle;
    this.#handle = undefined;
    // A background flush must end before the descriptor is closed (and its number reused).
    Promise.resolve(this.#syncing)
      .then(() => handle?.close())
      .then(
        () => callback(error),
        (closeError: unknown) => callback(error ?? (closeError as Error)),
      );
  }

  async #flush(): Promise<void> {
    const handle = this.#handle;
    if (handle === undefined || this.#pendingBytes === 0) return;
    let chunks = this.#pending;
    const bytes = this.#pendingBytes;
    this.#pending = [];
    this.#pendingBytes = 0;
    // One writev(2) of the chunks as they came: gathering them into one buffer first would copy
    // every byte into memory the process has not touched yet, which costs more than the copy.
    // A write to a regular file may be short (write(2)): go on from where it stopped.
    for (let left = bytes; left > 0; ) {
      const { bytesWritten } = await handle.writev(chunks, this.#position);
      if (bytesWritten <= 0) throw new Error(`${this.#path}: writev wrote nothing`);
      this.#position += bytesWritten;
      left -= bytesWritten;
      if (left > 0) chunks = buffersAfter(chunks, bytesWritten);
    }
    this.#sinceSync += bytes;
    if (this.#sinceSync >= this.#options.syncBytes && this.#syncing === undefined) {
      this.#sinceSync = 0;
      this.#syncing = handle.datasync().then(
        () => {
          this.#syncing = undefined;
        },
        (error: unknown) => {
          this.#syncing = undefined;
          this.#syncError = error;
        },
      );
    }
  }

  #failure(): Error | null {
    const error = this.#syncError;
    return error === undefined ? null : error instanceof Error ? error : new Error(String(error));
  }
}

import type { Readable } from 'node:stream';

/**
 * A streamed body may take its chunks back once they are written (handed to the kernel) and
 * fill them again instead of allocating new ones: a clone answered from a file moves megabytes
 * per request, and fresh buffers for them cost more in garbage collection than the bytes cost to
 * copy. A writer that never gives chunks back (the Lambda adapters, tests) loses only the saving.
 */
export interface RecyclingBody {
  /** `chunk`, one this body gave out, has been written and will not be read again by the writer. */
  recycle(chunk: Buffer): void;
}

export function recycles(body: Readable): body is Readable & RecyclingBody {
  return typeof (body as Partial<RecyclingBody>).recycle === 'function';
}

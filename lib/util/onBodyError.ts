import type { Readable } from 'node:stream';

/**
 * Calls `listener` with the body's error, also when the body failed before anyone listened: the
 * handler awaits the index and the cache before it reads, and a body can fail meanwhile (bad
 * gzip, a limit, a client gone). A listener attached late would wait forever, and git with it.
 */
export function onBodyError(body: Readable, listener: (error: Error) => void): void {
  const already = body.errored;
  if (already) queueMicrotask(() => listener(already));
  else body.once('error', listener);
}

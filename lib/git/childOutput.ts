/**
 * Turning a git child's stdout into a response body: streamed with backpressure, never buffered
 * whole, and the child killed if the client goes away.
 */

import { PassThrough, type Readable } from 'node:stream';
import type { GitChild } from './ProcessSpawner.js';

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/** Collects the tail of stderr and resolves when the child has exited and its pipes closed. */
export function childExit(child: GitChild, maxStderr = 64 * 1024): Promise<ChildExit> {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-maxStderr);
  });
  return new Promise((resolve) => {
    child.once('error', (error) =>
      resolve({ code: null, signal: null, stderr: `${stderr}${error.message}` }),
    );
    child.once('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** The child's stdout behind an optional prefix; destroying the body kills the child. */
export function childBody(child: GitChild, prefix?: Buffer): Readable {
  const body = new PassThrough();
  if (prefix && prefix.length > 0) body.write(prefix);
  const stdout = child.stdout;
  if (stdout) stdout.pipe(body);
  else body.end();
  body.once('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  return body;
}

/**
 * Waits until the child writes its first byte or exits, whichever comes first, so the caller can
 * still choose an error status when git refused the request without answering. The returned body
 * replays that first chunk.
 */
export async function firstOutput(
  child: GitChild,
  exit: Promise<ChildExit>,
): Promise<{ started: true; body: Readable } | { started: false; exit: ChildExit }> {
  const stdout = child.stdout;
  if (!stdout) return { started: false, exit: await exit };
  const first = await new Promise<Buffer | null>((resolve) => {
    const onData = (chunk: Buffer) => {
      stdout.pause();
      cleanup();
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      stdout.off('data', onData);
      stdout.off('end', onEnd);
    };
    stdout.on('data', onData);
    stdout.once('end', onEnd);
  });
  if (first === null) return { started: false, exit: await exit };
  return { started: true, body: childBody(child, first) };
}

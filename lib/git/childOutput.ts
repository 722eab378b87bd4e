/**
 * Turning a git child's stdout into a response body: streamed with backpressure, never buffered
 * whole, and the child killed if the client goes away.
 */

import { PassThrough, type Readable, Transform } from 'node:stream';
import { PktFraming } from '../protocol/PktFraming.js';
import { lastLine } from '../util/lastLine.js';
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
  return fedBy(child, new PassThrough(), prefix);
}

/** `body` fed the prefix, then the child's stdout; destroying it kills the child. */
function fedBy<T extends PassThrough | Transform>(child: GitChild, body: T, prefix?: Buffer): T {
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
 * As childBody, for a child that answers in pkt-lines: when it ends otherwise than with status 0
 * and its answer was not whole (it did not end on a flush packet), the body ends with
 * `describe(exit)` as a packet the client prints and fails on (PktFraming.failure), or fails,
 * cutting the response off, when no packet can follow what was sent. Without this, an answer cut
 * short ends like a whole one, and git reports only what it then missed (`expected 'packfile'`,
 * `bad pack header`).
 */
export function pktChildBody(
  child: GitChild,
  exit: Promise<ChildExit>,
  describe: (exit: ChildExit) => string,
  prefix?: Buffer,
): Readable {
  const framing = new PktFraming();
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      framing.observe(chunk);
      done(null, chunk);
    },
    flush(done) {
      void exit.then((result) => {
        if (result.code === 0 || framing.whole) return done();
        const message = describe(result);
        const tail = framing.failure(message);
        if (tail === null) done(new Error(message));
        else done(null, tail);
      });
    },
  });
  return fedBy(child, body, prefix);
}

/** Why a child ended as it did, for a message: its last line on stderr, or its status. */
export function exitCause(exit: ChildExit): string {
  const line = lastLine(exit.stderr);
  if (line !== undefined) return line;
  return exit.signal !== null ? `killed by ${exit.signal}` : `exit status ${exit.code}`;
}

/**
 * Waits until the child writes its first byte or exits, whichever comes first, so the caller can
 * still choose an error status when git refused the request without answering. The returned body
 * replays that first chunk; with `describe`, it is a pktChildBody.
 */
export async function firstOutput(
  child: GitChild,
  exit: Promise<ChildExit>,
  describe?: (exit: ChildExit) => string,
): Promise<{ started: true; body: Readable } | { started: false; exit: ChildExit }> {
  const stdout = child.stdout;
  // An output that ended or closed before this looked emits nothing more: nothing came of it.
  if (!stdout || stdout.readableEnded || stdout.destroyed) return { started: false, exit: await exit };
  const first = await new Promise<Buffer | null>((resolve) => {
    const onData = (chunk: Buffer) => {
      stdout.pause();
      cleanup();
      resolve(chunk);
    };
    // `close` without `end`: the pipe failed, and no byte will come either.
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      stdout.off('data', onData);
      stdout.off('end', onEnd);
      stdout.off('close', onEnd);
    };
    stdout.on('data', onData);
    stdout.once('end', onEnd);
    stdout.once('close', onEnd);
  });
  if (first === null) return { started: false, exit: await exit };
  return {
    started: true,
    body: describe ? pktChildBody(child, exit, describe, first) : childBody(child, first),
  };
}

/**
 * Whether git's stderr says the directory it was started in is no repository (setup.c: "not a
 * git repository", upload-pack's "'<dir>' does not appear to be a git repository"). narwal starts
 * git only in repositories it made or leased whole, so these words mean the directory went under
 * it (the cache deleted), never that the request was wrong.
 */
export function saysNotARepository(stderr: string): boolean {
  return /^fatal: (?:'.*' does not appear to be a git repository|not a git repository)/m.test(stderr);
}

/**
 * Spools a push body to a file while its head is parsed, for pushes that must wait for the cache
 * to be prepared: git can finish sending (and start reading the answer) instead of stalling on a
 * full socket, and the head's capabilities say whether progress may be sent.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type ReceivePackHead,
  type ReceivePackHeadLimits,
  ReceivePackHeadParser,
} from '../protocol/receivePackRequest.js';
import { onBodyError } from '../util/onBodyError.js';

export interface SpooledBody {
  /** The parsed head, as soon as its bytes arrived. */
  readonly head: Promise<ReceivePackHead>;
  /** Settles when the whole body is on disk. */
  readonly done: Promise<void>;
  /**
   * The spooled body, to be read once `done` has resolved. The file is opened here, so a spool that
   * vanished (its cache directory was deleted) rejects this call instead of erroring a stream no
   * one listens to yet; once open, the body stays readable even if the file is then removed.
   */
  open(): Promise<Readable>;
  remove(): Promise<void>;
}

export async function spoolBody(
  body: Readable,
  dir: string,
  limits: ReceivePackHeadLimits,
): Promise<SpooledBody> {
  const path = join(dir, `spool-${randomUUID()}`);
  const parser = new ReceivePackHeadParser(limits);
  const head = new Promise<ReceivePackHead>((resolve, reject) => {
    parser.once('head', resolve);
    parser.once('error', reject);
    onBodyError(body, reject);
  });
  const done = pipeline(body, parser, createWriteStream(path));
  head.catch(() => {});
  done.catch(() => {});
  return {
    head,
    done,
    open: async () => (await open(path, 'r')).createReadStream(),
    remove: () => rm(path, { force: true }),
  };
}

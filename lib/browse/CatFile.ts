/**
 * One long-running `git cat-file --batch-command` (git 2.36+) per generation: every object a page
 * needs is one line written and one answer read on the same pipes, instead of a git process per
 * object or per page. Commands are answered in order (git-cat-file(1), "BATCH OUTPUT"), so a
 * FIFO of pending requests matches answers to questions; several requests may be in flight at
 * once, which pipelines them.
 *
 *   info <object>      ->  "<oid> <type> <size>\n"              or "<object> missing\n"
 *   contents <object>  ->  "<oid> <type> <size>\n<data>\n"      or "<object> missing\n"
 */
import type { GitChild } from '../git/ProcessSpawner.js';

export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export interface ObjectInfo {
  readonly oid: string;
  readonly type: ObjectType;
  readonly size: number;
}

export interface GitObject extends ObjectInfo {
  readonly data: Buffer;
}

/** The process ended (or was closed) before it answered. */
export class CatFileClosed extends Error {
  readonly code = 'CatFileClosed';
}

interface Pending {
  readonly contents: boolean;
  resolve(value: GitObject | ObjectInfo | null): void;
  reject(error: Error): void;
}

export class CatFile {
  readonly #child: GitChild;
  readonly #queue: Pending[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  /** The header of the answer being read, while its data has not all arrived. */
  #header: ObjectInfo | null = null;
  #closed: Error | null = null;
  /** Commands sent, for tests and measurements of how much a page asked. */
  commands = 0;

  /** `child` is `git cat-file --batch-command` with piped stdin and stdout. */
  constructor(child: GitChild) {
    this.#child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
    child.stdin?.on('error', (error: Error) => this.#fail(error));
    child.once('error', (error) => this.#fail(error));
    child.once('close', (code) => this.#fail(new CatFileClosed(`git cat-file exited (${code})`)));
  }

  get closed(): boolean {
    return this.#closed !== null;
  }

  /** Type and size of `name` (an oid, or any object name git accepts); null when missing. */
  info(name: string): Promise<ObjectInfo | null> {
    return this.#ask(`info ${name}`, false) as Promise<ObjectInfo | null>;
  }

  /** The object `name` whole; null when missing. Ask `info` first for objects that may be large. */
  contents(name: string): Promise<GitObject | null> {
    return this.#ask(`contents ${name}`, true) as Promise<GitObject | null>;
  }

  close(): void {
    if (this.#closed) return;
    this.#fail(new CatFileClosed('closed'));
    this.#child.stdin?.end();
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGTERM');
  }

  #ask(command: string, contents: boolean): Promise<GitObject | ObjectInfo | null> {
    if (this.#closed) return Promise.reject(this.#closed);
    // A name with a line break would be read as two commands.
    if (/[\n\r]/.test(command)) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.#queue.push({ contents, resolve, reject });
      this.commands++;
      this.#child.stdin?.write(`${command}\n`);
    });
  }

  #read(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const pending = this.#queue[0];
      if (pending === undefined) {
        this.#buffer = Buffer.alloc(0);
        return;
      }
      if (this.#header === null) {
        const eol = this.#buffer.indexOf(10);
        if (eol < 0) return;
        const line = this.#buffer.subarray(0, eol).toString('utf8');
        this.#buffer = this.#buffer.subarray(eol + 1);
        const header = parseHeader(line);
        if (header === null || !pending.contents) {
          this.#queue.shift();
          pending.resolve(header);
          continue;
        }
        this.#header = header;
      }
      const header = this.#header;
      // The data, then a newline.
      if (this.#buffer.length < header.size + 1) return;
      const data = Buffer.from(this.#buffer.subarray(0, header.size));
      this.#buffer = this.#buffer.subarray(header.size + 1);
      this.#header = null;
      this.#queue.shift();
      pending.resolve({ ...header, data });
    }
  }

  #fail(error: Error): void {
    this.#closed ??= error;
    for (const pending of this.#queue.splice(0)) pending.reject(this.#closed);
  }
}

/** `<oid> <type> <size>`; `<name> missing`, `<name> ambiguous` and the like are null. */
function parseHeader(line: string): ObjectInfo | null {
  const match = /^([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)$/.exec(line);
  if (match === null) return null;
  return { oid: match[1] as string, type: match[2] as ObjectType, size: Number(match[3]) };
}

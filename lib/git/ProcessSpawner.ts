/**
 * How git processes are started: the one place that forks. `directSpawner` is node's own spawn,
 * a fork of this process; ForkServer.ts starts them from a small helper process instead, so that
 * this one never forks.
 */
import { type StdioOptions, spawn } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';

/**
 * What callers use of a started process, as node's ChildProcess has it: its pipes, its state,
 * `kill`, and the events `spawn`, `exit` (code, signal), `close` (code, signal; after `exit` and
 * once its output pipes have closed) and `error`.
 */
export interface GitChild extends EventEmitter {
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: readonly (Readable | Writable | null | undefined)[];
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly killed: boolean;
  kill(signal?: NodeJS.Signals): boolean;
  /** Whether the process (and its pipes, separately) keeps this process's event loop alive. */
  ref(): void;
  unref(): void;
}

export interface SpawnOptions {
  readonly cwd?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdio: StdioOptions;
}

export interface ProcessSpawner {
  /**
   * Starts `command`; answers once its pipes can be used. A command that cannot start (no such
   * file) is answered too, and emits `error`, as node's spawn does.
   */
  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<GitChild>;
  /** Starts nothing more; what runs finishes. */
  close(): void;
}

export const directSpawner: ProcessSpawner = {
  spawn: async (command, args, options) =>
    spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: options.stdio }),
  close: () => {},
};

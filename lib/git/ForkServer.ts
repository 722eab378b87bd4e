/**
 * Starts processes from a small helper process, so that this one never forks.
 *
 * node's spawn forks the calling process: the kernel copies its page tables, and marks every page
 * of both processes read-only until one writes it again. On a small virtual machine (two CPUs,
 * measured) the fork itself took this process's one thread 10-15 ms at 80-190 MB of memory, and
 * each page it wrote afterwards cost a page fault of about 13 us: a storm of CI fetches that
 * followed one git process paid 600-1,800 of them. The helper is a node process with nothing else
 * to do: its forks are small, and happen on its own thread.
 *
 * The helper spawns each process with pipes and hands them over on its IPC channel (node passes
 * the descriptors, SCM_RIGHTS), then reports how the process ended. It reads nothing of what the
 * process writes: until a pipe has been handed over, nothing in the helper reads from it. This
 * process makes of each pipe the stream node's spawn would have made: stdin is not read (a
 * process that exits without reading all of its input would otherwise fail it with ECONNRESET),
 * the others are, and what nobody reads of them is read once the process exits. Only pipes and
 * `ignore` travel this way; a caller asking for anything else (a descriptor of its own,
 * `inherit`) is started by node's spawn, as is every process until the helper is ready: the helper
 * starts with the first process asked for, off the path of that request (a node takes some
 * 100-250 ms to start here, which a Lambda sandbox's init would otherwise wait for). Should the
 * helper die, the processes it started are killed and fail with an error: how they
 * ended can no longer be known.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { directSpawner, type GitChild, type ProcessSpawner, type SpawnOptions } from './ProcessSpawner.js';

/**
 * The helper, run with `node -e` (exported for its tests). Its messages: `spawned` (pid, and which stdio entries are
 * pipes), then one `fd` per pipe with the pipe as its handle, then `exit`; or `error`. node sends
 * a handle only once the one before it was acknowledged, and queues every message behind it, so
 * they arrive in this order.
 */
export const HELPER = `'use strict';
const { spawn } = require('node:child_process');
const children = new Map();
const send = (message, handle, sent) => { if (process.connected) process.send(message, handle, sent); };
const described = (error) => ({ message: String(error && error.message), code: error && error.code, errno: error && error.errno, syscall: error && error.syscall, path: error && error.path });
// Without its node, nobody reads what its processes write: they go, and so does the helper.
const orphaned = () => { for (const child of children.values()) child.kill('SIGKILL'); process.exit(0); };
process.on('disconnect', orphaned);
// A message to a node that died fails (EPIPE) as an 'error' of this process.
process.on('error', orphaned);
// node holds 'disconnect' back while a pipe it sent waits for the node's acknowledgement, which a
// node that died never sends: the parent's pid changing says it died all the same.
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) orphaned(); }, 500).unref();
send({ t: 'ready' });
process.on('message', (m) => {
  if (m.t === 'kill') { const child = children.get(m.id); if (child) child.kill(m.signal); return; }
  if (m.t !== 'spawn') return;
  let child;
  try {
    child = spawn(m.command, m.args, { cwd: m.cwd, env: m.env, stdio: m.stdio });
  } catch (error) {
    send({ t: 'error', id: m.id, error: described(error) });
    return;
  }
  child.on('error', (error) => { if (child.pid === undefined) send({ t: 'error', id: m.id, error: described(error) }); });
  // Nothing here may read what the process writes, nor close a pipe before it is handed over:
  // each pipe is taken from the stream node made of it (which would start reading it at once,
  // read what is left once the process exits, and close stdin then), and sent as it is.
  const pipes = child.stdio.map((stream) => {
    if (!stream || !stream._handle) return null;
    const pipe = stream._handle;
    pipe.reading = false;
    pipe.readStop();
    stream._handle = null;
    stream.destroy();
    return pipe;
  });
  if (child.pid === undefined) return;
  children.set(m.id, child);
  const fds = [];
  pipes.forEach((pipe, i) => { if (pipe) fds.push(i); });
  send({ t: 'spawned', id: m.id, pid: child.pid, fds });
  // Once a descriptor is on its way, this process closes its copy.
  for (const i of fds) send({ t: 'fd', id: m.id, i }, pipes[i], () => pipes[i].close());
  child.once('exit', (code, signal) => { children.delete(m.id); send({ t: 'exit', id: m.id, code, signal }); });
});
`;

type HelperMessage =
  | { readonly t: 'ready'; readonly id?: undefined }
  | { readonly t: 'spawned'; readonly id: number; readonly pid: number; readonly fds: readonly number[] }
  | { readonly t: 'fd'; readonly id: number; readonly i: number }
  | {
      readonly t: 'exit';
      readonly id: number;
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
    }
  | { readonly t: 'error'; readonly id: number; readonly error: SpawnErrorFields };

interface SpawnErrorFields {
  readonly message: string;
  readonly code?: string;
  readonly errno?: number;
  readonly syscall?: string;
  readonly path?: string;
}

/**
 * How long a process the helper was asked for may take to be answered (started with every pipe
 * handed over, or failed) before it counts as lost. The helper answers in milliseconds; this is a
 * bound on a wait that must not be endless, should a request go unanswered (one chaos run's log
 * seemed to show one; later runs logged on both sides of the channel showed none but those of
 * nodes killed mid-request).
 */
export const SPAWN_ANSWER_MS = 15_000;

export class ForkServer implements ProcessSpawner {
  readonly #answerMs: number;
  #helper: ChildProcess | null = null;
  /** The helper has said it takes requests; `ready` settles then (or once it failed to start). */
  #ready = false;
  #started: Promise<void> | null = null;
  readonly #children = new Map<number, RemoteChild>();
  /** Children that keep this process's event loop alive (ref'd, and not exited yet). */
  readonly #held = new Set<number>();
  #nextId = 1;
  #closed = false;

  constructor(options: { readonly answerMs?: number } = {}) {
    this.#answerMs = options.answerMs ?? SPAWN_ANSWER_MS;
  }

  spawn(command: string, args: readonly string[], options: SpawnOptions): Promise<GitChild> {
    const stdio = pipesOnly(options.stdio);
    if (stdio === null || this.#closed || !this.#ready) {
      if (!this.#closed) void this.start();
      return directSpawner.spawn(command, args, options);
    }
    const id = this.#nextId++;
    const child = new RemoteChild({
      stdio,
      kill: (signal) => this.#send({ t: 'kill', id, signal }),
      hold: (on) => this.#hold(id, on),
      done: () => this.#forget(id),
    });
    this.#children.set(id, child);
    this.#hold(id, true);
    this.#send({ t: 'spawn', id, command, args, cwd: options.cwd, env: options.env, stdio });
    // Unanswered in time: the process fails (and is killed wherever it started) rather than being
    // waited for without end.
    const unanswered = setTimeout(() => {
      this.#send({ t: 'kill', id, signal: 'SIGKILL' });
      child.lost(`the git helper did not start ${command} within ${this.#answerMs} ms`);
    }, this.#answerMs);
    unanswered.unref();
    void child.ready.then(() => clearTimeout(unanswered));
    return child.ready;
  }

  close(): void {
    this.#closed = true;
    if (this.#children.size === 0) this.#stop();
  }

  /** The helper's pid (tests). */
  get helperPid(): number | undefined {
    return this.#helper?.pid;
  }

  /**
   * Starts the helper unless it runs; settles once it takes requests, or could not start (its
   * processes are then started by node's spawn, and the next one tries again).
   */
  start(): Promise<void> {
    if (this.#started !== null) return this.#started;
    let helper: ChildProcess;
    try {
      helper = spawn(process.execPath, ['-e', HELPER], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
    } catch {
      return Promise.resolve();
    }
    this.#helper = helper;
    let settle!: () => void;
    this.#started = new Promise((resolve) => {
      settle = resolve;
    });
    helper.on('message', (message: HelperMessage, handle?: object) => {
      if (message.t !== 'ready') this.#receive(message, handle);
      else if (this.#helper === helper) {
        this.#ready = true;
        settle();
      }
    });
    const gone = () => {
      settle();
      if (this.#helper !== helper) return;
      this.#helper = null;
      this.#ready = false;
      this.#started = null;
      this.#held.clear();
      const lost = [...this.#children.values()];
      this.#children.clear();
      for (const child of lost) child.lost();
    };
    helper.once('error', gone);
    helper.once('exit', gone);
    this.#refHelper();
    return this.#started;
  }

  #send(message: object): void {
    const helper = this.#helper;
    if (helper?.connected) helper.send(message);
  }

  #receive(message: Exclude<HelperMessage, { t: 'ready' }>, handle: object | undefined): void {
    const child = this.#children.get(message.id);
    if (child === undefined) {
      (handle as { close(): void } | undefined)?.close();
      return;
    }
    if (message.t === 'spawned') child.spawned(message.pid, message.fds);
    else if (message.t === 'fd') child.received(message.i, handle ?? null);
    else if (message.t === 'exit') child.exited(message.code, message.signal);
    else child.failed(spawnError(message.error));
  }

  #hold(id: number, on: boolean): void {
    if (on && this.#children.has(id)) this.#held.add(id);
    else this.#held.delete(id);
    this.#refHelper();
  }

  #forget(id: number): void {
    this.#children.delete(id);
    this.#held.delete(id);
    this.#refHelper();
    if (this.#closed && this.#children.size === 0) this.#stop();
  }

  /** The helper keeps this process alive only while a child that should is running. */
  #refHelper(): void {
    const helper = this.#helper;
    if (helper === null) return;
    const channel = helper.channel as { ref(): void; unref(): void } | null | undefined;
    if (this.#held.size > 0) {
      helper.ref();
      channel?.ref();
    } else {
      helper.unref();
      channel?.unref();
    }
  }

  #stop(): void {
    const helper = this.#helper;
    if (helper?.connected) helper.disconnect();
  }
}

/** Which stdio entries are pipes, for a stdio of pipes and `ignore` only; null otherwise. */
function pipesOnly(stdio: SpawnOptions['stdio']): ('pipe' | 'ignore')[] | null {
  const entries = typeof stdio === 'string' ? [stdio, stdio, stdio] : stdio;
  const kinds: ('pipe' | 'ignore')[] = [];
  for (const entry of entries) {
    if (entry === 'pipe' || entry === 'overlapped') kinds.push('pipe');
    else if (entry === 'ignore') kinds.push('ignore');
    else if (entry === null || entry === undefined) kinds.push(kinds.length < 3 ? 'pipe' : 'ignore');
    else return null;
  }
  while (kinds.length < 3) kinds.push('pipe');
  return kinds;
}

function spawnError(fields: SpawnErrorFields): Error {
  return Object.assign(new Error(fields.message), {
    ...(fields.code !== undefined ? { code: fields.code } : {}),
    ...(fields.errno !== undefined ? { errno: fields.errno } : {}),
    ...(fields.syscall !== undefined ? { syscall: fields.syscall } : {}),
    ...(fields.path !== undefined ? { path: fields.path } : {}),
  });
}

/**
 * A process the helper started, as node's ChildProcess shows one: answered (`ready`) once every
 * pipe has arrived, `close` once it exited and its output pipes closed.
 */
class RemoteChild extends EventEmitter implements GitChild {
  stdio: (Readable | Writable | null)[];
  pid: number | undefined = undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  killed = false;
  readonly ready: Promise<GitChild>;
  readonly #kinds: readonly ('pipe' | 'ignore')[];
  readonly #kill: (signal: NodeJS.Signals) => void;
  readonly #holdOn: (on: boolean) => void;
  readonly #onDone: () => void;
  #answer!: (child: GitChild) => void;
  #awaited = 0;
  /** Output pipes still open, and whether it exited: `close` comes when both are done. */
  #openOutputs = 0;
  #exited = false;
  /** `close` (or `error`) was emitted. */
  #over = false;
  /** The helper is done with it (`done` was called). */
  #released = false;

  constructor(options: {
    stdio: readonly ('pipe' | 'ignore')[];
    kill: (signal: NodeJS.Signals) => void;
    hold: (on: boolean) => void;
    /** It exited, could not start, or was lost: the helper will say no more about it. */
    done: () => void;
  }) {
    super();
    this.#kinds = options.stdio;
    this.stdio = options.stdio.map(() => null);
    this.#kill = options.kill;
    this.#holdOn = options.hold;
    this.#onDone = options.done;
    this.ready = new Promise((resolve) => {
      this.#answer = resolve;
    });
  }

  get stdin(): Writable | null {
    return (this.stdio[0] as Writable | null | undefined) ?? null;
  }

  get stdout(): Readable | null {
    return (this.stdio[1] as Readable | null | undefined) ?? null;
  }

  get stderr(): Readable | null {
    return (this.stdio[2] as Readable | null | undefined) ?? null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.#released) return false;
    this.killed = true;
    this.#kill(signal);
    return true;
  }

  ref(): void {
    if (!this.#released) this.#holdOn(true);
  }

  unref(): void {
    this.#holdOn(false);
  }

  spawned(pid: number, fds: readonly number[]): void {
    this.pid = pid;
    this.#awaited = fds.length;
    if (this.#awaited === 0) this.#start();
  }

  received(index: number, pipe: object | null): void {
    if (pipe !== null) {
      // As node's spawn makes a child's stdio streams (child_process createSocket), except that an
      // output is not read until someone reads it: node's spawn hands its child over at once, but
      // this one is handed over only once its last pipe arrives, and a stream reading meanwhile
      // can see the end of a process that exited at once and emit `end` to nobody (`manualStart`,
      // net.Socket's option for a handle not to be read yet). A caller waiting for that `end`
      // then waited without end: fetches in chaos runs did, whose upload-pack found its
      // generation deleted and exited before its stderr was handed over.
      const socket = new Socket({
        handle: pipe,
        readable: index > 0,
        manualStart: true,
      } as unknown as SocketConstructorOpts);
      this.stdio[index] = socket;
      if (index > 0) {
        this.#openOutputs++;
        socket.once('close', () => {
          this.#openOutputs--;
          this.#maybeClose();
        });
      }
    }
    if (--this.#awaited === 0) this.#start();
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.exitCode = code;
    this.signalCode = signal;
    this.#exited = true;
    // node ends a child's stdin once it exits: nobody reads it any more.
    this.stdin?.destroy();
    // Nothing more can come from the helper about it, and, as with node's own children, an exited
    // process keeps nobody's event loop alive, whether or not its pipes were read to the end.
    this.#done();
    this.emit('exit', code, signal);
    // As node does for its own children: what nobody read of its output is read now, on the next
    // tick (the last chance to start reading it), so that its pipes see their end and it closes.
    process.nextTick(() => {
      for (const stream of this.stdio.slice(1))
        if (stream instanceof Readable && stream.readable) stream.resume();
    });
    this.#maybeClose();
  }

  /**
   * It could not start: the pipes it has not got are empty ones, and `error` then `close` follow,
   * as with node's spawn.
   */
  failed(error: Error): void {
    if (this.#released) return;
    this.#done();
    for (const [i, stream] of this.stdio.entries())
      if (stream === null && this.#kinds[i] === 'pipe')
        this.stdio[i] =
          i === 0 ? new Writable({ write: (_chunk, _encoding, done) => done() }) : Readable.from([]);
    this.#answer(this);
    setImmediate(() => {
      this.#over = true;
      this.emit('error', error);
      this.emit('close', null, null);
    });
  }

  /** The helper died: how it ends cannot be known, so it is stopped and fails. */
  lost(why = 'the process that started git stopped'): void {
    if (this.pid !== undefined && !this.#released) {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    this.failed(new Error(why));
  }

  #start(): void {
    this.#answer(this);
    this.emit('spawn');
  }

  #maybeClose(): void {
    if (this.#over || !this.#exited || this.#openOutputs > 0 || this.#awaited > 0) return;
    this.#over = true;
    this.emit('close', this.exitCode, this.signalCode);
  }

  /** Over, as far as the helper is concerned: it exited, could not start, or was lost. */
  #done(): void {
    if (this.#released) return;
    this.#released = true;
    this.#onDone();
  }
}

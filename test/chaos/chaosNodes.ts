/**
 * The nodes of a chaos run: real `narwal serve` processes sharing one data directory (one
 * embedded store, one cache directory), each in a slot that can be killed with SIGKILL and
 * restarted on a new port. A process that exits without being killed is a crash, reported.
 */
import type { ChildProcess } from 'node:child_process';
import { startProcess } from '../helpers/narwalServer.js';
import type { NodeChoice } from './chaosClient.js';

interface Running {
  readonly url: string;
  readonly authUrl: string;
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export class NodeSlot {
  readonly name: string;
  readonly env: Record<string, string>;
  #current: Running | null = null;
  #killing = false;
  /** Output of processes that are gone, for fault counts and crash reports. */
  readonly pastOutput: string[] = [];
  readonly crashes: string[] = [];

  constructor(name: string, env: Record<string, string>) {
    this.name = name;
    this.env = env;
  }

  get up(): boolean {
    return this.#current !== null;
  }

  choice(): NodeChoice | null {
    return this.#current ? { name: this.name, url: this.#current.authUrl } : null;
  }

  async start(dataDir: string): Promise<void> {
    const running = await startProcess({ dataDir, env: this.env });
    this.#killing = false;
    running.child.once('exit', (code, signal) => {
      this.pastOutput.push(running.output());
      if (this.#current === running) this.#current = null;
      if (!this.#killing)
        this.crashes.push(
          `${this.name} exited by itself (${code ?? signal}):\n${running.output().slice(-4000)}`,
        );
    });
    this.#current = running;
  }

  /** SIGKILL, as a crashed machine or a Lambda timeout would: no cleanup of any kind. */
  async kill(): Promise<boolean> {
    const running = this.#current;
    if (running === null) return false;
    this.#killing = true;
    this.#current = null;
    const exited = new Promise((done) => running.child.once('exit', done));
    running.child.kill('SIGKILL');
    await exited;
    return true;
  }

  async stop(): Promise<void> {
    const running = this.#current;
    if (running === null) return;
    this.#killing = true;
    this.#current = null;
    await running.stop();
  }

  /** Everything every process of this slot printed. */
  output(): string {
    return [...this.pastOutput, this.#current?.output() ?? ''].join('\n');
  }
}

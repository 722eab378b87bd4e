/**
 * Faults a chaos run injects besides the store's own (NARWAL_STORE_FAULTS, per node): SIGKILL of a
 * node at chosen moments (while it handles a push, i.e. between receiving the pack and the CAS or
 * around it; while it serves a clone; while it rebuilds a cache that was just deleted; at any
 * moment), each followed by a restart, and deletion of the whole shared cache directory.
 */
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeSlot } from './chaosNodes.js';
import type { Op, Recorder } from './history.js';

export type KillMoment = 'push' | 'clone' | 'rebuild' | 'any';

export class FaultInjector {
  readonly kills: Record<KillMoment, number> = { push: 0, clone: 0, rebuild: 0, any: 0 };
  cacheDeletions = 0;
  readonly #slots: readonly NodeSlot[];
  readonly #dataDir: string;
  readonly #cacheDir: string;
  readonly #recorder: Recorder;
  readonly #random: () => number;

  constructor(options: {
    slots: readonly NodeSlot[];
    dataDir: string;
    cacheDir: string;
    recorder: Recorder;
    random: () => number;
  }) {
    this.#slots = options.slots;
    this.#dataDir = options.dataDir;
    this.#cacheDir = options.cacheDir;
    this.#recorder = options.recorder;
    this.#random = options.random;
  }

  get killed(): number {
    return Object.values(this.kills).reduce((a, b) => a + b, 0);
  }

  /** Kills and restarts nodes until `until()` is false, one every `everyMs` on average. */
  async killLoop(until: () => boolean, everyMs: number): Promise<void> {
    while (until()) {
      await sleep(everyMs / 2 + this.#random() * everyMs);
      if (!until()) return;
      const moments: KillMoment[] = ['push', 'push', 'clone', 'rebuild', 'any'];
      const moment = moments[Math.floor(this.#random() * moments.length)] as KillMoment;
      const slot = await this.#victim(moment);
      if (slot === null) continue;
      if (await slot.kill()) this.kills[moment]++;
      await sleep(200 + this.#random() * 1000);
      await this.restart(slot);
    }
  }

  /** Deletes the whole cache directory every `everyMs` on average. */
  async cacheLoop(until: () => boolean, everyMs: number): Promise<void> {
    while (until()) {
      await sleep(everyMs / 2 + this.#random() * everyMs);
      if (!until()) return;
      await this.deleteCache();
    }
  }

  async deleteCache(): Promise<void> {
    // Nodes write into it meanwhile: retry until one pass removes it.
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await rm(this.#cacheDir, { recursive: true, force: true });
        this.cacheDeletions++;
        return;
      } catch {
        await sleep(10);
      }
    }
  }

  /** Restarts a slot whose process is gone; a node that cannot start is retried. */
  async restart(slot: NodeSlot): Promise<void> {
    for (let attempt = 1; !slot.up; attempt++) {
      try {
        await slot.start(this.#dataDir);
      } catch (error) {
        slot.crashes.push(
          `${slot.name} failed to start: ${error instanceof Error ? error.message : String(error)}`,
        );
        if (attempt >= 5) throw error;
        await sleep(500);
      }
    }
  }

  /** A node to kill at `moment`, once it comes (or null if it does not within a few seconds). */
  async #victim(moment: KillMoment): Promise<NodeSlot | null> {
    const up = this.#slots.filter((s) => s.up);
    if (up.length < 2) return null; // Keep one node serving, so the run keeps making history.
    if (moment === 'any') return up[Math.floor(this.#random() * up.length)] ?? null;
    if (moment === 'rebuild') await this.deleteCache();
    const kind: Op['kind'] = moment === 'push' ? 'push' : 'clone';
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      const busy = up.filter(
        (s) => this.#recorder.inFlight(s.name, moment === 'rebuild' ? undefined : kind).length > 0,
      );
      const slot = busy[Math.floor(this.#random() * busy.length)];
      if (slot) {
        // Somewhere inside the operation: receiving, storing the pack, at the CAS, streaming.
        await sleep(20 + this.#random() * 400);
        return slot;
      }
      await sleep(10);
    }
    return null;
  }
}

/**
 * Stops one call of a real store where the test says, as if its process had been frozen right
 * there (a Lambda sandbox between invocations, SIGSTOP), while everything else goes on; the
 * call then goes through to the real store. Decorators, not stand-ins: every call is the real one.
 */

import type { Readable } from 'node:stream';
import type { PresenceRecord, PresenceStore } from '../../lib/presence/PresenceStore.js';
import type {
  GetOptions,
  ObjectStore,
  PutBody,
  PutOptions,
  PutStreamOptions,
} from '../../lib/store/ObjectStore.js';

export class Gate {
  readonly #match: (op: string, key: string) => boolean;
  #armed = true;
  #arrive: () => void = () => {};
  #open: () => void = () => {};
  /** Settles when the first matching call arrives (and is held). */
  readonly reached: Promise<void>;
  readonly #opened: Promise<void>;

  constructor(match: (op: string, key: string) => boolean) {
    this.#match = match;
    this.reached = new Promise((done) => {
      this.#arrive = done;
    });
    this.#opened = new Promise((done) => {
      this.#open = done;
    });
  }

  /** Lets the held call (and any later one) through. */
  release(): void {
    this.#armed = false;
    this.#open();
  }

  /** Holds the first matching call until release(); every other call passes at once. */
  async pass(op: string, key: string): Promise<void> {
    if (!this.#armed || !this.#match(op, key)) return;
    this.#armed = false;
    this.#arrive();
    await this.#opened;
  }
}

export function gatedStore(inner: ObjectStore, gate: Gate): ObjectStore {
  return {
    async get(key: string, options?: GetOptions) {
      await gate.pass('get', key);
      return inner.get(key, options);
    },
    async getStream(key: string) {
      await gate.pass('getStream', key);
      return inner.getStream(key);
    },
    async head(key: string) {
      await gate.pass('head', key);
      return inner.head(key);
    },
    async stat(key: string) {
      await gate.pass('stat', key);
      return inner.stat(key);
    },
    async putStream(key: string, body: Readable, options: PutStreamOptions) {
      await gate.pass('putStream', key);
      return inner.putStream(key, body, options);
    },
    async put(key: string, body: PutBody, options?: PutOptions) {
      await gate.pass('put', key);
      return inner.put(key, body, options);
    },
    async list(prefix: string, options?: { startAfter?: string; limit?: number }) {
      await gate.pass('list', prefix);
      return inner.list(prefix, options);
    },
    async delete(key: string) {
      await gate.pass('delete', key);
      return inner.delete(key);
    },
    async renew(key: string) {
      await gate.pass('renew', key);
      return inner.renew(key);
    },
  };
}

/** Keys are `<partition> <id>`. */
export function gatedPresence(inner: PresenceStore, gate: Gate): PresenceStore {
  return {
    async tryCreate(record: PresenceRecord) {
      await gate.pass('tryCreate', `${record.key} ${record.id}`);
      return inner.tryCreate(record);
    },
    async renew(key: string, id: string, owner: string, expiresAt: number) {
      await gate.pass('renew', `${key} ${id}`);
      return inner.renew(key, id, owner, expiresAt);
    },
    async release(key: string, id: string, owner: string) {
      await gate.pass('release', `${key} ${id}`);
      return inner.release(key, id, owner);
    },
    async get(key: string, id: string) {
      await gate.pass('get', `${key} ${id}`);
      return inner.get(key, id);
    },
    async list(key: string, idPrefix?: string) {
      await gate.pass('list', `${key} ${idPrefix ?? ''}`);
      return inner.list(key, idPrefix);
    },
  };
}

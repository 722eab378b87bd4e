/**
 * Tokens live in the object store next to the repositories, keyed by the SHA-256 of the secret
 * (the secret itself is never stored). The admin token comes from configuration.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import type { Principal } from './Principal.js';

const PREFIX = 'auth/tokens/';

export interface TokenSpec {
  readonly name: string;
  readonly owner?: string;
  readonly admin?: boolean;
  readonly create?: boolean;
  readonly read?: readonly string[];
  readonly write?: readonly string[];
}

export class TokenStore {
  readonly #store: ObjectStore;
  readonly #admin: Buffer;

  constructor(store: ObjectStore, adminToken: string) {
    this.#store = store;
    this.#admin = digest(adminToken);
  }

  /** The principal a secret stands for, or null. */
  async find(secret: string): Promise<Principal | null> {
    if (secret === '') return null;
    const hash = digest(secret);
    if (timingSafeEqual(hash, this.#admin)) {
      return { name: 'admin', admin: true, create: true, read: [], write: [] };
    }
    try {
      const got = await this.#store.get(`${PREFIX}${hash.toString('hex')}.json`);
      if (got.notModified) return null;
      return JSON.parse(got.body.toString('utf8')) as Principal;
    } catch (error) {
      if (isStoreError(error, 'NotFound')) return null;
      throw error;
    }
  }

  /** Issues a new token and returns its secret (shown once). */
  async create(spec: TokenSpec): Promise<{ secret: string; principal: Principal }> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(spec.name)) {
      throw new Error(
        `invalid token name ${JSON.stringify(spec.name)}: letters, digits, . _ @ - (at most 64)`,
      );
    }
    const secret = `nwl_${randomBytes(24).toString('base64url')}`;
    const principal: Principal = {
      name: spec.name,
      ...(spec.owner ? { owner: spec.owner } : {}),
      admin: spec.admin ?? false,
      create: spec.create ?? false,
      read: spec.read ?? [],
      write: spec.write ?? [],
    };
    await this.#store.put(
      `${PREFIX}${digest(secret).toString('hex')}.json`,
      Buffer.from(JSON.stringify(principal)),
      {
        ifNoneMatch: '*',
      },
    );
    return { secret, principal };
  }
}

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/**
 * Tokens live in the object store beside the repositories, one record per token at
 * `auth/tokens/<id>.json` holding a salted hash (see tokenSecret.ts), never the secret. The admin
 * token comes from configuration and is held the same way: only its salted hash stays in memory.
 *
 * Lookups are cached per process for `cacheMs` from the moment the record was read, so a revoked
 * token stops working on every node within that bound; with 0 every request reads the record.
 * An id with no record is remembered the same way, for the same time, by the same code: an
 * unknown id then costs what a wrong secret costs (no store read while cached), so neither the
 * store's load nor the answer's timing tells the two apart. Unknown ids are kept in a bound of
 * their own, so a flood of made-up ids cannot push real tokens out of the cache.
 */
import { fixedSecret, type Secret } from '../secrets/Secret.js';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { mapLimit } from '../util/mapLimit.js';
import { GLOBAL, type Grant, InvalidGrant, type Principal, parsePattern } from './Principal.js';
import { TtlCache } from './TtlCache.js';
import {
  decodeTokenRecord,
  encodeTokenRecord,
  infoOf,
  principalOf,
  TOKENS_PREFIX,
  type TokenInfo,
  type TokenRecord,
  tokenKey,
} from './tokenRecord.js';
import { decoyHash, hashToken, newToken, type SecretHash, tokenId, verifyToken } from './tokenSecret.js';

export interface TokenSpec {
  readonly name: string;
  readonly owner?: string;
  readonly grants: readonly Grant[];
  readonly create?: boolean;
}

export interface TokenStoreOptions {
  /** How long a record read from the store may be trusted: the revocation bound. */
  readonly cacheMs: number;
  /** `lastUsed` is rewritten at most this often per token (default one hour). */
  readonly lastUsedEveryMs?: number;
  /** How many ids without a record are remembered at once (default 10,000). */
  readonly maxUnknownIds?: number;
  readonly now?: () => number;
}

export class TokenNotFound extends Error {
  readonly code = 'TokenNotFound';
  constructor(readonly ref: string) {
    super(`no token with id or name ${JSON.stringify(ref)}`);
  }
}

export class AmbiguousToken extends Error {
  readonly code = 'AmbiguousToken';
  constructor(
    readonly ref: string,
    readonly ids: readonly string[],
  ) {
    super(`${ids.length} tokens are named ${JSON.stringify(ref)} (${ids.join(', ')}): revoke by id`);
  }
}

const ADMIN: Principal = { name: 'admin', grants: [{ scope: 'admin', pattern: GLOBAL }], create: true };
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const OWNER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

interface Cached {
  readonly record: TokenRecord;
  readonly etag: string;
  /** This process already tried to refresh `lastUsed` for this read of the record. */
  touched: boolean;
}

export class TokenStore {
  readonly #store: ObjectStore;
  /** The configured admin token; null where none is configured (the CLI checks no token). */
  readonly #admin: Secret | null;
  /** The hash of the admin token's value last read, recomputed when the value changes. */
  #adminHash: { readonly value: string; readonly hash: SecretHash } | null = null;
  readonly #decoy = decoyHash();
  readonly #cache: TtlCache<string, Cached>;
  /** Ids read and found to have no record, trusted for as long as a record would be. */
  readonly #unknown: TtlCache<string, null>;
  readonly #reading = new Map<string, Promise<Cached | null>>();
  readonly #lastUsedEveryMs: number;
  readonly #now: () => number;

  constructor(store: ObjectStore, adminToken: string | Secret | undefined, options: TokenStoreOptions) {
    this.#store = store;
    this.#admin =
      adminToken === undefined ? null : typeof adminToken === 'string' ? fixedSecret(adminToken) : adminToken;
    this.#now = options.now ?? Date.now;
    this.#lastUsedEveryMs = options.lastUsedEveryMs ?? 3_600_000;
    this.#cache = new TtlCache({ ttlMs: options.cacheMs, maxEntries: 10_000, now: this.#now });
    this.#unknown = new TtlCache({
      ttlMs: options.cacheMs,
      maxEntries: options.maxUnknownIds ?? 10_000,
      now: this.#now,
    });
  }

  /**
   * The principal a presented token stands for, or null. Every token costs the same two
   * constant-time checks whether its id is unknown or its secret is wrong.
   */
  async find(presented: string): Promise<Principal | null> {
    const admin = await this.#adminHashOf(false);
    let isAdmin = verifyToken(presented, admin ?? this.#decoy) && admin !== null;
    const id = tokenId(presented);
    const cached = id === null ? null : await this.#read(id);
    const valid = verifyToken(presented, cached?.record.hash ?? this.#decoy);
    if (!isAdmin && id === null && admin !== null) {
      // Not a token of the store and not the admin token read last: the admin token may have been
      // rotated. The secret is read again at most every half minute, whatever is presented.
      const fresh = await this.#adminHashOf(true);
      if (fresh !== admin && fresh !== null) isAdmin = verifyToken(presented, fresh);
    }
    if (isAdmin) return ADMIN;
    if (cached === null || !valid) return null;
    await this.#touch(cached);
    return principalOf(cached.record);
  }

  async #adminHashOf(refresh: boolean): Promise<SecretHash | null> {
    if (this.#admin === null) return null;
    const value = await (refresh ? this.#admin.refresh() : this.#admin.current());
    if (this.#adminHash?.value !== value) this.#adminHash = { value, hash: hashToken(value) };
    return this.#adminHash.hash;
  }

  /** Issues a new token and returns it (the only time it is ever shown). */
  async create(spec: TokenSpec): Promise<{ token: string; info: TokenInfo }> {
    if (!NAME.test(spec.name)) {
      throw new InvalidGrant(
        `invalid token name ${JSON.stringify(spec.name)}: letters, digits, . _ @ - (at most 64)`,
      );
    }
    if (spec.owner !== undefined && !OWNER.test(spec.owner)) {
      throw new InvalidGrant(`invalid owner ${JSON.stringify(spec.owner)}: letters, digits, . _ -`);
    }
    if (spec.grants.length === 0) throw new InvalidGrant('a token needs at least one scope');
    for (const grant of spec.grants) parsePattern(grant.pattern);
    const { id, token } = newToken();
    const record: TokenRecord = {
      id,
      name: spec.name,
      ...(spec.owner !== undefined ? { owner: spec.owner } : {}),
      grants: spec.grants,
      create: spec.create ?? false,
      created: new Date(this.#now()).toISOString(),
      hash: hashToken(token),
    };
    await this.#store.put(tokenKey(id), encodeTokenRecord(record), {
      ifNoneMatch: '*',
      contentType: 'application/json',
    });
    this.#unknown.delete(id);
    return { token, info: infoOf(record) };
  }

  /** Every token, oldest first: what each may do, never a secret or a hash. */
  async list(): Promise<TokenInfo[]> {
    const ids: string[] = [];
    let startAfter: string | undefined;
    do {
      const page = await this.#store.list(TOKENS_PREFIX, startAfter ? { startAfter } : {});
      for (const key of page.keys) {
        const match = /^auth\/tokens\/([0-9a-f]{16})\.json$/.exec(key);
        if (match?.[1]) ids.push(match[1]);
      }
      startAfter = page.next;
    } while (startAfter);
    const found = await mapLimit(ids, 16, (id) => this.#get(id));
    return found
      .filter((c): c is Cached => c !== null)
      .map((c) => infoOf(c.record))
      .sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id));
  }

  /** Revokes by id, or by name when exactly one token has it. Other nodes follow within `cacheMs`. */
  async revoke(ref: string): Promise<TokenInfo> {
    const all = await this.list();
    const byId = all.find((t) => t.id === ref);
    const named = all.filter((t) => t.name === ref);
    const target = byId ?? (named.length === 1 ? named[0] : undefined);
    if (target === undefined) {
      if (named.length > 1)
        throw new AmbiguousToken(
          ref,
          named.map((t) => t.id),
        );
      throw new TokenNotFound(ref);
    }
    await this.#store.delete(tokenKey(target.id));
    this.#cache.delete(target.id);
    return target;
  }

  async #read(id: string): Promise<Cached | null> {
    const cached = this.#cache.get(id) ?? this.#unknown.get(id);
    if (cached !== undefined) return cached;
    // Concurrent requests with one token share one read.
    let reading = this.#reading.get(id);
    if (reading === undefined) {
      const readAt = this.#now();
      reading = this.#get(id).then((got) => {
        if (got === null) this.#unknown.set(id, null, readAt);
        else this.#cache.set(id, got, readAt);
        return got;
      });
      this.#reading.set(id, reading);
      void reading.then(
        () => this.#reading.delete(id),
        () => this.#reading.delete(id),
      );
    }
    return reading;
  }

  async #get(id: string): Promise<Cached | null> {
    try {
      const got = await this.#store.get(tokenKey(id));
      if (got.notModified) return null;
      return { record: decodeTokenRecord(id, got.body), etag: got.etag, touched: false };
    } catch (error) {
      if (isStoreError(error, 'NotFound')) return null;
      throw error;
    }
  }

  /**
   * Records when a token was last used, at most once per `lastUsedEveryMs`. Only the version
   * read is replaced (`If-Match`), so this can never bring back a token revoked meanwhile; any
   * failure leaves the old time, which is all it costs.
   */
  async #touch(cached: Cached): Promise<void> {
    const now = this.#now();
    const last = cached.record.lastUsed;
    if (cached.touched || (last !== undefined && now - Date.parse(last) < this.#lastUsedEveryMs)) return;
    cached.touched = true;
    const record: TokenRecord = { ...cached.record, lastUsed: new Date(now).toISOString() };
    try {
      const put = await this.#store.put(tokenKey(record.id), encodeTokenRecord(record), {
        ifMatch: cached.etag,
        contentType: 'application/json',
      });
      this.#cache.update(record.id, { record, etag: put.etag, touched: true });
    } catch {
      // Revoked, raced by another node, or the store is briefly down: the request goes on.
    }
  }
}

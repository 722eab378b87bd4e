/**
 * The presence port over an ObjectStore: the embedded default. Each record is one small JSON
 * object, and every state change is one of the store's conditional writes, so with
 * `FsObjectStore` it is safe for several processes sharing one directory (create-only is link(2),
 * If-Match takes a per-key lock and answers 409 to a racing writer), and over `S3ObjectStore` for
 * several machines.
 * - tryCreate: put `If-None-Match: *`; when the key exists and its record has expired, replace
 *   exactly the version read with `If-Match`. A write that loses a race re-reads and decides again.
 * - renew: read, check owner and expiry, put `If-Match`.
 * - release: read, check owner, then delete (see `release` for the one window the port leaves).
 * - get/list: reads filtered on expiry with the injected clock; nothing is deleted on read.
 *
 * Object keys: `<prefix><enc(key)>.k/<enc(id)>.r`, where enc is the lowercase hex of the UTF-8
 * bytes cut into 250-character path segments. Hex is prefix-preserving and byte-ordered (so
 * `list(key, idPrefix)` is one store list of `<prefix><enc(key)>.k/<enc(idPrefix)>` and comes back
 * in UTF-8 order, as DynamoDB sorts its sort keys), uses no character a filesystem or S3 treats
 * specially, cannot collide on case-insensitive filesystems, and segments stay under the usual
 * 255-byte name limit. The `.k`/`.r` suffixes keep a key that is a prefix of another key (or an id
 * that fills a whole segment) from sharing a directory with it.
 */
import { randomUUID } from 'node:crypto';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { type PresenceRecord, type PresenceStore, PresenceUnavailable } from './PresenceStore.js';

export interface ObjectPresenceStoreOptions {
  readonly store: ObjectStore;
  /** Prepended to every object key; default `presence/`. */
  readonly prefix?: string;
  /** Milliseconds since the epoch; every expiry check uses it. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * How many times a conditional write that lost a race re-reads and tries again. Each retry follows
 * a change by someone else, so running out means the record is contended: tryCreate and renew
 * then answer false, which never lets two holders in.
 */
const MAX_ATTEMPTS = 5;

/**
 * release deletes outright only a record that stays live this much longer by our clock: nobody
 * may replace a live record, so nothing can slip in between our read and our delete unless
 * another machine's clock runs this far ahead of ours.
 */
const RELEASE_MARGIN_MS = 5_000;

/**
 * Hex characters per path segment: with its `.k` or `.r`, 252 bytes, under the usual 255-byte name
 * limit. A key or id of up to 125 bytes is one name. A longer id is filed in a directory per
 * segment, which a release leaves behind when the store keeps emptied directories (the embedded
 * presence store does): a read lease's id (`lease#<generation>#<uuid>`, 68 bytes) once took two
 * segments at 128, and every lease left a directory of its own.
 */
const SEGMENT = 250;
const LIST_CONCURRENCY = 16;

/** The stored form; `writeId` is unique per write, so S3's read-back after a 5xx is exact. */
interface StoredRecord extends PresenceRecord {
  readonly writeId: string;
}

interface Version {
  readonly record: StoredRecord;
  readonly etag: string;
}

export class ObjectPresenceStore implements PresenceStore {
  readonly #store: ObjectStore;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor({ store, prefix = 'presence/', now = Date.now }: ObjectPresenceStoreOptions) {
    this.#store = store;
    this.#prefix = prefix;
    this.#now = now;
  }

  async tryCreate(record: PresenceRecord): Promise<boolean> {
    const path = this.#path(record.key, record.id);
    const body = serialize({ ...record, writeId: randomUUID() });
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (await this.#put(path, body, { ifNoneMatch: '*' })) return true;
      const current = await this.#read(path);
      if (current === null) continue; // released since our put: create again
      if (this.#live(current.record)) return false;
      if (await this.#put(path, body, { ifMatch: current.etag })) return true;
      // Someone replaced, renewed or released it after our read: look again.
    }
    return false;
  }

  async renew(key: string, id: string, owner: string, expiresAt: number): Promise<boolean> {
    const path = this.#path(key, id);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const current = await this.#read(path);
      if (current === null || current.record.owner !== owner || !this.#live(current.record)) return false;
      const body = serialize({ ...current.record, expiresAt, writeId: randomUUID() });
      if (await this.#put(path, body, { ifMatch: current.etag })) return true;
    }
    return false;
  }

  /**
   * The ObjectStore port has no conditional delete, so a delete cannot say "only the version I
   * read". Replacing a record needs it expired, so:
   * - live for at least RELEASE_MARGIN_MS more: delete it. The window that remains is a creator
   *   whose clock runs more than the margin ahead of ours replacing it between our read and delete.
   * - already expired: leave it. It is as good as absent and the next tryCreate replaces it, and a
   *   delete now could remove a replacement that raced in after our read.
   * - about to expire: mark it expired with an If-Match write (exact: a replacement makes it fail)
   *   and leave the object for the next tryCreate.
   * Records left behind this way (and those of holders that crashed) stay as objects until their
   * id is created again; `list` skips them but still reads them.
   */
  async release(key: string, id: string, owner: string): Promise<void> {
    const path = this.#path(key, id);
    const current = await this.#read(path);
    if (current === null || current.record.owner !== owner || !this.#live(current.record)) return;
    if (current.record.expiresAt - this.#now() >= RELEASE_MARGIN_MS) {
      await this.#call(() => this.#store.delete(path));
      return;
    }
    const expired = serialize({ ...current.record, expiresAt: 0, writeId: randomUUID() });
    await this.#put(path, expired, { ifMatch: current.etag });
  }

  async get(key: string, id: string): Promise<PresenceRecord | null> {
    const current = await this.#read(this.#path(key, id));
    return current !== null && this.#live(current.record) ? publicView(current.record) : null;
  }

  async list(key: string, idPrefix = ''): Promise<PresenceRecord[]> {
    const paths: string[] = [];
    const prefix = this.#path(key, idPrefix, false);
    let startAfter: string | undefined;
    do {
      const page = await this.#call(() => this.#store.list(prefix, { startAfter }));
      paths.push(...page.keys);
      startAfter = page.next;
    } while (startAfter !== undefined);

    const versions = await mapLimit(paths, LIST_CONCURRENCY, (path) => this.#read(path));
    const records: PresenceRecord[] = [];
    for (const version of versions) {
      // Skip what was released since the list, and anything not filed where its key and id say.
      if (version === null || !this.#live(version.record)) continue;
      if (version.record.key !== key || !version.record.id.startsWith(idPrefix)) continue;
      records.push(publicView(version.record));
    }
    return records;
  }

  #live(record: PresenceRecord): boolean {
    // "Milliseconds since the epoch after which the record no longer counts."
    return this.#now() <= record.expiresAt;
  }

  #path(key: string, id: string, record = true): string {
    return `${this.#prefix}${encode(key)}.k/${encode(id)}${record ? '.r' : ''}`;
  }

  /** The record and its etag, or null when there is none. */
  async #read(path: string): Promise<Version | null> {
    let got: Awaited<ReturnType<ObjectStore['get']>>;
    try {
      got = await this.#store.get(path);
    } catch (error) {
      if (isStoreError(error, 'NotFound')) return null;
      throw translate(error);
    }
    // A plain get never answers notModified; the check only narrows the type.
    if (got.notModified) return null;
    return { record: parse(got.body, path), etag: got.etag };
  }

  /** A conditional put: true when it landed, false when it lost a race (412 or 409). */
  async #put(
    path: string,
    body: Buffer,
    options: { ifNoneMatch: '*' } | { ifMatch: string },
  ): Promise<boolean> {
    try {
      await this.#store.put(path, body, { ...options, contentType: 'application/json' });
      return true;
    } catch (error) {
      if (isStoreError(error, 'PreconditionFailed') || isStoreError(error, 'ConditionalConflict'))
        return false;
      throw translate(error);
    }
  }

  async #call<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw translate(error);
    }
  }
}

/** StoreUnavailable (and any other store failure) becomes the port's retryable error. */
function translate(error: unknown): unknown {
  if (!isStoreError(error)) return error;
  return new PresenceUnavailable(`presence store: ${error.message}`, { cause: error });
}

/**
 * Hex of the UTF-8 bytes in path segments. A string with an unpaired surrogate has no UTF-8 form
 * (Buffer would substitute U+FFFD, making distinct ids collide), so it is refused.
 */
function encode(text: string): string {
  if (/\p{Surrogate}/u.test(text)) throw new TypeError(`presence key or id is not well-formed Unicode`);
  const hex = Buffer.from(text, 'utf8').toString('hex');
  const segments: string[] = [];
  for (let i = 0; i < hex.length; i += SEGMENT) segments.push(hex.slice(i, i + SEGMENT));
  return segments.join('/');
}

function serialize(record: StoredRecord): Buffer {
  const { key, id, owner, expiresAt, data, writeId } = record;
  return Buffer.from(JSON.stringify({ key, id, owner, expiresAt, data, writeId }));
}

function parse(body: Buffer, path: string): StoredRecord {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new Error(`presence record ${path} is not JSON`, { cause: error });
  }
  const r = value as Partial<Record<keyof StoredRecord, unknown>>;
  const dataOk =
    r.data === undefined ||
    (typeof r.data === 'object' &&
      r.data !== null &&
      Object.values(r.data).every((v) => typeof v === 'string'));
  if (
    typeof r.key !== 'string' ||
    typeof r.id !== 'string' ||
    typeof r.owner !== 'string' ||
    typeof r.expiresAt !== 'number' ||
    typeof r.writeId !== 'string' ||
    !dataOk
  ) {
    throw new Error(`presence record ${path} is malformed`);
  }
  return value as StoredRecord;
}

function publicView({ key, id, owner, expiresAt, data }: StoredRecord): PresenceRecord {
  return data === undefined ? { key, id, owner, expiresAt } : { key, id, owner, expiresAt, data };
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * The presence port: short-lived records that coordinate invocations sharing one cache (read
 * leases, the writer lock, "serving repo R from generation G until T"). Each record carries an
 * absolute expiry set from its holder's deadline; every read filters on it, because the backing
 * store may delete expired records late (DynamoDB TTL deletes within days, not seconds) or never.
 * An expired record is as good as absent: creating over it succeeds.
 */

export interface PresenceRecord {
  /** Partition, e.g. `repo#team/app`. */
  readonly key: string;
  /** Record within the partition, e.g. `writer` or `lease#<generation>#<uuid>`. */
  readonly id: string;
  /** Who holds it (an invocation or process id); only the owner may renew or release it. */
  readonly owner: string;
  /** Milliseconds since the epoch after which the record no longer counts. */
  readonly expiresAt: number;
  /** Small string attributes (generation name, host, purpose). */
  readonly data?: Readonly<Record<string, string>>;
}

export interface PresenceStore {
  /**
   * Creates the record unless a live record with the same key and id exists (an expired one is
   * replaced). Returns false when a live record is in the way.
   */
  tryCreate(record: PresenceRecord): Promise<boolean>;
  /** Moves the expiry of a record the owner holds; false when it is gone, expired or not the owner's. */
  renew(key: string, id: string, owner: string, expiresAt: number): Promise<boolean>;
  /** Removes the record if the owner holds it (a missing record is fine). */
  release(key: string, id: string, owner: string): Promise<void>;
  /** The live record, or null. */
  get(key: string, id: string): Promise<PresenceRecord | null>;
  /** Live records of a partition whose id starts with `idPrefix` (all when omitted). */
  list(key: string, idPrefix?: string): Promise<PresenceRecord[]>;
}

/** The presence store failed (throttling, network, 5xx): the caller may retry. */
export class PresenceUnavailable extends Error {
  readonly code = 'PresenceUnavailable';
}

/**
 * A ref's value as git speaks of it. The null object id names a ref that does not exist: the old
 * value of a ref a push creates, the new value of one it deletes (git-receive-pack(1), and the
 * `zero-id` of gitprotocol-pack(5)).
 */
export const ZERO_OID = '0000000000000000000000000000000000000000';

/** A ref's value: the object it names and, for an annotated tag, what it peels to. */
export interface RefValue {
  readonly oid: string;
  readonly peeled?: string;
}

/** A sequence number the log does not have (yet). */
export class NoSuchEntry extends Error {
  readonly code = 'NoSuchEntry';
  constructor(
    readonly repo: string,
    readonly seq: number,
    readonly last: number,
  ) {
    super(`${repo} has no entry ${seq} (its log has entries 1 to ${last})`);
  }
}

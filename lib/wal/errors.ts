/** The log's failures: what a reader or the publisher of a repository's log can run into. */

/** The repository has no index: it was never created, or it was deleted. */
export class RepoNotFound extends Error {
  readonly code = 'RepoNotFound';
  constructor(readonly repo: string) {
    super(`repository ${repo} does not exist`);
  }
}

/** A create found the repository's index already there. */
export class RepoExists extends Error {
  readonly code = 'RepoExists';
  constructor(repo: string) {
    super(`repository ${repo} already exists`);
  }
}

/** A CAS answered with an error and the index could not be read back: the push may or may not have landed. */
export class OutcomeUnknown extends Error {
  readonly code = 'OutcomeUnknown';
  constructor(
    readonly repo: string,
    options?: { cause?: unknown },
  ) {
    super(`the outcome of a push to ${repo} is unknown`, options);
  }
}

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

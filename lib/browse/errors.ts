/** Failures of the repository pages, translated to HTTP in lib/http/errorResponse.ts. */

/** No branch, tag, commit or log entry by that name (404). */
export class NoSuchRevision extends Error {
  readonly code = 'NoSuchRevision';
  constructor(
    readonly repo: string,
    readonly rev: string,
  ) {
    super(`${repo} has no branch, tag or commit named ${JSON.stringify(rev)}`);
  }
}

/** Nothing at that path in the commit, or not what the page shows (a file for a tree page) (404). */
export class NoSuchPath extends Error {
  readonly code = 'NoSuchPath';
  constructor(
    readonly rev: string,
    readonly path: string,
    readonly detail = 'no such path',
  ) {
    super(`${detail}: ${JSON.stringify(path)} at ${rev}`);
  }
}

/** A path no tree can hold: empty, `.` or `..` segments (400). */
export class InvalidBrowsePath extends Error {
  readonly code = 'InvalidBrowsePath';
}

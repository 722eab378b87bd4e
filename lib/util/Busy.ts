/**
 * A retryable refusal: the node is at one of its limits right now (git processes, fetch memory,
 * writers of one repository, a cache being rebuilt). The client is told to retry, with
 * `Retry-After`, never given a bare 500. Whoever reaches the limit raises it with the words the
 * client reads.
 */
export class Busy extends Error {
  readonly code = 'Busy';
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

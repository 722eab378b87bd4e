/**
 * The limits on a streamed response (REST API, responseTransferMode STREAM, Lambda
 * InvokeWithResponseStream), as AWS documents them:
 * - API Gateway: "the first 10MB of response payload is not subject to any bandwidth
 *   restrictions. Response payload data exceeding 10MB is restricted to 2MB/s"; a stream lasts "up
 *   to 15 minutes"; "For Regional or private endpoints, the [idle] timeout is 5 minutes".
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html
 * - Lambda: "Uncapped for the first 6 MB of your function's response. For responses larger than 6
 *   MB, 2MBps for the remainder"; "200 MB for each streamed response".
 *   https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 * Both apply in a row, so a client sees the stricter of each: 6 MB at full speed, then 2 MB/s.
 * MB is read as 10^6 bytes, the smaller reading.
 */

export interface StreamLimits {
  /** Bytes sent at full speed before the bandwidth limit applies. */
  readonly burstBytes: number;
  readonly bytesPerSecond: number;
  /** The stream is cut when the function writes nothing for this long. */
  readonly idleMs: number;
  /** The stream is cut this long after the invocation started. */
  readonly maxMs: number;
  /** The stream is cut past this many bytes. */
  readonly maxBytes: number;
}

export const AWS_STREAM_LIMITS: StreamLimits = {
  burstBytes: 6_000_000,
  bytesPerSecond: 2_000_000,
  idleMs: 5 * 60_000,
  maxMs: 15 * 60_000,
  maxBytes: 200 * 1024 * 1024,
};

/** Paces the bytes of one stream: how long to wait before passing on each chunk. */
export class StreamPacer {
  #sent = 0;
  readonly #started: number;
  #throttledSince: number | undefined;

  constructor(
    private readonly limits: StreamLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.#started = now();
  }

  get sent(): number {
    return this.#sent;
  }

  /** Milliseconds to wait before `bytes` more may go; throws once a hard limit is passed. */
  delayFor(bytes: number): number {
    this.#sent += bytes;
    if (this.#sent > this.limits.maxBytes) throw new StreamCut('over the streamed response limit');
    const throttled = this.#sent - this.limits.burstBytes;
    if (throttled <= 0) return 0;
    this.#throttledSince ??= this.now();
    const due = this.#throttledSince + (throttled / this.limits.bytesPerSecond) * 1000;
    return Math.max(0, due - this.now());
  }

  /** Milliseconds left before the stream's maximum duration. */
  remainingMs(): number {
    return this.#started + this.limits.maxMs - this.now();
  }
}

export class StreamCut extends Error {
  override readonly name = 'StreamCut';
}

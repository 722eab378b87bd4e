/** A destination of events (a webhook, an EventBridge bus): the port the dispatcher delivers to. */
import type { PushEvent } from './PushEvent.js';

export interface EventSink {
  /** Names the destination's delivery cursor in the store: stable across restarts and nodes. */
  readonly name: string;
  /** At most this many events per `deliver` call. */
  readonly batchSize: number;
  /**
   * Delivers `events` (consecutive, oldest first) and resolves with how many of them, from the
   * first, the destination accepted (at least one); throws DeliveryFailed when it took none.
   */
  deliver(events: readonly PushEvent[]): Promise<number>;
}

/** A destination refused or could not be reached; the dispatcher retries with backoff. */
export class DeliveryFailed extends Error {
  readonly code = 'DeliveryFailed';
  constructor(
    readonly sink: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${sink}: ${message}`, options);
  }
}

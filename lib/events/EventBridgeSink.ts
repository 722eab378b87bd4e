/**
 * Delivers events to an Amazon EventBridge bus with PutEvents, up to 10 entries per call (the
 * API's limit). Each entry: Source (default `narwal`), DetailType `narwal.<kind>` (e.g.
 * `narwal.push`), Detail the event's JSON (whose `id` is the idempotency key: EventBridge has no
 * deduplication of its own, so rules and targets dedupe on `detail.id`). PutEvents may accept some
 * entries and fail others (FailedEntryCount, an ErrorCode per entry): only the accepted prefix
 * counts, the rest is retried in order.
 */
import { PutEventsCommand, type PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import { DeliveryFailed, type EventSink } from './EventSink.js';
import type { PushEvent } from './PushEvent.js';

export interface EventBridgeOptions {
  /** An EventBridgeClient (only `send` of a PutEventsCommand is used). */
  readonly client: { send(command: PutEventsCommand): Promise<PutEventsCommandOutput> };
  /** Name or ARN of the event bus. */
  readonly bus: string;
  readonly source: string;
}

export class EventBridgeSink implements EventSink {
  readonly name = 'eventbridge';
  readonly batchSize = 10;
  readonly #options: EventBridgeOptions;

  constructor(options: EventBridgeOptions) {
    this.#options = options;
  }

  async deliver(events: readonly PushEvent[]): Promise<number> {
    const batch = events.slice(0, this.batchSize);
    if (batch.length === 0) return 0;
    let result: PutEventsCommandOutput;
    try {
      result = await this.#options.client.send(
        new PutEventsCommand({
          Entries: batch.map((event) => ({
            EventBusName: this.#options.bus,
            Source: this.#options.source,
            DetailType: `narwal.${event.kind}`,
            Detail: JSON.stringify(event),
            Time: new Date(event.time),
          })),
        }),
      );
    } catch (error) {
      const name = error instanceof Error ? error.name : 'Error';
      throw new DeliveryFailed(this.name, `PutEvents failed (${name})`, { cause: error });
    }
    const entries = result.Entries ?? [];
    let accepted = 0;
    while (accepted < batch.length && entries[accepted]?.EventId && !entries[accepted]?.ErrorCode) accepted++;
    if (accepted === 0) {
      const first = entries[0];
      throw new DeliveryFailed(
        this.name,
        `event ${batch[0]?.seq} refused (${first?.ErrorCode ?? 'no EventId'}${first?.ErrorMessage ? `: ${first.ErrorMessage}` : ''})`,
      );
    }
    return accepted;
  }
}

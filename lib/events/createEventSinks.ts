/**
 * The destinations the configuration names. The EventBridge SDK is loaded only when a bus is
 * configured, so a host without one starts without it.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { EventsConfig } from '../config.js';
import type { EventSink } from './EventSink.js';
import { WebhookSink } from './WebhookSink.js';

export async function createEventSinks(
  config: EventsConfig,
  options: { eventBridgeClient?: EventBridgeClient } = {},
): Promise<EventSink[]> {
  const sinks: EventSink[] = [];
  if (config.webhook) sinks.push(new WebhookSink(config.webhook));
  if (config.eventBridge) {
    const bridge = config.eventBridge;
    const [{ EventBridgeClient }, { EventBridgeSink }] = await Promise.all([
      import('@aws-sdk/client-eventbridge'),
      import('./EventBridgeSink.js'),
    ]);
    const client =
      options.eventBridgeClient ??
      new EventBridgeClient({
        region: bridge.region,
        ...(bridge.endpoint ? { endpoint: bridge.endpoint } : {}),
      });
    sinks.push(new EventBridgeSink({ client, bus: bridge.bus, source: bridge.source }));
  }
  return sinks;
}

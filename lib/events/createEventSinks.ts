/**
 * The destinations the configuration names. The EventBridge SDK is loaded only when a bus is
 * configured, so a host without one starts without it.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { configuredSecret, type SecretsManagerClients } from '../secrets/configuredSecret.js';
import type { EventSink } from './EventSink.js';
import type { EventsConfig } from './EventsConfig.js';
import { WebhookSink } from './WebhookSink.js';

export async function createEventSinks(
  config: EventsConfig,
  options: { eventBridgeClient?: EventBridgeClient; secrets?: SecretsManagerClients } = {},
): Promise<EventSink[]> {
  const sinks: EventSink[] = [];
  if (config.webhook) {
    const { secret: value, secretId, ...webhook } = config.webhook;
    const secret = options.secrets ? await configuredSecret({ value, secretId }, options.secrets) : value;
    if (secret === undefined) throw new Error('the webhook has no signing key');
    sinks.push(new WebhookSink({ ...webhook, secret }));
  }
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

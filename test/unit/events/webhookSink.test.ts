/**
 * Where a webhook may be delivered: a name that resolves to a loopback, link-local or private
 * address is refused at the moment of delivery (what the name resolves to then is what counts, so a
 * name cannot be pointed inward after the server started), unless the setting allows it. The
 * receiver is real, on this machine's loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryFailed } from '../../../lib/events/EventSink.js';
import type { PushEvent } from '../../../lib/events/PushEvent.js';
import { WebhookSink } from '../../../lib/events/WebhookSink.js';
import { WebhookReceiver } from '../../helpers/webhookReceiver.js';

const SECRET = 'a-webhook-secret-of-some-length';
const receiver = new WebhookReceiver(SECRET);

beforeAll(() => receiver.listen());
afterAll(() => receiver.close());

const event: PushEvent = {
  id: 'team/app@3f9a0c1b2d4e#7',
  repo: 'team/app',
  incarnation: '3f9a0c1b2d4e',
  seq: 7,
  kind: 'push',
  time: '2026-12-03T08:00:00.000Z',
  who: { token: 'ci' },
  updates: [],
  atomic: false,
};

const sink = (url: string, allowPrivate: boolean) =>
  new WebhookSink({ url, secret: SECRET, timeoutMs: 2_000, allowPrivate });

describe('webhook delivery', () => {
  it('refuses a name that resolves to a loopback address, and sends nothing', async () => {
    const url = receiver.url.replace('127.0.0.1', 'localhost');
    const before = receiver.deliveries.length;
    const error = await sink(url, false)
      .deliver([event])
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(DeliveryFailed);
    expect((error as Error).message).toMatch(
      /^webhook: event 7 not delivered \(refused: localhost resolves to a loopback, link-local or private address/,
    );
    expect(receiver.deliveries.length).toBe(before);
  });

  it('refuses such an address written in the URL, however it is spelled', async () => {
    for (const url of [receiver.url, receiver.url.replace('127.0.0.1', '[::ffff:127.0.0.1]')]) {
      await expect(sink(url, false).deliver([event])).rejects.toThrow(/refused/);
    }
  });

  it('delivers there when the setting allows it', async () => {
    const url = receiver.url.replace('127.0.0.1', 'localhost');
    expect(await sink(url, true).deliver([event])).toBe(1);
    expect(receiver.accepted.map((e) => e.id)).toContain(event.id);
  });
});

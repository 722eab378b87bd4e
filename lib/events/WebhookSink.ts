/**
 * Delivers each event as one signed HTTP POST of its JSON. Headers:
 * - `X-Narwal-Signature-256: sha256=<hex>`: HMAC-SHA256 of the exact body with the shared secret;
 * - `Idempotency-Key` and `X-Narwal-Delivery`: the event id (repo, incarnation and seq), the same
 *   on every retry and replay, so a receiver that saw it already can ignore it;
 * - `X-Narwal-Event`: the entry's kind.
 * Any 2xx is acceptance; anything else, a timeout or a refused connection is a failure to retry.
 */

import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Secret } from '../secrets/Secret.js';
import { DeliveryFailed, type EventSink } from './EventSink.js';
import type { PushEvent } from './PushEvent.js';
import { guardedLookup, isPrivateAddress, PrivateAddressRefused } from './privateAddress.js';

/** The one HTTP call the webhook needs. */
export type HttpPost = (
  url: string,
  request: { headers: Record<string, string>; body: string; timeoutMs: number; allowPrivate: boolean },
) => Promise<{ status: number }>;

/**
 * A POST with node:http(s), one connection per delivery (`agent: false`): a kept-alive socket
 * would hold a short-lived process (the CLI's replay) open for seconds after its last event.
 */
export const httpPost: HttpPost = (url, { headers, body, timeoutMs, allowPrivate }) =>
  new Promise((resolve, reject) => {
    // An address written in the URL is connected to without a lookup: it is checked here.
    const host = new URL(url).hostname;
    if (!allowPrivate && isPrivateAddress(host)) {
      reject(new PrivateAddressRefused(host, host.replace(/^\[|\]$/g, '')));
      return;
    }
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ...(allowPrivate ? {} : { lookup: guardedLookup }),
      },
      (response) => {
        response.resume();
        response.once('end', () => resolve({ status: response.statusCode ?? 0 }));
        response.once('error', reject);
      },
    );
    request.setTimeout(timeoutMs, () => request.destroy(new DeliveryTimeout(timeoutMs)));
    request.once('error', reject);
    request.end(body);
  });

class DeliveryTimeout extends Error {
  override readonly name = 'TimeoutError';
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export interface WebhookOptions {
  readonly url: string;
  /** The signing key, or where to read it (a rotated key is used from its next read on). */
  readonly secret: string | Secret;
  readonly timeoutMs: number;
  /** Deliver to loopback, link-local and private addresses too (NARWAL_WEBHOOK_ALLOW_PRIVATE). */
  readonly allowPrivate: boolean;
  readonly post?: HttpPost;
}

export class WebhookSink implements EventSink {
  readonly name = 'webhook';
  readonly batchSize = 1;
  readonly #options: WebhookOptions;
  readonly #post: HttpPost;

  constructor(options: WebhookOptions) {
    this.#options = options;
    this.#post = options.post ?? httpPost;
  }

  async deliver(events: readonly PushEvent[]): Promise<number> {
    const event = events[0];
    if (event === undefined) return 0;
    const body = JSON.stringify(event);
    const key =
      typeof this.#options.secret === 'string' ? this.#options.secret : await this.#options.secret.current();
    let status: number;
    try {
      ({ status } = await this.#post(this.#options.url, {
        headers: {
          'content-type': 'application/json',
          'user-agent': 'narwal-webhook',
          'idempotency-key': event.id,
          'x-narwal-delivery': event.id,
          'x-narwal-event': event.kind,
          'x-narwal-signature-256': signature(key, body),
        },
        body,
        timeoutMs: this.#options.timeoutMs,
        allowPrivate: this.#options.allowPrivate,
      }));
    } catch (error) {
      // Never the URL in the message: it may carry a token in its query (the host is no secret).
      const reason =
        error instanceof PrivateAddressRefused
          ? `refused: ${error.message}`
          : error instanceof Error && error.name === 'TimeoutError'
            ? 'timed out'
            : 'unreachable';
      throw new DeliveryFailed(this.name, `event ${event.seq} not delivered (${reason})`, { cause: error });
    }
    if (status < 200 || status > 299)
      throw new DeliveryFailed(this.name, `event ${event.seq} refused with HTTP ${status}`);
    return 1;
  }
}

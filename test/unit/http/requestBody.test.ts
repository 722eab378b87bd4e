/**
 * The pace a request body must keep while the server waits for it: no pause longer than the idle
 * bound, and at least the minimum rate over each idle bound's worth of waiting. The clock is the
 * test's, so no case depends on how fast this machine runs.
 */
import { PassThrough, type Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../lib/http/HttpError.js';
import { decodedBody } from '../../../lib/http/requestBody.js';
import type { CoreRequest } from '../../../lib/http/types.js';

function request(body: Readable): CoreRequest {
  return { method: 'POST', path: '/x', query: new URLSearchParams(), headers: {}, body, requestId: 'r' };
}

/** Sends `chunks`, one per `stepMs` of the test's clock, to a reader that always wants more. */
async function send(
  chunks: readonly Buffer[],
  stepMs: number,
  pace: { idleMs: number; minBytesPerSecond: number },
): Promise<{ received: number; error: unknown }> {
  let now = 0;
  const client = new PassThrough();
  const body = decodedBody(request(client), { maxBytes: 1024 ** 2, ...pace, now: () => now }, 'the push');
  let received = 0;
  let error: unknown;
  body.on('data', (chunk: Buffer) => {
    received += chunk.length;
  });
  const ended = new Promise<void>((resolve) => {
    body.once('end', resolve);
    body.once('error', (e) => {
      error = e;
      resolve();
    });
  });
  for (const chunk of chunks) {
    if (error !== undefined) break;
    now += stepMs;
    client.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
  }
  client.end();
  await ended;
  return { received, error };
}

describe('the pace of a request body', () => {
  it('cuts off a body trickled under the idle bound but below the minimum rate', async () => {
    const trickle = Array.from({ length: 100 }, () => Buffer.of(0x30));
    const { error, received } = await send(trickle, 200, { idleMs: 1_000, minBytesPerSecond: 100 });
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(408);
    expect((error as HttpError).message).toBe(
      'narwal: the push arrived too slowly: less than 100 bytes/s over 1 s; retry',
    );
    // Cut off after one idle bound's worth of waiting, not at the end of the body.
    expect(received).toBeLessThanOrEqual(5);
  });

  it('takes a body that keeps the rate, however long it runs', async () => {
    const steady = Array.from({ length: 100 }, () => Buffer.alloc(30, 0x30));
    const { error, received } = await send(steady, 200, { idleMs: 1_000, minBytesPerSecond: 100 });
    expect(error).toBeUndefined();
    expect(received).toBe(3_000);
  });

  it('does not hold a fast start against a later trickle', async () => {
    const chunks = [Buffer.alloc(100_000), ...Array.from({ length: 50 }, () => Buffer.of(0x30))];
    const { error } = await send(chunks, 200, { idleMs: 1_000, minBytesPerSecond: 100 });
    expect((error as HttpError).message).toMatch(/arrived too slowly/);
  });

  it('checks no rate when the minimum is 0', async () => {
    const trickle = Array.from({ length: 20 }, () => Buffer.of(0x30));
    const { error, received } = await send(trickle, 200, { idleMs: 1_000, minBytesPerSecond: 0 });
    expect(error).toBeUndefined();
    expect(received).toBe(20);
  });

  it('does not count time the server itself was slow to read', async () => {
    let now = 0;
    const client = new PassThrough();
    const body = decodedBody(
      request(client),
      { maxBytes: 4 * 1024 ** 2, idleMs: 1_000, minBytesPerSecond: 100, now: () => now },
      'the push',
    );
    const errors: unknown[] = [];
    body.on('error', (e) => errors.push(e));
    // Nobody reads for a long while (git is busy): the client is held back, not slow.
    for (let i = 0; i < 20; i++) {
      client.write(Buffer.alloc(64 * 1024));
      now += 10_000;
      await new Promise((resolve) => setImmediate(resolve));
    }
    client.end();
    let received = 0;
    for await (const chunk of body) received += (chunk as Buffer).length;
    expect(errors).toEqual([]);
    expect(received).toBe(20 * 64 * 1024);
  });
});

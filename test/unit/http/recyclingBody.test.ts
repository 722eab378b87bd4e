/**
 * The local server gives a recycling body's chunks back only once they are written: a body that
 * refills a chunk the moment it is handed back must still reach a slow client intact.
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeServer } from '../../../lib/http/nodeServer.js';
import { silentLogger } from '../../../lib/log.js';
import type { RecyclingBody } from '../../../lib/util/RecyclingBody.js';

const CHUNK = 256 * 1024;
const CHUNKS = 64;

/** Chunk i is filled with the byte i, in buffers given back and used again. */
function refillingBody(): {
  body: Readable & RecyclingBody;
  state: { given: number; recycled: number; allocated: number };
} {
  const spare: Buffer[] = [];
  const state = { given: 0, recycled: 0, allocated: 0 };
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let i = 0; i < CHUNKS; i++) {
      let chunk = spare.pop();
      if (!chunk) {
        chunk = Buffer.allocUnsafeSlow(CHUNK);
        state.allocated++;
      }
      chunk.fill(i);
      state.given++;
      yield chunk;
    }
  }
  const body = Object.assign(Readable.from(chunks(), { objectMode: false }), {
    recycle(chunk: Buffer) {
      state.recycled++;
      // Spoil it at once: a chunk given back while still queued would arrive spoiled.
      chunk.fill(0xff);
      spare.push(chunk);
    },
  });
  return { body, state };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serving(body: Readable): Promise<number> {
  const server = createNodeServer(
    async () => ({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body }),
    silentLogger,
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return (server.address() as AddressInfo).port;
}

describe('recycling response bodies', () => {
  it('hands chunks back only after they are written, so refilled chunks arrive intact', async () => {
    const { body, state } = refillingBody();
    const port = await serving(body);
    const received = await new Promise<Buffer>((resolve, reject) => {
      request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        const parts: Buffer[] = [];
        // A slow reader: the server's writes wait on the socket, and a chunk given back too
        // early would be refilled while still queued.
        res.on('data', (part: Buffer) => {
          parts.push(Buffer.from(part));
          res.pause();
          setTimeout(() => res.resume(), 1);
        });
        res.once('end', () => resolve(Buffer.concat(parts)));
        res.once('error', reject);
      })
        .once('error', reject)
        .end();
    });
    expect(received.length).toBe(CHUNK * CHUNKS);
    for (let i = 0; i < CHUNKS; i++) {
      const chunk = received.subarray(i * CHUNK, (i + 1) * CHUNK);
      expect(chunk.every((byte) => byte === i)).toBe(true);
    }
    expect(state.recycled).toBe(CHUNKS);
    expect(state.allocated).toBeLessThanOrEqual(3);
  });

  it('destroys the body when the client goes away', async () => {
    const { body, state } = refillingBody();
    const port = await serving(body);
    await new Promise<void>((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.once('error', () => {});
      req.end();
      setTimeout(() => reject(new Error('no data')), 5_000);
    });
    for (let i = 0; i < 100 && !body.destroyed; i++) await sleep(20);
    expect(body.destroyed).toBe(true);
    expect(state.given).toBeLessThan(CHUNKS);
  });

  it('cuts the response off when the body fails midway', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1024, 1);
      throw new Error('disk gone');
    }
    const body = Object.assign(Readable.from(failing(), { objectMode: false }), { recycle() {} });
    const port = await serving(body);
    const outcome = await new Promise<string>((resolve) => {
      request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.resume();
        res.once('end', () => resolve('ended'));
        res.once('error', () => resolve('cut off'));
      })
        .once('error', () => resolve('cut off'))
        .end();
    });
    expect(outcome).toBe('cut off');
  });
});

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startFloor } from '../../../bench/floor.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An upstream that answers each POST with its body reversed (and 401 without credentials), counting requests. */
async function upstream() {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? '-'}`);
      if (!req.headers.authorization) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'application/x-git-upload-pack-result' });
      res.end(Buffer.from(Buffer.concat(chunks).toString().split('').reverse().join('')));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  cleanups.push(() => new Promise((done) => server.close(() => done())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('the floor server', () => {
  it('passes the first of each request on and replays its answer to the same request', async () => {
    const up = await upstream();
    const floor = await startFloor({ upstream: up.url });
    cleanups.push(floor.stop);
    const post = (body: string, authorization = 'Basic eDp5') =>
      fetch(`${floor.url}/r.git/git-upload-pack`, { method: 'POST', body, headers: { authorization } });
    for (const body of ['abc', 'abc', 'xyz']) {
      const res = await post(body);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
      expect(await res.text()).toBe(body.split('').reverse().join(''));
    }
    expect(up.seen).toEqual([
      'POST /r.git/git-upload-pack Basic eDp5',
      'POST /r.git/git-upload-pack Basic eDp5',
    ]);
  });

  it('keeps no answer that is not a 200', async () => {
    const up = await upstream();
    const floor = await startFloor({ upstream: up.url });
    cleanups.push(floor.stop);
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${floor.url}/r.git/info/refs?service=git-upload-pack`);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="x"');
    }
    expect(up.seen).toHaveLength(2);
  });
});

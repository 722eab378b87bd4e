import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CLONE_SUFFIX, PACK_CACHE_DIR } from '../../../lib/git/packCacheHook.js';
import { type PktLine, PktLineReader } from '../../../lib/protocol/pktLine.js';
import type { CachedFetch } from '../../../lib/transfer/clonePack.js';
import {
  ClonePacking,
  clonePackBody,
  openClonePack,
  wholeClonePackAnswer,
} from '../../../lib/transfer/clonePack.js';

const KEY = 'ab'.repeat(32);

async function generationWith(content: Buffer | null): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-clonepack-'));
  await mkdir(join(dir, PACK_CACHE_DIR));
  if (content) await writeFile(join(dir, PACK_CACHE_DIR, `${KEY}${CLONE_SUFFIX}`), content);
  return dir;
}

async function answer(
  clone: Pick<CachedFetch, 'key' | 'preamble' | 'sidebandData'>,
  content: Buffer,
): Promise<{ packets: PktLine[]; done: number }> {
  const dir = await generationWith(content);
  const pack = await openClonePack(dir, clone);
  if (!pack) throw new Error('not opened');
  let done = 0;
  const released = new Promise<void>((resolve) => {
    const body = clonePackBody(clone, pack.handle, () => {
      done++;
      resolve();
    });
    void (async () => {
      for await (const chunk of body) reader.push(chunk as Buffer);
    })();
  });
  const reader = new PktLineReader();
  await released;
  const packets: PktLine[] = [];
  for (let p = reader.next(); p !== undefined; p = reader.next()) packets.push(p);
  expect(reader.buffered).toBe(0);
  return { packets, done };
}

describe('cached clone packs', () => {
  for (const [name, clone] of [
    ['side-band-64k, protocol v2', { key: KEY, preamble: 'packfile\n', sidebandData: 65515 }],
    ['side-band, protocol v0', { key: KEY, preamble: 'NAK\n', sidebandData: 995 }],
  ] as const) {
    it(`frames the whole pack as upload-pack does (${name})`, async () => {
      const content = Buffer.concat([Buffer.from('PACK'), randomBytes(700_000)]);
      const { packets, done } = await answer(clone, content);
      const [first, ...rest] = packets;
      expect(first).toEqual({ kind: 'data', payload: Buffer.from(clone.preamble) });
      expect(rest.at(-1)).toEqual({ kind: 'flush' });
      const data = rest.slice(0, -1).map((p) => (p.kind === 'data' ? p.payload : Buffer.alloc(0)));
      for (const payload of data) {
        expect(payload[0]).toBe(1);
        expect(payload.length - 1).toBeLessThanOrEqual(clone.sidebandData);
        expect(payload.length).toBeGreaterThan(1);
      }
      expect(Buffer.concat(data.map((p) => p.subarray(1))).equals(content)).toBe(true);
      expect(done).toBe(1);
    });
  }

  it('frames a pack that ends exactly where a read does', async () => {
    // side-band packets carry 995 bytes and a read fills 256 of them: two whole reads.
    const clone = { key: KEY, preamble: 'NAK\n', sidebandData: 995 };
    const content = Buffer.concat([Buffer.from('PACK'), randomBytes(2 * 256 * 995 - 4)]);
    const { packets } = await answer(clone, content);
    const data = packets.slice(1, -1).map((p) => (p.kind === 'data' ? p.payload : Buffer.alloc(0)));
    expect(data).toHaveLength(2 * 256);
    expect(data.every((p) => p.length === 996 && p[0] === 1)).toBe(true);
    expect(Buffer.concat(data.map((p) => p.subarray(1))).equals(content)).toBe(true);
    expect(packets.at(-1)).toEqual({ kind: 'flush' });
  });

  it('fills chunks given back again instead of allocating new ones', async () => {
    // side-band: 256 packets of 995 bytes per read, so 2 MB is some eight reads.
    const clone = { key: KEY, preamble: 'NAK\n', sidebandData: 995 };
    const content = Buffer.concat([Buffer.from('PACK'), randomBytes(2_000_000)]);
    const pack = await openClonePack(await generationWith(content), clone);
    if (!pack) throw new Error('not opened');
    const body = clonePackBody(clone, pack.handle, () => {});
    const reader = new PktLineReader();
    const memory = new Set<ArrayBufferLike>();
    for await (const chunk of body) {
      reader.push(Buffer.from(chunk as Buffer));
      if ((chunk as Buffer).length > 1000) memory.add((chunk as Buffer).buffer);
      body.recycle(chunk as Buffer);
    }
    const data: Buffer[] = [];
    for (let p = reader.next(); p !== undefined; p = reader.next())
      if (p.kind === 'data' && p.payload[0] === 1) data.push(p.payload.subarray(1));
    expect(Buffer.concat(data).equals(content)).toBe(true);
    expect(memory.size).toBeLessThanOrEqual(3);
  });

  it('fills the chunks of one answer again for the next: a storm of small answers allocates none', async () => {
    const clone = { key: KEY, preamble: 'NAK\n', sidebandData: 65515 };
    const content = Buffer.concat([Buffer.from('PACK'), randomBytes(200_000)]);
    const generation = await generationWith(content);
    const memory = new Set<ArrayBufferLike>();
    for (let i = 0; i < 20; i++) {
      const pack = await openClonePack(generation, clone);
      if (!pack) throw new Error('not opened');
      const body = clonePackBody(clone, pack.handle, () => {});
      const data: Buffer[] = [];
      for await (const chunk of body) {
        if ((chunk as Buffer).length > 1000) memory.add((chunk as Buffer).buffer);
        data.push(Buffer.from(chunk as Buffer));
        body.recycle(chunk as Buffer);
      }
      expect(Buffer.concat(data).length).toBeGreaterThan(content.length);
    }
    expect(memory.size).toBe(1);
  });

  const shapes: [string, Pick<CachedFetch, 'key' | 'preamble' | 'sidebandData'>, number][] = [
    ['side-band-64k', { key: KEY, preamble: 'packfile\n', sidebandData: 65515 }, 300_000],
    ['side-band', { key: KEY, preamble: 'NAK\n', sidebandData: 995 }, 300_000],
    ['side-band, a pack of whole packets', { key: KEY, preamble: 'NAK\n', sidebandData: 995 }, 995 * 40],
  ];
  for (const [name, clone, bytes] of shapes) {
    it(`puts the same bytes in one buffer as it streams (${name})`, async () => {
      const content = Buffer.concat([Buffer.from('PACK'), randomBytes(bytes - 4)]);
      const lines = Buffer.from('0010shallow-info\n0000');
      const generation = await generationWith(content);
      const streamed = await openClonePack(generation, clone);
      const whole = await openClonePack(generation, clone);
      if (!streamed || !whole) throw new Error('not opened');
      expect(whole.size).toBe(content.length);
      const parts: Buffer[] = [];
      for await (const chunk of clonePackBody(clone, streamed.handle, () => {}, lines))
        parts.push(Buffer.from(chunk as Buffer));
      const answer = await wholeClonePackAnswer(clone, whole.handle, whole.size, lines);
      await whole.handle.close();
      expect(answer.equals(Buffer.concat(parts))).toBe(true);
    });
  }

  it('refuses to make a whole answer of a pack shorter than its size', async () => {
    const clone = { key: KEY, preamble: 'packfile\n', sidebandData: 65515 };
    const content = Buffer.concat([Buffer.from('PACK'), randomBytes(1_000)]);
    const pack = await openClonePack(await generationWith(content), clone);
    if (!pack) throw new Error('not opened');
    await expect(wholeClonePackAnswer(clone, pack.handle, pack.size + 10)).rejects.toThrow(
      /ended at 1004 of its 1014/,
    );
    await pack.handle.close();
  });

  it('opens nothing when there is no cached pack or it is too short to be one', async () => {
    const clone = {
      key: KEY,
      version: 'v2',
      preamble: 'packfile\n',
      sidebandData: 65515,
      linesSuffix: null,
    } as const;
    expect(await openClonePack(await generationWith(null), clone)).toBeNull();
    expect(await openClonePack(await generationWith(Buffer.from('PACK')), clone)).toBeNull();
  });

  it('gives the generation back when the client goes away midway', async () => {
    const clone = {
      key: KEY,
      version: 'v2',
      preamble: 'packfile\n',
      sidebandData: 65515,
      linesSuffix: null,
    } as const;
    const pack = await openClonePack(await generationWith(randomBytes(2_000_000)), clone);
    if (!pack) throw new Error('not opened');
    let done = 0;
    let body: Readable | undefined;
    await new Promise<void>((resolve) => {
      body = clonePackBody(clone, pack.handle, () => {
        done++;
        resolve();
      });
      body.once('readable', () => {
        body?.read();
        body?.destroy();
      });
    });
    expect(done).toBe(1);
    expect(body?.destroyed).toBe(true);
  });
});

describe('identical clones packing at once', () => {
  const clone = {
    key: KEY,
    version: 'v2',
    preamble: 'packfile\n',
    sidebandData: 65515,
    linesSuffix: null,
  } as const;

  it('lets one clone pack and the others wait for it, then answers them from its file', async () => {
    const dir = await generationWith(null);
    const packing = new ClonePacking({ maxWaitMs: 10_000 });
    const first = await packing.open(dir, clone);
    expect(first.pack).toBeNull();
    expect(first.packing).toBeDefined();
    expect(first.waited?.()).toBe(false);
    let exited = () => {};
    first.packing?.(
      new Promise<void>((resolve) => {
        exited = resolve;
      }),
    );
    let answered = false;
    const waiting = packing.open(dir, clone).then((found) => {
      answered = true;
      return found;
    });
    // The hook names the pack before upload-pack exits; the waiting clone waits for the packer.
    await writeFile(
      join(dir, PACK_CACHE_DIR, `${KEY}${CLONE_SUFFIX}`),
      Buffer.concat([Buffer.from('PACK'), randomBytes(100)]),
    );
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(answered).toBe(false);
    expect(first.waited?.()).toBe(true);
    exited();
    const second = await waiting;
    expect(second.pack).not.toBeNull();
    expect(second.packing).toBeUndefined();
    await second.pack?.close();
  });

  it('hands packing on when the first ends without a file, and waits no longer than told', async () => {
    const dir = await generationWith(null);
    const packing = new ClonePacking({ maxWaitMs: 10_000 });
    const first = await packing.open(dir, clone);
    let exited = () => {};
    first.packing?.(
      new Promise<void>((resolve) => {
        exited = resolve;
      }),
    );
    const waiting = packing.open(dir, clone);
    exited();
    const next = await waiting;
    expect(next.pack).toBeNull();
    expect(next.packing).toBeDefined();

    const impatient = new ClonePacking({ maxWaitMs: 30 });
    const holder = await impatient.open(dir, clone);
    holder.packing?.(new Promise<void>(() => {}));
    const gaveUp = await impatient.open(dir, clone);
    expect(gaveUp.pack).toBeNull();
    expect(gaveUp.packing).toBeUndefined();
    expect(holder.waited?.()).toBe(true);
  });
});

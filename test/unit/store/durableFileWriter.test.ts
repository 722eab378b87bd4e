import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { DurableFileWriter } from '../../../lib/store/DurableFileWriter.js';
import { useTempRoots } from '../wal/walHelpers.js';

describe('DurableFileWriter', () => {
  const tempRoot = useTempRoots();

  it('writes every byte in order across gathered writes and background flushes', async () => {
    const path = join(await tempRoot(), 'object');
    // Chunks of uneven sizes, so that writes and flushes fall mid-chunk.
    const chunks = Array.from({ length: 300 }, (_, i) => randomBytes(1 + ((i * 7919) % 9000)));
    await pipeline(
      Readable.from(chunks),
      new DurableFileWriter(path, { writeBytes: 10_000, syncBytes: 50_000 }),
    );
    expect((await readFile(path)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('writes more chunks in one gathered write than one writev(2) takes (IOV_MAX, 1,024 on Linux)', async () => {
    const path = join(await tempRoot(), 'many');
    const chunks = Array.from({ length: 5000 }, (_, i) => Buffer.of(i % 256));
    await pipeline(
      Readable.from(chunks),
      new DurableFileWriter(path, { writeBytes: 1024 * 1024, syncBytes: 1024 * 1024 }),
    );
    expect((await readFile(path)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('writes an empty body, and one smaller than a gathered write', async () => {
    const root = await tempRoot();
    await pipeline(
      Readable.from([]),
      new DurableFileWriter(join(root, 'empty'), { writeBytes: 10, syncBytes: 10 }),
    );
    expect((await readFile(join(root, 'empty'))).length).toBe(0);
    await pipeline(
      Readable.from([Buffer.from('abc')]),
      new DurableFileWriter(join(root, 'small'), { writeBytes: 10, syncBytes: 10 }),
    );
    expect(await readFile(join(root, 'small'), 'utf8')).toBe('abc');
  });

  it('creates only: a file already there fails the stream and keeps its bytes', async () => {
    const path = join(await tempRoot(), 'taken');
    await writeFile(path, 'first');
    const writing = pipeline(
      Readable.from([Buffer.from('second')]),
      new DurableFileWriter(path, { writeBytes: 10, syncBytes: 10 }),
    );
    await expect(writing).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(path, 'utf8')).toBe('first');
  });
});

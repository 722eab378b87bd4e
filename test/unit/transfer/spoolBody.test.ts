import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterEach, describe, expect, it } from 'vitest';
import { spoolBody } from '../../../lib/transfer/spoolBody.js';

const ZERO = '0'.repeat(40);
const ONE = '1'.repeat(40);
function pkt(line: string): string {
  return (line.length + 4).toString(16).padStart(4, '0') + line;
}
const BODY = `${pkt(`${ZERO} ${ONE} refs/heads/main\0report-status\n`)}0000PACK-bytes`;
const LIMITS = { maxHeadBytes: 65536, maxCommands: 100 };

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('spoolBody', () => {
  it('reads the body back, even when the spool file is removed after it was opened', async () => {
    dir = await mkdtemp(join(tmpdir(), 'narwal-spool-'));
    const spool = await spoolBody(Readable.from([Buffer.from(BODY)]), dir, LIMITS);
    expect((await spool.head).commands).toHaveLength(1);
    await spool.done;
    const body = await spool.open();
    await rm(dir, { recursive: true, force: true });
    expect(await text(body)).toBe(BODY);
  });

  it('rejects open() when the spool vanished (its directory was deleted), rather than crashing later', async () => {
    dir = await mkdtemp(join(tmpdir(), 'narwal-spool-'));
    const spool = await spoolBody(Readable.from([Buffer.from(BODY)]), dir, LIMITS);
    await spool.done;
    await rm(dir, { recursive: true, force: true });
    await expect(spool.open()).rejects.toThrow(/ENOENT/);
  });
});

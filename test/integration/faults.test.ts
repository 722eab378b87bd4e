/**
 * With store faults injected at realistic rates (409, 412, 5xx before and after the write took
 * effect), every push a client heard `ok` for is in the log, and no client sees a bare 500.
 */

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { silentLogger } from '../../lib/log.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { Wal } from '../../lib/wal/Wal.js';
import { commitFile, git, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const FAULTS =
  process.env.NARWAL_TEST_FAULTS ??
  'put409=0.05,put412=0.03,put500=0.03,put500applied=0.03,puttimeoutapplied=0.02,get503=0.02';

let server: RunningNarwal & { app: App };
let home: string;
const errors: string[] = [];

beforeAll(async () => {
  server = await startInProcess({
    env: { NARWAL_STORE_FAULTS: FAULTS },
    logger: {
      ...silentLogger,
      error: (message, fields) => errors.push(`${message} ${JSON.stringify(fields)}`),
    },
  });
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
});

describe(`pushes with NARWAL_STORE_FAULTS=${FAULTS}`, () => {
  it('keeps every acknowledged push, concurrent and sequential', async () => {
    const repo = 'faults/log';
    const url = `${server.authUrl}/${repo}.git`;
    const works = await Promise.all(Array.from({ length: 4 }, (_, i) => workRepo(home, 1, `f${i}`)));
    const acknowledged: { ref: string; oid: string }[] = [];
    const outputs: string[] = [];
    // Four writers, each on its own branch, twelve pushes each.
    await Promise.all(
      works.map(async (work, w) => {
        for (let i = 0; i < 12; i++) {
          const oid = await commitFile(work, home, `w${w}-${i}.txt`, `${w} ${i}\n`);
          const out = await git(['push', url, `main:refs/heads/writer-${w}`], { cwd: work, home });
          outputs.push(out.stderr);
          if (out.code === 0) acknowledged.push({ ref: `refs/heads/writer-${w}`, oid });
        }
      }),
    );
    console.log(`fault run: ${acknowledged.length}/${outputs.length} pushes acknowledged`);
    if (errors.length > 0) console.log(`server errors:\n${errors.join('\n')}`);
    // A client may be refused (and retry), but never with an unexplained server error.
    expect(errors.filter((e) => e.startsWith('unexpected error'))).toEqual([]);
    for (const stderr of outputs) expect(stderr).not.toMatch(/HTTP 500|internal error/);
    expect(acknowledged.length).toBeGreaterThan(24);

    const wal = new Wal(new FsObjectStore(join(server.dataDir, 'store')));
    const loaded = await wal.readIndex(repo);
    if (!loaded) throw new Error('repository missing');
    const items = await wal.itemsAfter(loaded.index, 0);
    const logged = new Set(items.flatMap((item) => item.updates.map((u) => `${u.ref} ${u.new}`)));
    for (const ack of acknowledged) expect(logged).toContain(`${ack.ref} ${ack.oid}`);
    // Sequence numbers are dense: every published position is one entry.
    expect(items.map((item) => item.seq)).toEqual(items.map((_, i) => i + 1));
  });
});

/**
 * A long log built fast, for measuring what reading it costs: entries published through the real
 * Publisher (index CAS, pages, tables, checkpoint pointers with their complete tables) with made-up
 * object ids. Nothing here needs git objects: the log's readers never look at them.
 */

import { ZERO_OID } from '../lib/protocol/refValue.js';
import type { ObjectStore } from '../lib/store/ObjectStore.js';
import { writeTable } from '../lib/wal/boundIndex.js';
import { encodeJson, sha256 } from '../lib/wal/indexCodec.js';
import { checkpointKey } from '../lib/wal/keys.js';
import { Publisher, type PushCommand } from '../lib/wal/Publisher.js';
import { putImmutable } from '../lib/wal/putImmutable.js';
import { mapToRows } from '../lib/wal/refRows.js';
import type { CheckpointObject, CheckpointPointer } from '../lib/wal/types.js';
import { Wal } from '../lib/wal/Wal.js';

export interface LongLogOptions {
  readonly entries: number;
  /** Branches the pushes rotate over. */
  readonly branches?: number;
  /** A checkpoint entry after every this many pushes (0: none). */
  readonly checkpointEvery?: number;
  /** Every this many pushes, one that moves many refs at once (more than a log item shows). */
  readonly wideEvery?: number;
  readonly onProgress?: (done: number) => void;
}

/** A distinct fake object id per n >= 1. */
export const fakeOid = (n: number) => `be11${n.toString(16).padStart(36, '0')}`;

export async function buildLongLog(store: ObjectStore, repo: string, options: LongLogOptions): Promise<void> {
  const wal = new Wal(store);
  const publisher = new Publisher(wal);
  const branches = options.branches ?? 8;
  const heads = new Map<string, string>();
  let next = 1;
  await wal.createRepo(repo, { public: false });
  const seq = () => wal.knownIndex(repo)?.index.seq ?? 0;
  for (let i = 1; seq() < options.entries; i++) {
    const wide = options.wideEvery !== undefined && i % options.wideEvery === 0;
    const names = wide
      ? Array.from({ length: 24 }, (_, k) => `refs/tags/batch-${i}-${k}`)
      : [`refs/heads/b${i % branches}`];
    const commands: PushCommand[] = names.map((ref) => {
      const newOid = fakeOid(next++);
      const command = { ref, oldOid: heads.get(ref) ?? ZERO_OID, newOid };
      heads.set(ref, newOid);
      return command;
    });
    const who = { token: `dev-${i % 5}`, owner: `owner-${i % 3}`, agent: 'git/2.39.5', ip: '127.0.0.1' };
    await publisher.publish({ repo, commands, atomic: wide, who, packs: [] });
    options.onProgress?.(i);
    if (options.checkpointEvery && i % options.checkpointEvery === 0 && seq() < options.entries)
      await checkpoint(wal, publisher, repo);
  }
}

/** A checkpoint entry naming a complete table of the refs now (and no packs). */
async function checkpoint(wal: Wal, publisher: Publisher, repo: string): Promise<void> {
  const loaded = await wal.readIndex(repo);
  if (loaded === null) return;
  const { index } = loaded;
  const table = await writeTable(wal, wal.store, repo, index.seq, mapToRows(await wal.allRefs(index)));
  const object: CheckpointObject = {
    v: 1,
    seq: index.seq,
    table: table.key,
    count: table.count,
    packs: [],
    bytes: 0,
    time: new Date().toISOString(),
    head: index.head,
  };
  const body = encodeJson(object);
  const key = checkpointKey(repo, sha256(body));
  await putImmutable(wal.store, key, body);
  const pointer: CheckpointPointer = {
    seq: index.seq,
    key,
    table: table.key,
    count: table.count,
    packs: [],
    bytes: 0,
  };
  await publisher.publish({
    repo,
    commands: [],
    atomic: false,
    who: { token: 'narwal' },
    packs: [],
    checkpoint: pointer,
  });
}

/**
 * A repository on which a publisher lost a race is contended for a while: its CASes then go out
 * with a read of the index beside them. How long "a while" lasts is measured with the publisher's
 * injected clock, like every other time it keeps.
 */
import { describe, expect, it } from 'vitest';
import type { GetOptions, NotModified, StoredObject } from '../../../lib/store/ObjectStore.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { CountingStore, cmd, fsStore, isIndexKey, oid, push, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'team/app';

class IndexReads extends CountingStore {
  reads = 0;
  override get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    if (isIndexKey(key)) this.reads++;
    return super.get(key, options);
  }
}

describe('Publisher: the contention window', () => {
  const tempRoot = useTempRoots();

  it('opens when a race is lost and closes by the injected clock', async () => {
    const inner = await fsStore(tempRoot);
    const store = new IndexReads(inner);
    let now = Date.parse('2026-12-04T12:00:00Z');
    const clock = () => new Date(now);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0, now: clock });
    const other = new Publisher(new Wal(inner), { random: () => 0 });
    await publisher.publish(push(REPO, [cmd('refs/heads/a', ZERO_OID, oid(1))]));
    // Another node moves the index: this publisher's next CAS, made against the index it knows,
    // loses the race and the repository counts as contended.
    await other.publish(push(REPO, [cmd('refs/heads/b', ZERO_OID, oid(2))]));
    const raced = await publisher.publish(push(REPO, [cmd('refs/heads/c', ZERO_OID, oid(3))]));
    expect(raced.seq).toBe(3);
    const countReads = async (ref: string, n: number) => {
      store.reads = 0;
      const result = await publisher.publish(push(REPO, [cmd(ref, ZERO_OID, oid(n))]));
      expect(result.outcomes[0]?.ok).toBe(true);
      return store.reads;
    };
    now += 9_000;
    expect(await countReads('refs/heads/d', 4), 'within the window: a read beside the CAS').toBe(1);
    now += 11_000;
    expect(await countReads('refs/heads/e', 5), 'after it, by the injected clock: none').toBe(0);
  });
});

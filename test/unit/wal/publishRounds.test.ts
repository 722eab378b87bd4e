/**
 * How many rounds of writes a push waits for before its CAS: everything it writes first (its
 * entry, the chunk or page of items published before it, a table of ref rows) goes out together,
 * so a push that also bounds the index costs the same two rounds as one that does not.
 */
import { describe, expect, it } from 'vitest';
import type { PutBody, PutOptions, PutResult } from '../../../lib/store/ObjectStore.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import {
  cmd,
  ForwardingStore,
  fsStore,
  isIndexKey,
  oid,
  push,
  useTempRoots,
  ZERO_OID,
} from './walHelpers.js';

const REPO = 'rounds/repo';

/** Holds every put until released; the puts released together are one round. */
class RoundStore extends ForwardingStore {
  holding = false;
  readonly #held: { key: string; go: () => void }[] = [];
  override async put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    if (this.holding) await new Promise<void>((go) => this.#held.push({ key, go }));
    return super.put(key, body, options);
  }
  get held(): number {
    return this.#held.length;
  }
  /** Releases the puts held now and answers their keys, or null when none is held. */
  release(): string[] | null {
    if (this.#held.length === 0) return null;
    const round = this.#held.splice(0);
    for (const p of round) p.go();
    return round.map((p) => p.key);
  }
}

/**
 * Runs `work` releasing held puts round by round; answers the rounds' keys. A round is released
 * once it holds as many puts as the test expects of it (`sizes`), so a slow write (gzip on a busy
 * machine) is never cut into a round of its own; a push that needs more rounds than expected
 * shows them as extra rounds (released as they come), one that needs a put of the round released
 * before it never fills the round and times out.
 */
async function rounds(
  store: RoundStore,
  work: Promise<unknown>,
  sizes: readonly number[],
): Promise<string[][]> {
  let settled = false;
  void work.finally(() => {
    settled = true;
  });
  const out: string[][] = [];
  for (let round = 0; !settled; round++) {
    const size = sizes[round] ?? 1;
    // Let the publisher run until it waits on the round's puts (or finishes).
    while (!settled && store.held < size) await new Promise((r) => setTimeout(r, 5));
    const keys = store.release();
    if (keys) out.push(keys);
  }
  await work;
  return out;
}

const kind = (key: string) =>
  isIndexKey(key)
    ? 'index'
    : (/\/(entries|packs|tables)\//.exec(key)?.[1] ?? (/chunk-/.test(key) ? 'chunk' : key));

describe('Publisher: rounds of writes before the CAS', () => {
  const tempRoot = useTempRoots();

  async function setup(maxRecentRows = 256) {
    const store = new RoundStore(await fsStore(tempRoot));
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { policy: { maxRecentRows, geometricFactor: 2 } });
    return { store, publisher };
  }

  it('writes the chunk of earlier items beside the entry, then swaps the index', async () => {
    const { store, publisher } = await setup();
    for (let i = 1; i <= 8; i++) {
      await publisher.publish(push(REPO, [cmd('refs/heads/main', i === 1 ? ZERO_OID : oid(i - 1), oid(i))]));
    }
    store.holding = true;
    const seen = await rounds(
      store,
      publisher.publish(push(REPO, [cmd('refs/heads/main', oid(8), oid(9))])),
      [2, 1],
    );
    expect(seen.map((keys) => keys.map(kind).sort())).toEqual([['chunk', 'entries'], ['index']]);
  });

  it('writes a table of ref rows beside the entry, then swaps the index', async () => {
    const { store, publisher } = await setup(2);
    await publisher.publish(
      push(REPO, [cmd('refs/heads/a', ZERO_OID, oid(1)), cmd('refs/heads/b', ZERO_OID, oid(2))]),
    );
    store.holding = true;
    const seen = await rounds(
      store,
      publisher.publish(push(REPO, [cmd('refs/heads/c', ZERO_OID, oid(3))])),
      [2, 1],
    );
    expect(seen.map((keys) => keys.map(kind).sort())).toEqual([['entries', 'tables'], ['index']]);
  });
});

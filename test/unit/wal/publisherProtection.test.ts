import { describe, expect, it } from 'vitest';
import { changeProtection, RuleNotFound } from '../../../lib/history/protection.js';
import { InvalidProtection, MAX_RULES } from '../../../lib/policy/protectionRules.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import type { LoadedIndex } from '../../../lib/wal/types.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { CountingStore, fsStore, oid, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'team/app';
const MAIN = 'refs/heads/main';

describe('Publisher: protected refs', () => {
  const tempRoot = useTempRoots();

  async function setup() {
    const store = new CountingStore(await fsStore(tempRoot));
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const published: LoadedIndex[] = [];
    const publisher = new Publisher(wal, {
      random: () => 0,
      onPublished: (_repo, landed) => published.push(landed),
    });
    await publisher.publish(job([{ ref: MAIN, oldOid: ZERO_OID, newOid: oid(1) }]));
    return { store, wal, publisher, published };
  }

  function job(
    commands: { ref: string; oldOid: string; newOid: string; fastForward?: boolean }[],
    who = { token: 'dev', tokenId: 'id-dev' },
    atomic = false,
  ) {
    return { repo: REPO, commands, atomic, who, packs: [] };
  }

  const protect = (publisher: Publisher, rule: object, who = { token: 'admin' }) =>
    changeProtection(publisher, REPO, { op: 'upsert', rule: { pattern: MAIN, ...rule } }, who);

  it('records a rule change as a protect entry with no ref updates, and keeps the rules in the index', async () => {
    const { wal, publisher } = await setup();
    const result = await protect(publisher, { denyForce: true });
    expect(result).toMatchObject({ entry: 2, seq: 2, rules: [{ pattern: MAIN, denyForce: true }] });
    const loaded = await new Wal(wal.store).readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.protection).toEqual([{ pattern: MAIN, denyForce: true }]);
    const [item] = await wal.itemsAfter(loaded.index, 1);
    expect(item).toMatchObject({ seq: 2, kind: 'protect', updates: [], who: { token: 'admin' } });
    const entry = await new Wal(wal.store).entry(item?.key ?? '');
    expect(entry).toMatchObject({
      kind: 'protect',
      updates: [],
      protection: [{ pattern: MAIN, denyForce: true }],
    });
    // The same change again changes nothing and writes no entry.
    expect((await protect(publisher, { denyForce: true })).entry).toBeNull();
    expect((await new Wal(wal.store).readIndex(REPO))?.index.seq).toBe(2);
  });

  it('refuses a force-push, a deletion and a push by another token, writing nothing', async () => {
    const { wal, publisher, published } = await setup();
    await changeProtection(
      publisher,
      REPO,
      {
        op: 'set',
        rules: [
          { pattern: MAIN, denyForce: true, denyDelete: true },
          { pattern: 'refs/heads/rel/*', pushers: ['bot'] },
        ],
      },
      { token: 'admin' },
    );
    const before = published.length;
    const force = await publisher.publish(
      job([{ ref: MAIN, oldOid: oid(1), newOid: oid(2), fastForward: false }]),
    );
    expect(force.outcomes).toEqual([
      {
        ref: MAIN,
        ok: false,
        reason: expect.stringMatching(/^protected: refs\/heads\/main may not be force-pushed/),
      },
    ]);
    expect(force.seq).toBeNull();
    const del = await publisher.publish(job([{ ref: MAIN, oldOid: oid(1), newOid: ZERO_OID }]));
    expect(del.outcomes[0]).toMatchObject({ ok: false, reason: expect.stringMatching(/may not be deleted/) });
    const other = await publisher.publish(
      job([{ ref: 'refs/heads/rel/1', oldOid: ZERO_OID, newOid: oid(3) }]),
    );
    expect(other.outcomes[0]).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^protected: only bot may push/),
    });
    expect(published.length).toBe(before);
    expect((await new Wal(wal.store).readIndex(REPO))?.index.seq).toBe(2);

    const ff = await publisher.publish(
      job([{ ref: MAIN, oldOid: oid(1), newOid: oid(4), fastForward: true }]),
    );
    expect(ff.outcomes).toEqual([{ ref: MAIN, ok: true, noop: false }]);
    const bot = await publisher.publish(
      job([{ ref: 'refs/heads/rel/1', oldOid: ZERO_OID, newOid: oid(3) }], { token: 'bot', tokenId: 'x' }),
    );
    expect(bot.seq).toBe(4);
    expect(published.map((p) => p.index.seq).slice(before)).toEqual([3, 4]);
  });

  it('fails a whole atomic push when one of its refs is protected', async () => {
    const { publisher } = await setup();
    await protect(publisher, { denyDelete: true });
    const result = await publisher.publish(
      job(
        [
          { ref: 'refs/heads/topic', oldOid: ZERO_OID, newOid: oid(5) },
          { ref: MAIN, oldOid: oid(1), newOid: ZERO_OID },
        ],
        undefined,
        true,
      ),
    );
    expect(result.seq).toBeNull();
    expect(result.outcomes).toEqual([
      { ref: 'refs/heads/topic', ok: false, reason: 'atomic push failure' },
      { ref: MAIN, ok: false, reason: expect.stringMatching(/^protected:/) },
    ]);
  });

  it('decides a push again under the rules another node set after this node last read the index', async () => {
    const { store, publisher } = await setup();
    // Another node (its own log view and publisher) protects main; this node still knows seq 1.
    const other = new Publisher(new Wal(store), { random: () => 0 });
    await protect(other, { denyForce: true });
    const casBefore = store.indexCasCount();
    const result = await publisher.publish(
      job([{ ref: MAIN, oldOid: oid(1), newOid: oid(2), fastForward: false }]),
    );
    expect(result.outcomes[0]).toMatchObject({ ok: false, reason: expect.stringMatching(/^protected:/) });
    expect(result.seq).toBeNull();
    // The stale guess allowed it, so the CAS was tried and lost; nothing landed.
    expect(store.indexCasCount()).toBe(casBefore + 1);
    expect(result.loaded.index.seq).toBe(2);
  });

  it('decides a push that shares a group commit with a rule change under the new rule', async () => {
    const { wal, publisher } = await setup();
    const first = publisher.publish(job([{ ref: 'refs/heads/a', oldOid: ZERO_OID, newOid: oid(7) }]));
    const change = protect(publisher, { pushers: ['bot'] });
    const push = publisher.publish(job([{ ref: MAIN, oldOid: oid(1), newOid: oid(2), fastForward: true }]));
    const [, changed, pushed] = await Promise.all([first, change, push]);
    expect(changed.entry).toBe(3);
    expect(pushed.seq).toBeNull();
    expect(pushed.outcomes[0]).toMatchObject({ ok: false, reason: expect.stringMatching(/only bot/) });
    const index = (await new Wal(wal.store).readIndex(REPO))?.index;
    expect(index?.seq).toBe(3);
  });

  it('rejects a change past the bound and a removal of a missing rule, writing nothing', async () => {
    const { wal, publisher } = await setup();
    const full = Array.from({ length: MAX_RULES }, (_, i) => ({
      pattern: `refs/heads/b${i}`,
      denyDelete: true as const,
    }));
    await changeProtection(publisher, REPO, { op: 'set', rules: full }, { token: 'admin' });
    await expect(protect(publisher, { denyForce: true })).rejects.toBeInstanceOf(InvalidProtection);
    await expect(
      changeProtection(publisher, REPO, { op: 'remove', pattern: 'refs/heads/nope' }, { token: 'admin' }),
    ).rejects.toBeInstanceOf(RuleNotFound);
    expect((await new Wal(wal.store).readIndex(REPO))?.index.seq).toBe(2);
    // A push in the same group commit as a refused change still lands.
    const first = publisher.publish(job([{ ref: 'refs/heads/w', oldOid: ZERO_OID, newOid: oid(8) }]));
    const bad = protect(publisher, { denyForce: true });
    const ok = publisher.publish(job([{ ref: 'refs/heads/x', oldOid: ZERO_OID, newOid: oid(9) }]));
    await expect(bad).rejects.toBeInstanceOf(InvalidProtection);
    expect((await first).seq).toBe(3);
    expect((await ok).seq).toBe(4);
  });
});

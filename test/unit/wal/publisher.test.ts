import { describe, expect, it } from 'vitest';
import { RepoExists, RepoNotFound } from '../../../lib/wal/errors.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { cmd, fsStore, oid, oidsOf, push, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'alice/proj';

describe('Publisher: single node', () => {
  const tempRoot = useTempRoots();

  async function setup() {
    const store = await fsStore(tempRoot);
    const wal = new Wal(store);
    const created = await wal.createRepo(REPO, { public: false, now: new Date('2024-01-02T03:04:05Z') });
    const publisher = new Publisher(wal, { random: () => 0, now: () => new Date('2024-05-06T07:08:09Z') });
    return { store, wal, publisher, created };
  }

  it('creates an empty repository and refuses to create it twice', async () => {
    const { wal, created } = await setup();
    expect(created.index).toEqual({
      v: 2,
      repo: REPO,
      created: '2024-01-02T03:04:05.000Z',
      seq: 0,
      head: 'refs/heads/main',
      public: false,
      tables: [],
      recent: [],
      paged: 0,
      pagedCheckpoint: null,
      tail: [],
      checkpoint: null,
    });
    await expect(wal.createRepo(REPO, { public: true })).rejects.toBeInstanceOf(RepoExists);
    const fresh = await new Wal(wal.store).readIndex(REPO);
    expect(fresh?.index).toEqual(created.index);
    expect(fresh?.etag).toBe(created.etag);
  });

  it('publishes a push as one entry with the next sequence number', async () => {
    const { store, wal, publisher } = await setup();
    const first = await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    expect(first.outcomes).toEqual([{ ref: 'refs/heads/main', ok: true, noop: false }]);
    expect(first.seq).toBe(1);
    expect(first.loaded.index.seq).toBe(1);

    const second = await publisher.publish(
      push(REPO, [cmd('refs/heads/main', oid(1), oid(2)), cmd('refs/tags/v1', ZERO_OID, oid(3))]),
    );
    expect(second.outcomes).toEqual([
      { ref: 'refs/heads/main', ok: true, noop: false },
      { ref: 'refs/tags/v1', ok: true, noop: false },
    ]);
    expect(second.seq).toBe(2);

    const loaded = await new Wal(store).readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.etag).toBe(second.loaded.etag);
    expect(loaded.index.seq).toBe(2);
    expect(oidsOf(await wal.allRefs(loaded.index))).toEqual({
      'refs/heads/main': oid(2),
      'refs/tags/v1': oid(3),
    });
    const resolved = await wal.resolveRefs(loaded.index, [
      'refs/heads/main',
      'refs/tags/v1',
      'refs/heads/nope',
    ]);
    expect(Object.fromEntries(resolved)).toEqual({
      'refs/heads/main': oid(2),
      'refs/tags/v1': oid(3),
      'refs/heads/nope': ZERO_OID,
    });

    const items = await wal.itemsAfter(loaded.index, 0);
    expect(items.map((i) => i.seq)).toEqual([1, 2]);
    expect(items[0]).toMatchObject({
      seq: 1,
      time: '2024-05-06T07:08:09.000Z',
      who: { token: 't' },
      updates: [{ ref: 'refs/heads/main', old: ZERO_OID, new: oid(1) }],
      packs: [],
    });
    expect(items[1]?.updates).toEqual([
      { ref: 'refs/heads/main', old: oid(1), new: oid(2) },
      { ref: 'refs/tags/v1', old: ZERO_OID, new: oid(3) },
    ]);
    expect(await wal.itemsAfter(loaded.index, 1)).toEqual([items[1]]);
    expect(await wal.itemsAfter(loaded.index, 2)).toEqual([]);

    // Entry objects are written (create-only) before the CAS that names them.
    for (const item of items) {
      const entry = await store.get(item.key);
      if (entry.notModified) throw new Error('unexpected notModified');
      expect(JSON.parse(entry.body.toString('utf8'))).toMatchObject({
        v: 1,
        kind: 'push',
        updates: item.updates,
        atomic: false,
      });
    }
  });

  it('deletes a ref with the zero id', async () => {
    const { wal, publisher } = await setup();
    await publisher.publish(
      push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1)), cmd('refs/heads/gone', ZERO_OID, oid(2))]),
    );
    const result = await publisher.publish(push(REPO, [cmd('refs/heads/gone', oid(2), ZERO_OID)]));
    expect(result.outcomes).toEqual([{ ref: 'refs/heads/gone', ok: true, noop: false }]);
    expect(result.seq).toBe(2);
    expect(oidsOf(await wal.allRefs(result.loaded.index))).toEqual({ 'refs/heads/main': oid(1) });
    const resolved = await wal.resolveRefs(result.loaded.index, ['refs/heads/gone']);
    expect(resolved.get('refs/heads/gone')).toBe(ZERO_OID);
  });

  it('refuses a stale old value with fetch first and writes nothing', async () => {
    const { wal, publisher } = await setup();
    await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    const result = await publisher.publish(push(REPO, [cmd('refs/heads/main', oid(9), oid(2))]));
    expect(result.outcomes).toEqual([{ ref: 'refs/heads/main', ok: false, reason: 'fetch first' }]);
    expect(result.seq).toBeNull();
    const loaded = await new Wal(wal.store).readIndex(REPO);
    expect(loaded?.index.seq).toBe(1);
  });

  it('applies a non-atomic push ref by ref: good refs land, bad ones are refused', async () => {
    const { wal, publisher } = await setup();
    await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    const result = await publisher.publish(
      push(REPO, [cmd('refs/heads/main', oid(5), oid(2)), cmd('refs/heads/dev', ZERO_OID, oid(3))]),
    );
    expect(result.outcomes).toEqual([
      { ref: 'refs/heads/main', ok: false, reason: 'fetch first' },
      { ref: 'refs/heads/dev', ok: true, noop: false },
    ]);
    expect(result.seq).toBe(2);
    const items = await wal.itemsAfter(result.loaded.index, 1);
    expect(items.map((i) => i.updates)).toEqual([[{ ref: 'refs/heads/dev', old: ZERO_OID, new: oid(3) }]]);
  });

  it('atomic push with one stale ref refuses every ref and writes no entry', async () => {
    const { store, publisher } = await setup();
    await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    const before = await store.get('repos/alice/proj.git/index.json');
    const result = await publisher.publish(
      push(
        REPO,
        [
          cmd('refs/heads/dev', ZERO_OID, oid(2)),
          cmd('refs/heads/main', oid(7), oid(3)),
          cmd('refs/tags/v1', ZERO_OID, oid(4)),
        ],
        true,
      ),
    );
    expect(result.outcomes).toEqual([
      { ref: 'refs/heads/dev', ok: false, reason: 'atomic push failure' },
      { ref: 'refs/heads/main', ok: false, reason: 'fetch first' },
      { ref: 'refs/tags/v1', ok: false, reason: 'atomic push failure' },
    ]);
    expect(result.seq).toBeNull();
    const after = await store.get('repos/alice/proj.git/index.json');
    expect(after.etag).toBe(before.etag);
    const fresh = new Wal(store);
    const loaded = await fresh.readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.seq).toBe(1);
    expect(oidsOf(await fresh.allRefs(loaded.index))).toEqual({ 'refs/heads/main': oid(1) });
  });

  it.each([false, true])(
    'refuses a push naming one ref twice, whole, and writes nothing (atomic: %s)',
    async (atomic) => {
      const { store, publisher } = await setup();
      await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
      const keys = (await store.list('')).keys;
      const before = await store.get('repos/alice/proj.git/index.json');
      const reason = 'the push names refs/heads/dev more than once; nothing was changed';
      for (const commands of [
        [cmd('refs/heads/dev', ZERO_OID, oid(2)), cmd('refs/heads/dev', ZERO_OID, oid(3))],
        [cmd('refs/heads/dev', ZERO_OID, oid(2)), cmd('refs/heads/dev', oid(2), oid(3))],
        [
          cmd('refs/heads/main', oid(1), oid(2)),
          cmd('refs/heads/dev', ZERO_OID, oid(2)),
          cmd('refs/heads/dev', ZERO_OID, oid(2)),
        ],
      ]) {
        const result = await publisher.publish(push(REPO, commands, atomic));
        expect(result.seq).toBeNull();
        expect(result.outcomes.every((o) => !o.ok)).toBe(true);
        expect(result.outcomes).toContainEqual({ ref: 'refs/heads/dev', ok: false, reason });
      }
      expect((await store.get('repos/alice/proj.git/index.json')).etag).toBe(before.etag);
      expect((await store.list('')).keys).toEqual(keys);
    },
  );

  it('records an atomic push as one entry marked atomic', async () => {
    const { wal, publisher } = await setup();
    const result = await publisher.publish(
      push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1)), cmd('refs/heads/dev', ZERO_OID, oid(2))], true),
    );
    expect(result.seq).toBe(1);
    const items = await wal.itemsAfter(result.loaded.index, 0);
    expect(items).toHaveLength(1);
    expect(items[0]?.atomic).toBe(true);
    expect(items[0]?.updates).toHaveLength(2);
  });

  it('treats a redelivered push (refs already at the new values) as a no-op that writes nothing', async () => {
    const { store, publisher } = await setup();
    const job = push(REPO, [
      cmd('refs/heads/main', ZERO_OID, oid(1)),
      cmd('refs/heads/dev', ZERO_OID, oid(2)),
    ]);
    const first = await publisher.publish(job);
    expect(first.seq).toBe(1);
    const etag = (await store.head('repos/alice/proj.git/index.json')).etag;

    const again = await publisher.publish(job);
    expect(again.outcomes).toEqual([
      { ref: 'refs/heads/main', ok: true, noop: true },
      { ref: 'refs/heads/dev', ok: true, noop: true },
    ]);
    expect(again.seq).toBeNull();
    expect(again.loaded.index.seq).toBe(1);
    expect((await store.head('repos/alice/proj.git/index.json')).etag).toBe(etag);

    // The same redelivery through a node that has never seen the repository.
    const other = await new Publisher(new Wal(store), { random: () => 0 }).publish(job);
    expect(other.outcomes.map((o) => o.ok && o.noop)).toEqual([true, true]);
    expect(other.seq).toBeNull();
    expect((await store.head('repos/alice/proj.git/index.json')).etag).toBe(etag);
  });

  it('refuses an invalid ref name with funny refname and lands the valid ones', async () => {
    const { publisher } = await setup();
    const result = await publisher.publish(
      push(REPO, [
        cmd('refs/heads/a..b', ZERO_OID, oid(1)),
        cmd('HEAD', ZERO_OID, oid(1)),
        cmd('refs/heads/ok', ZERO_OID, oid(1)),
      ]),
    );
    expect(result.outcomes).toEqual([
      { ref: 'refs/heads/a..b', ok: false, reason: "funny refname: contains '..'" },
      { ref: 'HEAD', ok: false, reason: "funny refname: does not start with 'refs/'" },
      { ref: 'refs/heads/ok', ok: true, noop: false },
    ]);
    expect(result.seq).toBe(1);
    expect(result.loaded.index.tail.map((i) => i.updates.map((u) => u.ref))).toEqual([['refs/heads/ok']]);
  });

  it('rejects a push to a repository that does not exist with RepoNotFound', async () => {
    const { publisher } = await setup();
    await expect(
      publisher.publish(push('bob/missing', [cmd('refs/heads/main', ZERO_OID, oid(1))])),
    ).rejects.toBeInstanceOf(RepoNotFound);
  });
});

describe('Publisher: HEAD', () => {
  const tempRoot = useTempRoots();

  async function setup() {
    const wal = new Wal(await fsStore(tempRoot));
    await wal.createRepo(REPO, { public: false });
    return { wal, publisher: new Publisher(wal, { random: () => 0 }) };
  }

  it('points HEAD at the first branch pushed when main does not exist', async () => {
    const { publisher } = await setup();
    const tag = await publisher.publish(push(REPO, [cmd('refs/tags/v1', ZERO_OID, oid(1))]));
    expect(tag.loaded.index.head).toBe('refs/heads/main');
    const dev = await publisher.publish(push(REPO, [cmd('refs/heads/dev', ZERO_OID, oid(2))]));
    expect(dev.loaded.index.head).toBe('refs/heads/dev');
    // HEAD stays on an existing branch when main appears later.
    const main = await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(3))]));
    expect(main.loaded.index.head).toBe('refs/heads/dev');
  });

  it('prefers main, then master, among branches created at once', async () => {
    const { publisher } = await setup();
    const result = await publisher.publish(
      push(REPO, [
        cmd('refs/heads/alpha', ZERO_OID, oid(1)),
        cmd('refs/heads/master', ZERO_OID, oid(2)),
        cmd('refs/heads/main', ZERO_OID, oid(3)),
      ]),
    );
    expect(result.loaded.index.head).toBe('refs/heads/main');

    const other = await setup();
    const second = await other.publisher.publish(
      push(REPO, [cmd('refs/heads/alpha', ZERO_OID, oid(1)), cmd('refs/heads/master', ZERO_OID, oid(2))]),
    );
    expect(second.loaded.index.head).toBe('refs/heads/master');
  });

  it('moves HEAD to a created branch when its branch no longer exists', async () => {
    const { publisher } = await setup();
    await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    const deleted = await publisher.publish(push(REPO, [cmd('refs/heads/main', oid(1), ZERO_OID)]));
    // Nothing to move to: HEAD keeps naming the missing branch.
    expect(deleted.loaded.index.head).toBe('refs/heads/main');
    const tag = await publisher.publish(push(REPO, [cmd('refs/tags/t', ZERO_OID, oid(2))]));
    expect(tag.loaded.index.head).toBe('refs/heads/main');
    const created = await publisher.publish(push(REPO, [cmd('refs/heads/next', ZERO_OID, oid(3))]));
    expect(created.loaded.index.head).toBe('refs/heads/next');
  });

  it('moves HEAD when one push deletes the head branch and creates another', async () => {
    const { publisher } = await setup();
    await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    const result = await publisher.publish(
      push(REPO, [cmd('refs/heads/main', oid(1), ZERO_OID), cmd('refs/heads/trunk', ZERO_OID, oid(2))]),
    );
    expect(result.loaded.index.head).toBe('refs/heads/trunk');
  });
});

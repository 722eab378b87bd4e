import { describe, expect, it } from 'vitest';
import { advanceCursor, readCursor } from '../../../lib/events/EventCursor.js';
import { EventDispatcher } from '../../../lib/events/EventDispatcher.js';
import { DeliveryFailed, type EventSink } from '../../../lib/events/EventSink.js';
import type { PushEvent } from '../../../lib/events/PushEvent.js';
import { silentLogger } from '../../../lib/log.js';
import type { ObjectStore } from '../../../lib/store/ObjectStore.js';
import { incarnationId } from '../../../lib/wal/keys.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { cmd, fsStore, oid, push, useTempRoots, ZERO_OID } from '../wal/walHelpers.js';

const REPO = 'team/events';

/** An in-memory destination: records what it accepted, fails as scripted, accepts at most `take` per call. */
class RecordingSink implements EventSink {
  readonly name = 'recorder';
  readonly received: PushEvent[] = [];
  failures = 0;
  take = Number.POSITIVE_INFINITY;
  constructor(readonly batchSize: number) {}
  async deliver(events: readonly PushEvent[]): Promise<number> {
    if (this.failures > 0) {
      this.failures--;
      throw new DeliveryFailed(this.name, 'scripted failure');
    }
    const accepted = events.slice(0, Math.min(this.take, events.length));
    this.received.push(...accepted);
    return accepted.length;
  }
}

describe('EventDispatcher', () => {
  const tempRoot = useTempRoots();

  async function setup(pushes: number) {
    const store = await fsStore(tempRoot);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0 });
    for (let i = 1; i <= pushes; i++)
      await publisher.publish(push(REPO, [cmd('refs/heads/main', i === 1 ? ZERO_OID : oid(i - 1), oid(i))]));
    return { store, wal, publisher };
  }

  const dispatcher = (store: ObjectStore, sink: EventSink, attempts = 3) =>
    new EventDispatcher({
      wal: new Wal(store),
      store,
      sinks: [sink],
      logger: silentLogger,
      retry: { attempts, baseMs: 1, capMs: 2 },
    });

  it('delivers in order from the cursor, retrying failed batches, and resumes where it stopped', async () => {
    const { store, publisher } = await setup(3);
    const sink = new RecordingSink(2);
    sink.failures = 2;
    expect(await dispatcher(store, sink).catchUp(REPO)).toEqual([
      { sink: 'recorder', delivered: 3, cursor: 3, head: 3 },
    ]);
    expect(sink.received.map((e) => e.seq)).toEqual([1, 2, 3]);

    await publisher.publish(push(REPO, [cmd('refs/heads/main', oid(3), oid(4))]));
    sink.failures = 5;
    const stopped = await dispatcher(store, sink, 2).catchUp(REPO);
    expect(stopped).toEqual([
      {
        sink: 'recorder',
        delivered: 0,
        cursor: 3,
        head: 4,
        error: 'recorder: scripted failure',
        // What the logs write: the error's class and code, not its message alone.
        cause: { name: 'DeliveryFailed', code: 'DeliveryFailed', message: 'recorder: scripted failure' },
      },
    ]);
    sink.failures = 0;
    expect((await dispatcher(store, sink).catchUp(REPO))[0]).toMatchObject({ delivered: 1, cursor: 4 });
    expect(sink.received.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('advances by the accepted prefix of a batch', async () => {
    const { store } = await setup(5);
    const sink = new RecordingSink(10);
    sink.take = 2;
    expect((await dispatcher(store, sink).catchUp(REPO))[0]).toMatchObject({ delivered: 5, cursor: 5 });
    expect(sink.received.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('lets two nodes catch up at once: the cursor ends at the head and every event keeps its key', async () => {
    const { store } = await setup(12);
    const a = new RecordingSink(1);
    const b = new RecordingSink(1);
    await Promise.all([dispatcher(store, a).catchUp(REPO), dispatcher(store, b).catchUp(REPO)]);
    const index = (await new Wal(store).readIndex(REPO))?.index;
    if (!index) throw new Error('no index');
    expect((await readCursor(store, REPO, 'recorder', incarnationId(index.created))).seq).toBe(12);
    const seen = new Map<number, string>();
    for (const e of [...a.received, ...b.received]) {
      expect(seen.get(e.seq) ?? e.id).toBe(e.id);
      seen.set(e.seq, e.id);
    }
    expect([...seen.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    for (const r of [a.received, b.received]) {
      const seqs = r.map((e) => e.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
  });

  it('refuses to advance a cursor someone else advanced, and never moves it back', async () => {
    const { store, wal } = await setup(2);
    const index = (await wal.readIndex(REPO))?.index;
    if (!index) throw new Error('no index');
    const start = await readCursor(store, REPO, 'recorder', incarnationId(index.created));
    const mine = await advanceCursor(store, start, 1, new Date());
    await expect(advanceCursor(store, start, 2, new Date())).rejects.toThrow('moved');
    expect(await advanceCursor(store, mine, 1, new Date())).toBe(mine);
    // A cursor of an earlier incarnation of the repository counts as nothing delivered.
    expect((await readCursor(store, REPO, 'recorder', 'another-one')).seq).toBe(0);
  });

  it('replays from a seq without moving the cursor over events it never delivered', async () => {
    const { store } = await setup(4);
    const sink = new RecordingSink(1);
    sink.failures = 100;
    await dispatcher(store, sink, 1).catchUp(REPO);
    sink.failures = 0;
    const gap = await dispatcher(store, sink).replay(REPO, 3);
    expect(gap).toEqual([{ sink: 'recorder', delivered: 2, cursor: 0, head: 4 }]);
    const whole = await dispatcher(store, sink).replay(REPO, 1);
    expect(whole).toEqual([{ sink: 'recorder', delivered: 4, cursor: 4, head: 4 }]);
    expect(sink.received.map((e) => e.seq)).toEqual([3, 4, 1, 2, 3, 4]);
  });

  it('carries every update of an entry larger than its log item', async () => {
    const store = await fsStore(tempRoot);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const commands = Array.from({ length: 40 }, (_, i) => cmd(`refs/heads/b${i}`, ZERO_OID, oid(i + 1)));
    await new Publisher(wal).publish(push(REPO, commands));
    const sink = new RecordingSink(1);
    await dispatcher(store, sink).catchUp(REPO);
    expect(sink.received[0]?.updates).toHaveLength(40);
    expect(sink.received[0]?.count).toBeUndefined();
  });
});

/**
 * What `narwal doctor` checks before anyone trusts a store or a presence table with pushes: the
 * log is only as safe as the backend's conditional writes (docs/architecture.md invariant 1), and some
 * S3-compatible servers (s3rver, for one) accept `If-None-Match: *` and `If-Match` and then
 * silently overwrite. Every probe works on keys of its own under `doctor/` (store) or a
 * `doctor#...` partition (presence) and removes them afterwards.
 */
import { randomBytes } from 'node:crypto';
import type { PresenceStore } from '../presence/PresenceStore.js';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  /** What was seen; for a failed check, why narwal cannot run on this backend. */
  readonly detail: string;
}

/** Runs `probe`, turning an unexpected error into a failed check instead of an exception. */
async function check(name: string, probe: () => Promise<string>): Promise<Check> {
  try {
    return { name, ok: true, detail: await probe() };
  } catch (error) {
    return { name, ok: false, detail: error instanceof Error ? error.message : String(error) };
  }
}

/** A write the backend must refuse; answers how it refused, throws when it did not. */
async function mustRefuse(write: () => Promise<unknown>, what: string): Promise<string> {
  try {
    await write();
  } catch (error) {
    if (isStoreError(error, 'PreconditionFailed') || isStoreError(error, 'ConditionalConflict'))
      return `refused (${error.code})`;
    throw error;
  }
  throw new Error(`${what} was accepted: this backend does not honour conditional writes`);
}

export async function checkStore(store: ObjectStore): Promise<Check[]> {
  const key = `doctor/${Date.now()}-${randomBytes(6).toString('hex')}`;
  const first = Buffer.from(`narwal doctor probe ${key}\n`);
  const second = Buffer.from(`narwal doctor probe ${key}, second version\n`);
  const checks: Check[] = [];
  let etag: string | undefined;
  try {
    checks.push(
      await check('create-only put (If-None-Match: *)', async () => {
        etag = (await store.put(key, first, { ifNoneMatch: '*' })).etag;
        return `created ${key}`;
      }),
    );
    checks.push(
      await check('a second create-only put of the same key is refused', async () => {
        const how = await mustRefuse(
          () => store.put(key, second, { ifNoneMatch: '*' }),
          'a second If-None-Match: * put',
        );
        const got = await store.get(key);
        if (got.notModified || !got.body.equals(first))
          throw new Error('the object changed although the put was refused');
        return how;
      }),
    );
    checks.push(
      await check('a put with a stale etag (If-Match) is refused', async () => {
        const how = await mustRefuse(
          () => store.put(key, second, { ifMatch: '0123456789abcdef0123456789abcdef' }),
          'an If-Match put with a wrong etag',
        );
        const got = await store.get(key);
        if (got.notModified || !got.body.equals(first))
          throw new Error('the object changed although the put was refused');
        return how;
      }),
    );
    checks.push(
      await check('a put with the current etag (If-Match) replaces the object', async () => {
        if (etag === undefined) throw new Error('no etag from the first put');
        const replaced = await store.put(key, second, { ifMatch: etag });
        const got = await store.get(key);
        if (got.notModified || !got.body.equals(second)) throw new Error('the object was not replaced');
        if (replaced.etag === etag) throw new Error('the etag did not change with the content');
        const how = await mustRefuse(
          () => store.put(key, first, { ifMatch: etag as string }),
          'an If-Match put with the replaced etag',
        );
        etag = replaced.etag;
        return `replaced; the old etag is then ${how}`;
      }),
    );
    checks.push(
      await check('a conditional get of an unchanged object answers "not modified"', async () => {
        if (etag === undefined) throw new Error('no etag');
        const got = await store.get(key, { ifNoneMatch: etag });
        if (!got.notModified) throw new Error('the whole object came back');
        return 'not modified';
      }),
    );
    checks.push(
      await check('list finds the probe', async () => {
        const page = await store.list('doctor/');
        if (!page.keys.includes(key)) throw new Error(`list of doctor/ did not name ${key}`);
        return `${page.keys.length} key(s) under doctor/`;
      }),
    );
  } finally {
    checks.push(
      await check('delete the probe', async () => {
        await store.delete(key);
        return 'deleted';
      }),
    );
  }
  return checks;
}

export async function checkPresence(presence: PresenceStore, now: () => number = Date.now): Promise<Check[]> {
  const key = `doctor#${randomBytes(6).toString('hex')}`;
  const live = { key, id: 'probe', owner: 'doctor-a', expiresAt: now() + 60_000 };
  const checks: Check[] = [];
  try {
    checks.push(
      await check('create a record', async () => {
        if (!(await presence.tryCreate(live))) throw new Error('the create was refused');
        return `created ${key}`;
      }),
    );
    checks.push(
      await check('a second create of a live record is refused', async () => {
        if (await presence.tryCreate({ ...live, owner: 'doctor-b' }))
          throw new Error('a second create of a live record was accepted: it is not a conditional write');
        const got = await presence.get(key, 'probe');
        if (got?.owner !== 'doctor-a') throw new Error('the record changed owner');
        return 'refused';
      }),
    );
    checks.push(
      await check('only the owner renews', async () => {
        if (await presence.renew(key, 'probe', 'doctor-b', now() + 120_000))
          throw new Error('another owner renewed the record');
        if (!(await presence.renew(key, 'probe', 'doctor-a', now() + 120_000)))
          throw new Error('the owner could not renew');
        return 'renewed by its owner only';
      }),
    );
    checks.push(
      await check('an expired record does not count and may be replaced', async () => {
        const id = 'expired';
        if (!(await presence.tryCreate({ key, id, owner: 'doctor-a', expiresAt: now() - 1_000 })))
          throw new Error('could not create the expired probe');
        if ((await presence.get(key, id)) !== null) throw new Error('an expired record was read as live');
        if (!(await presence.tryCreate({ key, id, owner: 'doctor-b', expiresAt: now() + 60_000 })))
          throw new Error('an expired record blocked a new one');
        await presence.release(key, id, 'doctor-b');
        return 'filtered on read, replaced';
      }),
    );
  } finally {
    checks.push(
      await check('release the probe', async () => {
        await presence.release(key, 'probe', 'doctor-a');
        if ((await presence.get(key, 'probe')) !== null) throw new Error('the record is still there');
        return 'released';
      }),
    );
  }
  return checks;
}

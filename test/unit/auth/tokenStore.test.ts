/**
 * The token store against the real filesystem store: what a record holds, how a presented token
 * is checked, how long a node trusts what it read, and listing and revoking.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidGrant } from '../../../lib/auth/Principal.js';
import { AmbiguousToken, TokenNotFound, TokenStore } from '../../../lib/auth/TokenStore.js';
import { CorruptTokenRecord, tokenKey } from '../../../lib/auth/tokenRecord.js';
import { cachedSecret } from '../../../lib/secrets/Secret.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type { ObjectStore } from '../../../lib/store/ObjectStore.js';

const ADMIN = 'configured-admin-token';
const reader = { name: 'reader', grants: [{ scope: 'read', pattern: 'team/*' }] } as const;

/** Records which store operations a lookup made, on the way to the real store. */
function counting(store: ObjectStore, ops: string[]): ObjectStore {
  const note = <T>(op: string, result: T): T => {
    ops.push(op);
    return result;
  };
  return {
    get: (key, options) => note(`get ${key}`, store.get(key, options)),
    getStream: (key) => note(`getStream ${key}`, store.getStream(key)),
    head: (key) => note(`head ${key}`, store.head(key)),
    stat: (key) => note(`stat ${key}`, store.stat(key)),
    putStream: (key, body, options) => note(`putStream ${key}`, store.putStream(key, body, options)),
    put: (key, body, options) => note(`put ${key}`, store.put(key, body, options)),
    list: (prefix, options) => note(`list ${prefix}`, store.list(prefix, options)),
    delete: (key) => note(`delete ${key}`, store.delete(key)),
    renew: (key) => note(`renew ${key}`, store.renew(key)),
  };
}

let root: string;
let store: FsObjectStore;
let now: number;
const clock = () => now;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-tokens-'));
  store = new FsObjectStore(root);
  now = Date.parse('2026-01-02T03:04:05.000Z');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const tokens = (options: { cacheMs?: number; lastUsedEveryMs?: number; on?: ObjectStore } = {}) =>
  new TokenStore(options.on ?? store, ADMIN, {
    cacheMs: options.cacheMs ?? 0,
    now: clock,
    ...(options.lastUsedEveryMs !== undefined ? { lastUsedEveryMs: options.lastUsedEveryMs } : {}),
  });

describe('token records', () => {
  it('hold a salted hash and what the token may do, never the secret', async () => {
    const { token, info } = await tokens().create({ ...reader, owner: 'ana', create: true });
    const raw = await store.get(tokenKey(info.id));
    if (raw.notModified) throw new Error('unexpected 304');
    const text = raw.body.toString('utf8');
    const secret = token.slice(`nwl_${info.id}_`.length);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(token);
    const stored = JSON.parse(text);
    expect(stored).toMatchObject({
      v: 1,
      id: info.id,
      name: 'reader',
      owner: 'ana',
      create: true,
      grants: [{ scope: 'read', pattern: 'team/*' }],
      created: '2026-01-02T03:04:05.000Z',
      hash: { alg: 'hmac-sha256' },
    });
    expect(Buffer.from(stored.hash.salt, 'base64')).toHaveLength(16);
    expect(Buffer.from(stored.hash.digest, 'base64')).toHaveLength(32);
    const other = await tokens().create(reader);
    const otherRaw = await store.get(tokenKey(other.info.id));
    if (otherRaw.notModified) throw new Error('unexpected 304');
    expect(JSON.parse(otherRaw.body.toString()).hash.salt).not.toBe(stored.hash.salt);
  });

  it('refuse names, owners, patterns and empty scopes that are not valid, writing nothing', async () => {
    const t = tokens();
    await expect(t.create({ ...reader, name: 'bad name' })).rejects.toThrow(InvalidGrant);
    await expect(t.create({ ...reader, owner: '../x' })).rejects.toThrow('invalid owner "../x"');
    await expect(t.create({ name: 'x', grants: [{ scope: 'read', pattern: 'a/b/c' }] })).rejects.toThrow(
      'invalid repository pattern "a/b/c"',
    );
    await expect(t.create({ name: 'x', grants: [] })).rejects.toThrow('a token needs at least one scope');
    expect(await t.list()).toEqual([]);
  });

  it('that do not decode are refused without quoting their content', async () => {
    const { token, info } = await tokens().create(reader);
    await store.put(tokenKey(info.id), Buffer.from('{"v":1,"hash":{"digest":"c2VjcmV0LWhhc2g="'));
    const error = await tokens()
      .find(token)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptTokenRecord);
    expect((error as Error).message).toBe(
      `token record auth/tokens/${info.id}.json is not valid; revoke the token and issue a new one`,
    );
  });
});

describe('find', () => {
  it('knows a token by its exact string only', async () => {
    const t = tokens();
    const { token, info } = await t.create({ ...reader, owner: 'ana' });
    expect(await t.find(token)).toEqual({
      name: 'reader',
      owner: 'ana',
      tokenId: info.id,
      grants: [{ scope: 'read', pattern: 'team/*' }],
      create: false,
    });
    const last = token.at(-1) === 'x' ? 'y' : 'x';
    expect(await t.find(`${token.slice(0, -1)}${last}`)).toBeNull();
    expect(await t.find(token.slice(0, -1))).toBeNull();
    expect(await t.find(`${token}x`)).toBeNull();
    expect(await t.find('')).toBeNull();
    expect(await t.find('garbage')).toBeNull();
  });

  it('takes the same path for an unknown id as for a wrong secret', async () => {
    const { token, info } = await tokens().create(reader);
    const ops: string[] = [];
    const t = tokens({ on: counting(store, ops) });
    const wrongSecret = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    const unknownId = token.replace(
      info.id,
      info.id.replace(/^./, (c) => (c === 'f' ? 'e' : 'f')),
    );
    expect(await t.find(wrongSecret)).toBeNull();
    const unknownIdKey = tokenKey(unknownId.slice(4, 20));
    expect(await t.find(unknownId)).toBeNull();
    expect(ops).toEqual([`get ${tokenKey(info.id)}`, `get ${unknownIdKey}`]);
  });

  it('trusts the absence of an id for cacheMs as it trusts a record: one read either way', async () => {
    const { token, info } = await tokens().create(reader);
    const ops: string[] = [];
    const t = tokens({ cacheMs: 5_000, on: counting(store, ops) });
    const wrongSecret = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    const unknownId = token.replace(
      info.id,
      info.id.replace(/^./, (c) => (c === 'f' ? 'e' : 'f')),
    );
    for (let i = 0; i < 5; i++) {
      expect(await t.find(wrongSecret)).toBeNull();
      expect(await t.find(unknownId)).toBeNull();
      now += 900;
    }
    expect(ops).toEqual([`get ${tokenKey(info.id)}`, `get ${tokenKey(unknownId.slice(4, 20))}`]);
    // Past cacheMs both are read again, so a token created meanwhile on another node works.
    now += 500;
    expect(await t.find(wrongSecret)).toBeNull();
    expect(await t.find(unknownId)).toBeNull();
    expect(ops).toHaveLength(4);
  });

  it('keeps a bounded number of unknown ids, without evicting known tokens', async () => {
    const { token } = await tokens().create(reader);
    const ops: string[] = [];
    const t = new TokenStore(counting(store, ops), ADMIN, { cacheMs: 60_000, maxUnknownIds: 2, now: clock });
    expect(await t.find(token)).not.toBeNull();
    const unknown = (n: number) => `nwl_${n.toString(16).padStart(16, '0')}_${'A'.repeat(43)}`;
    for (const n of [1, 2, 3, 1, 1]) expect(await t.find(unknown(n))).toBeNull();
    // 1 was dropped for 3 and read again, then kept; the known token was never dropped.
    expect(ops.filter((op) => op.endsWith('0000000000000001.json'))).toHaveLength(2);
    expect(await t.find(token)).not.toBeNull();
    expect(ops.filter((op) => op.startsWith('get '))).toHaveLength(5);
  });

  it('knows the configured admin token, compared the same way', async () => {
    const t = tokens();
    expect(await t.find(ADMIN)).toEqual({
      name: 'admin',
      grants: [{ scope: 'admin', pattern: '**' }],
      create: true,
    });
    expect(await t.find(`${ADMIN}x`)).toBeNull();
    expect(await t.find(ADMIN.slice(0, -1))).toBeNull();
    expect(await t.find(ADMIN.toUpperCase())).toBeNull();
  });

  it('trusts what it read for cacheMs from the read, then sees a revocation by another node', async () => {
    const ops: string[] = [];
    const nodeA = tokens({ cacheMs: 5_000, on: counting(store, ops) });
    const nodeB = tokens();
    const { token, info } = await nodeB.create(reader);
    expect(await nodeA.find(token)).not.toBeNull();
    const reads = () => ops.filter((op) => op.startsWith('get')).length;
    expect(reads()).toBe(1);
    now += 1_000;
    expect(await nodeA.find(token)).not.toBeNull();
    expect(reads()).toBe(1);
    await nodeB.revoke(info.id);
    now += 3_999;
    expect(await nodeA.find(token)).not.toBeNull();
    now += 1;
    expect(await nodeA.find(token)).toBeNull();
    expect(reads()).toBe(2);
  });

  it('with a cache life of 0 reads the record for every request', async () => {
    const nodeA = tokens({ cacheMs: 0 });
    const nodeB = tokens();
    const { token, info } = await nodeB.create(reader);
    expect(await nodeA.find(token)).not.toBeNull();
    await nodeB.revoke(info.name);
    expect(await nodeA.find(token)).toBeNull();
  });

  it('forgets a token it revoked itself at once', async () => {
    const t = tokens({ cacheMs: 60_000 });
    const { token, info } = await t.create(reader);
    expect(await t.find(token)).not.toBeNull();
    await t.revoke(info.id);
    expect(await t.find(token)).toBeNull();
  });

  it('records when a token was last used, at most once per interval', async () => {
    const t = tokens({ lastUsedEveryMs: 60_000 });
    const { token } = await t.create(reader);
    expect((await t.list())[0]?.lastUsed).toBeUndefined();
    now += 10_000;
    await t.find(token);
    expect((await t.list())[0]?.lastUsed).toBe('2026-01-02T03:04:15.000Z');
    now += 59_999;
    await t.find(token);
    expect((await t.list())[0]?.lastUsed).toBe('2026-01-02T03:04:15.000Z');
    now += 1;
    await t.find(token);
    expect((await t.list())[0]?.lastUsed).toBe('2026-01-02T03:05:15.000Z');
  });

  it('never brings back a token revoked while a node still had it cached', async () => {
    const nodeA = tokens({ cacheMs: 60_000, lastUsedEveryMs: 1_000 });
    const nodeB = tokens();
    const { token, info } = await nodeB.create(reader);
    // nodeB's use records lastUsed, so nodeA's read finds it fresh and has its one write left.
    await nodeB.find(token);
    await nodeA.find(token);
    await nodeB.revoke(info.id);
    now += 2_000;
    // Still inside nodeA's cache bound, so accepted, and its lastUsed write must not land.
    expect(await nodeA.find(token)).not.toBeNull();
    expect(await nodeB.list()).toEqual([]);
    await expect(store.head(tokenKey(info.id))).rejects.toMatchObject({ code: 'NotFound' });
  });
});

describe('list and revoke', () => {
  it('list every token oldest first, with no salt, hash or secret', async () => {
    const t = tokens();
    const first = await t.create({ ...reader, owner: 'ana' });
    now += 1_000;
    const second = await t.create({
      name: 'deploy',
      grants: [
        { scope: 'write', pattern: 'team/app' },
        { scope: 'admin', pattern: 'team/*' },
      ],
      create: true,
    });
    const listed = await t.list();
    expect(listed).toEqual([
      { ...first.info, owner: 'ana' },
      {
        id: second.info.id,
        name: 'deploy',
        grants: second.info.grants,
        create: true,
        created: '2026-01-02T03:04:06.000Z',
      },
    ]);
    const text = JSON.stringify(listed);
    expect(text).not.toMatch(/salt|hash|digest|nwl_/);
  });

  it('revoke by id, or by a name only one token has', async () => {
    const t = tokens();
    const a = await t.create(reader);
    const b = await t.create(reader);
    const c = await t.create({ ...reader, name: 'unique' });
    await expect(t.revoke('reader')).rejects.toThrow(AmbiguousToken);
    await expect(t.revoke('reader')).rejects.toThrow(`2 tokens are named "reader"`);
    await expect(t.revoke('nobody')).rejects.toThrow(TokenNotFound);
    expect((await t.revoke(a.info.id)).id).toBe(a.info.id);
    expect((await t.revoke('reader')).id).toBe(b.info.id);
    expect((await t.revoke('unique')).id).toBe(c.info.id);
    expect(await t.list()).toEqual([]);
    expect(await t.find(a.token)).toBeNull();
  });
});

describe('an admin token read from a secret', () => {
  it('accepts a rotated admin token once the secret is read again, at most every half minute', async () => {
    let current = 'admin-token-before-rotation';
    let reads = 0;
    const secret = cachedSecret({
      fetch: async () => {
        reads++;
        return current;
      },
      now: clock,
    });
    const t = new TokenStore(store, secret, { cacheMs: 0, now: clock });
    expect((await t.find('admin-token-before-rotation'))?.name).toBe('admin');
    current = 'admin-token-after-rotation';
    // Read moments ago: a stranger's guesses do not make it read again.
    expect(await t.find('admin-token-after-rotation')).toBeNull();
    expect(await t.find('some-guess-of-a-token')).toBeNull();
    expect(reads).toBe(1);
    now += 31_000;
    expect((await t.find('admin-token-after-rotation'))?.name).toBe('admin');
    expect(reads).toBe(2);
    expect(await t.find('admin-token-before-rotation')).toBeNull();
  });
});

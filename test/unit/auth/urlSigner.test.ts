import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidSignedUrl, SIGNING_KEY, storedSigningKey, UrlSigner } from '../../../lib/auth/UrlSigner.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';

let root: string;
let store: FsObjectStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-signer-'));
  store = new FsObjectStore(root);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const reason = (promise: Promise<unknown>) =>
  promise.then(
    () => 'accepted',
    (error: unknown) => (error instanceof InvalidSignedUrl ? error.reason : String(error)),
  );

describe('UrlSigner', () => {
  it('accepts its own signature until it expires, and nothing else', async () => {
    let now = 1_000_000_000_000;
    const signer = new UrlSigner({ key: storedSigningKey(store), now: () => now });
    const { expires, signature } = await signer.sign('subject', 60);
    expect(expires).toBe(1_000_000_060);
    expect(await reason(signer.verify('subject', String(expires), signature))).toBe('accepted');
    expect(await reason(signer.verify('other', String(expires), signature))).toBe('signature');
    expect(await reason(signer.verify('subject', String(expires + 1), signature))).toBe('signature');
    expect(await reason(signer.verify('subject', null, signature))).toBe('malformed');
    expect(await reason(signer.verify('subject', String(expires), 'zz'))).toBe('malformed');
    now += 60_000;
    expect(await reason(signer.verify('subject', String(expires), signature))).toBe('expired');
  });

  it('shares one key between nodes through the store, and checking never makes one', async () => {
    const checker = new UrlSigner({ key: storedSigningKey(store) });
    expect(await reason(checker.verify('subject', '9999999999', '0'.repeat(64)))).toBe('signature');
    await expect(store.get(SIGNING_KEY)).rejects.toThrow();
    const [a, b] = [storedSigningKey(store), storedSigningKey(store)];
    const [keyA, keyB] = await Promise.all([a(true), b(true)]);
    expect(keyA?.equals(keyB as Buffer)).toBe(true);
    const signed = await new UrlSigner({ key: a }).sign('subject', 60);
    expect(await reason(checker.verify('subject', String(signed.expires), signed.signature))).toBe(
      'accepted',
    );
  });
});

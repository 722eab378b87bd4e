/**
 * Signed, expiring URLs for what narwal serves without credentials: the stored packs a clone's
 * `packfile-uris` answer names (lib/http/packUriRoutes.ts). git fetches those URIs in a process
 * of its own (`git http-fetch`) that has no credentials for them, so the URL itself is the grant:
 * read one thing, until a time. The signature is HMAC-SHA-256 over what the URL names and its
 * expiry, under a key every node shares through the store (`auth/url-signing-key`, created once,
 * create-only, so nodes starting together agree on one). Whoever can read the store can read the
 * packs anyway; the key grants nothing more.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';

export const SIGNING_KEY = 'auth/url-signing-key';

/** Why a signed URL was refused. */
export class InvalidSignedUrl extends Error {
  readonly code = 'InvalidSignedUrl';
  constructor(readonly reason: 'malformed' | 'signature' | 'expired') {
    super(
      reason === 'expired'
        ? 'the link has expired; fetch again for a new one'
        : reason === 'signature'
          ? 'the link’s signature does not match what it names'
          : 'the link is not a signed narwal link (expires and signature are required)',
    );
  }
}

export interface SignedParams {
  /** Seconds since the epoch. */
  readonly expires: number;
  /** 64 lowercase hex digits. */
  readonly signature: string;
}

/** The signing key; made when `create` and there is none yet, else null when there is none. */
export type SigningKey = (create: boolean) => Promise<Buffer | null>;

export class UrlSigner {
  readonly #key: SigningKey;
  readonly #now: () => number;

  constructor(options: { key: SigningKey; now?: () => number }) {
    this.#key = options.key;
    this.#now = options.now ?? Date.now;
  }

  /** A signature of `subject` valid for `ttlSeconds` from now. */
  async sign(subject: string, ttlSeconds: number): Promise<SignedParams> {
    const expires = Math.floor(this.#now() / 1000) + Math.max(1, Math.floor(ttlSeconds));
    const key = await this.#key(true);
    if (key === null) throw new Error('no URL signing key');
    return { expires, signature: mac(key, subject, expires) };
  }

  /** Checks `expires` and `signature` (as a URL gave them) for `subject`; throws InvalidSignedUrl. */
  async verify(subject: string, expires: string | null, signature: string | null): Promise<void> {
    if (
      expires === null ||
      signature === null ||
      !/^\d{1,12}$/.test(expires) ||
      !/^[0-9a-f]{64}$/.test(signature)
    )
      throw new InvalidSignedUrl('malformed');
    // Checking never makes the key: with none, no link was ever signed.
    const key = await this.#key(false);
    if (key === null) throw new InvalidSignedUrl('signature');
    const expected = Buffer.from(mac(key, subject, Number(expires)), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) throw new InvalidSignedUrl('signature');
    if (Number(expires) * 1000 <= this.#now()) throw new InvalidSignedUrl('expired');
  }
}

function mac(key: Buffer, subject: string, expires: number): string {
  return createHmac('sha256', key).update(`narwal signed url 1\n${expires}\n${subject}`).digest('hex');
}

/**
 * The key in `store`, made on first use: read it, or create it (create-only) and read again if
 * another node made it first. Kept for the life of the process once read.
 */
export function storedSigningKey(store: Pick<ObjectStore, 'get' | 'put'>): SigningKey {
  let key: Promise<Buffer> | undefined;
  const read = async (): Promise<Buffer | null> => {
    try {
      const got = await store.get(SIGNING_KEY);
      return 'body' in got ? Buffer.from(got.body.toString('utf8').trim(), 'hex') : null;
    } catch (error) {
      if (isStoreError(error, 'NotFound')) return null;
      throw error;
    }
  };
  const load = async (): Promise<Buffer> => {
    const found = await read();
    if (found !== null && found.length >= 32) return found;
    try {
      await store.put(SIGNING_KEY, Buffer.from(randomBytes(32).toString('hex')), {
        ifNoneMatch: '*',
        contentType: 'text/plain',
      });
    } catch (error) {
      if (!isStoreError(error, 'PreconditionFailed') && !isStoreError(error, 'ConditionalConflict'))
        throw error;
    }
    const made = await read();
    if (made === null || made.length < 32)
      throw new Error(`the URL signing key at ${SIGNING_KEY} is unreadable`);
    return made;
  };
  return async (create) => {
    if (!create && key === undefined) {
      const found = await read();
      if (found === null || found.length < 32) return null;
      key = Promise.resolve(found);
      return found;
    }
    key ??= load().catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    return key;
  };
}

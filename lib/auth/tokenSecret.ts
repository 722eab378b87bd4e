/**
 * Token secrets and how they are kept. A token reads `nwl_<id>_<secret>`: the id is public and
 * names the record (`auth/tokens/<id>.json`), the secret is 256 random bits. Records keep only a
 * random per-token salt and HMAC-SHA-256(salt, token).
 *
 * Why a fast keyed hash and not scrypt or bcrypt: slow hashes exist to make guessing a *chosen*
 * password expensive; these secrets are generated with 256 bits of entropy, so a leaked record
 * cannot be brute-forced however fast the hash is, while every git request (a clone is two or
 * three) checks a token, and on Lambda a 50 ms, 16 MiB scrypt per request would be billed
 * latency and memory for no added safety. The salt keeps equal tokens from having equal records
 * and makes precomputed tables useless.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const ID_BYTES = 8;
const SECRET_BYTES = 32;
const SALT_BYTES = 16;
const FORMAT = /^nwl_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface SecretHash {
  readonly salt: Buffer;
  readonly digest: Buffer;
}

/** A fresh token: its public id and the whole string the client presents. */
export function newToken(): { id: string; token: string } {
  const id = randomBytes(ID_BYTES).toString('hex');
  return { id, token: `nwl_${id}_${randomBytes(SECRET_BYTES).toString('base64url')}` };
}

/** The id a presented token names, or null when it is not in the token format at all. */
export function tokenId(presented: string): string | null {
  return FORMAT.exec(presented)?.[1] ?? null;
}

export function hashToken(token: string, salt: Buffer = randomBytes(SALT_BYTES)): SecretHash {
  return { salt, digest: createHmac('sha256', salt).update(token, 'utf8').digest() };
}

/** Constant-time check of a presented token against a stored hash. */
export function verifyToken(presented: string, stored: SecretHash): boolean {
  const digest = hashToken(presented, stored.salt).digest;
  return digest.length === stored.digest.length && timingSafeEqual(digest, stored.digest);
}

/**
 * A stand-in hash checked when the presented id has no record, so an unknown id costs the same
 * work and gives the same answer as a wrong secret.
 */
export function decoyHash(): SecretHash {
  return hashToken(randomBytes(SECRET_BYTES).toString('base64url'));
}

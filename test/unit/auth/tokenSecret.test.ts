import { describe, expect, it } from 'vitest';
import { decoyHash, hashToken, newToken, tokenId, verifyToken } from '../../../lib/auth/tokenSecret.js';

describe('token secrets', () => {
  it('carry a public id and 256 random bits', () => {
    const { id, token } = newToken();
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(token).toMatch(new RegExp(`^nwl_${id}_[A-Za-z0-9_-]{43}$`));
    expect(tokenId(token)).toBe(id);
    expect(newToken().token).not.toBe(token);
  });

  it.each([
    '',
    'nwl_',
    'test-admin-token',
    'nwl_0123456789abcdef',
    'nwl_0123456789abcdef_short',
    `nwl_0123456789ABCDEF_${'a'.repeat(43)}`,
    `nwl_0123456789abcdef_${'a'.repeat(44)}`,
    `nwl_0123456789abcdef_${'a'.repeat(42)}!`,
    ` nwl_0123456789abcdef_${'a'.repeat(43)}`,
  ])('finds no id in %j', (presented) => {
    expect(tokenId(presented)).toBeNull();
  });

  it('are kept as a salted HMAC: equal tokens, different records', () => {
    const { token } = newToken();
    const a = hashToken(token);
    const b = hashToken(token);
    expect(a.salt).toHaveLength(16);
    expect(a.digest).toHaveLength(32);
    expect(a.salt.equals(b.salt)).toBe(false);
    expect(a.digest.equals(b.digest)).toBe(false);
    expect(hashToken(token, a.salt).digest.equals(a.digest)).toBe(true);
  });

  it('verify only the exact token', () => {
    const { token } = newToken();
    const stored = hashToken(token);
    expect(verifyToken(token, stored)).toBe(true);
    expect(verifyToken(`${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, stored)).toBe(false);
    expect(verifyToken(token.slice(0, -1), stored)).toBe(false);
    expect(verifyToken('', stored)).toBe(false);
    expect(verifyToken(token, decoyHash())).toBe(false);
  });

  it('refuse a stored digest of the wrong length instead of throwing', () => {
    const { token } = newToken();
    const stored = hashToken(token);
    expect(verifyToken(token, { salt: stored.salt, digest: stored.digest.subarray(0, 16) })).toBe(false);
  });
});

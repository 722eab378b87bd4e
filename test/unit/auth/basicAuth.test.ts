import { describe, expect, it } from 'vitest';
import { tokenFromAuthorization } from '../../../lib/auth/basicAuth.js';

const basic = (userPass: string) => `Basic ${Buffer.from(userPass, 'utf8').toString('base64')}`;

describe('tokenFromAuthorization', () => {
  it('takes the token from the password', () => {
    expect(tokenFromAuthorization(basic('git:s3cret'))).toBe('s3cret');
    expect(tokenFromAuthorization(basic(':s3cret'))).toBe('s3cret');
  });

  it('keeps colons inside the password (RFC 7617: the user-id ends at the first colon)', () => {
    expect(tokenFromAuthorization(basic('user:a:b:c'))).toBe('a:b:c');
  });

  it('takes the token from the user name when the password is empty or absent', () => {
    expect(tokenFromAuthorization(basic('s3cret:'))).toBe('s3cret');
    expect(tokenFromAuthorization(basic('s3cret'))).toBe('s3cret');
  });

  it('accepts any case of the scheme and extra whitespace', () => {
    const b64 = Buffer.from('u:tok').toString('base64');
    expect(tokenFromAuthorization(`basic ${b64}`)).toBe('tok');
    expect(tokenFromAuthorization(`BASIC   ${b64}  `)).toBe('tok');
  });

  it('decodes UTF-8', () => {
    expect(tokenFromAuthorization(basic('u:tökén'))).toBe('tökén');
  });

  it.each([
    ['no header', undefined],
    ['empty header', ''],
    ['scheme only', 'Basic'],
    ['scheme and space', 'Basic '],
    ['another scheme', 'Bearer abc'],
    ['token without scheme', Buffer.from('u:tok').toString('base64')],
    ['non-base64 characters', 'Basic !!!!'],
    ['url-safe base64 alphabet', 'Basic dTp0b2s-_w=='],
    ['two credentials', `Basic ${Buffer.from('u:tok').toString('base64')} extra`],
    ['empty user and password', basic(':')],
  ])('returns null for %s', (_name, header) => {
    expect(tokenFromAuthorization(header)).toBeNull();
  });
});

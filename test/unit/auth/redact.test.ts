import { describe, expect, it } from 'vitest';
import { redactor } from '../../../lib/auth/redact.js';
import { jsonLogger } from '../../../lib/log.js';

const TOKEN = `nwl_0123456789abcdef_${'s3cr3t-_'.repeat(5)}abc`;

describe('redactor', () => {
  const redact = redactor(['configured-admin-secret']);

  it.each([
    [`token ${TOKEN} used`, 'token nwl_0123456789abcdef_[redacted] used'],
    ['generated nwl_Zm9vYmFyYmF6cXV4cXV1eA', 'generated nwl_[redacted]'],
    ['clone http://user:pa55word@host:8080/a/b.git', 'clone http://[redacted]@host:8080/a/b.git'],
    [`https://${TOKEN}@git.example/x`, 'https://[redacted]@git.example/x'],
    ['"url":"http://admin:x@127.0.0.1/a"', '"url":"http://[redacted]@127.0.0.1/a"'],
    ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic [redacted]'],
    ['authorization=bearer abc.def-ghi', 'authorization=bearer [redacted]'],
    ['the configured-admin-secret leaked', 'the [redacted] leaked'],
    ['/configured-admin-secret/info/refs', '/[redacted]/info/refs'],
  ])('scrubs %j', (input, output) => {
    expect(redact(input)).toBe(output);
  });

  it.each([
    'GET /team/app.git/info/refs 200',
    'token writer may not push to team/app',
    'see http://127.0.0.1:8080/a/b.git and mail a@b.c',
    'nwl_ prefix alone',
  ])('leaves %j alone', (input) => {
    expect(redact(input)).toBe(input);
  });

  /** Every character as %XX, as a client may send any byte of a path. */
  const encodeAll = (text: string) =>
    [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

  it.each([
    ['one letter encoded', `/%6E${TOKEN.slice(1)}/info/refs`],
    ['the separators encoded', `/${TOKEN.replaceAll('_', '%5F')}/info/refs`],
    ['every byte encoded', `/${encodeAll(TOKEN)}/info/refs`],
    ['every byte encoded, lower and upper case', `/${encodeAll(TOKEN).replace(/%6e/g, '%6E')}`],
    ['encoded twice', `/${encodeAll(TOKEN).replaceAll('%', '%25')}/x`],
    ['a configured secret encoded', `/team/${encodeAll('configured-admin-secret')}.git/info/refs`],
    ['a configured secret partly encoded', '/team/config%75red-admin-secret.git'],
  ])('scrubs a secret percent-encoded in a path (%s)', (_what, input) => {
    const out = redact(input);
    let decoded = out;
    for (let i = 0; i < 3; i++) decoded = decodeURIComponent(decoded.replace(/%(?![0-9a-fA-F]{2})/g, '%25'));
    expect(decoded).not.toContain('s3cr3t');
    expect(decoded).not.toContain('configured-admin-secret');
    expect(decoded).toContain('[redacted]');
  });

  it('leaves percent-encoded text without a secret as it was', () => {
    for (const input of ['/team/a%20b.git', '%zz%4', '/%2e%2e/x', 'caf%C3%A9 %E2%80%AE']) {
      expect(redact(input)).toBe(input);
    }
  });

  it('ignores configured secrets too short to be told from text', () => {
    expect(redactor(['a', undefined])('a banana')).toBe('a banana');
  });
});

describe('jsonLogger', () => {
  it('writes no credential, whatever field carries it', () => {
    const lines: string[] = [];
    const logger = jsonLogger({ write: (line) => lines.push(line), secrets: ['configured-admin-secret'] });
    logger.info('request', {
      headers: { authorization: 'Basic dXNlcjpwYXNz', Cookie: 'session=1', 'user-agent': 'git/2.39' },
      url: `http://x:${TOKEN}@host/a.git`,
      path: `/${TOKEN}/info/refs`,
      note: 'configured-admin-secret',
    });
    logger.error('unexpected error', { error: new Error(`failed with ${TOKEN}`).stack });
    const text = lines.join('');
    expect(text).not.toMatch(/dXNlcjpwYXNz|session=1|s3cr3t|configured-admin-secret/);
    const first = JSON.parse(lines[0] ?? '{}');
    expect(first.headers).toEqual({
      authorization: '[redacted]',
      Cookie: '[redacted]',
      'user-agent': 'git/2.39',
    });
    expect(first.path).toBe('/nwl_0123456789abcdef_[redacted]/info/refs');
    expect(lines).toHaveLength(2);
  });

  it('writes valid JSON without the secret when an encoded path holds quotes and a token', () => {
    const lines: string[] = [];
    const logger = jsonLogger({ write: (line) => lines.push(line) });
    const path = `/%22${TOKEN.replaceAll('_', '%5f')}%22%5C/info/refs`;
    logger.info('request', { path });
    const logged = JSON.parse(lines[0] ?? '{}') as { path: string };
    expect(decodeURIComponent(logged.path)).toBe('/"nwl_0123456789abcdef_[redacted]"\\/info/refs');
    expect(lines.join('')).not.toContain('s3cr3t');
  });
});

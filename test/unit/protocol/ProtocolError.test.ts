import { describe, expect, it } from 'vitest';
import { ProtocolError, printable } from '../../../lib/protocol/ProtocolError.js';

describe('ProtocolError', () => {
  it('has a stable code and name and keeps its cause', () => {
    const cause = new Error('inner');
    const error = new ProtocolError('malformed pkt-line', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('ProtocolError');
    expect(error.name).toBe('ProtocolError');
    expect(error.message).toBe('malformed pkt-line');
    expect(error.cause).toBe(cause);
  });
});

describe('printable', () => {
  it('escapes everything but plain printable ASCII', () => {
    expect(printable('zzzz')).toBe('zzzz');
    expect(printable(Buffer.from('a\x00\n\x1b[31m\x7f'))).toBe('a\\x00\\x0a\\x1b[31m\\x7f');
    expect(printable("it's \\")).toBe('it\\x27s \\x5c');
    expect(printable('é')).toBe('\\xc3\\xa9');
  });

  it('cuts long input', () => {
    expect(printable('x'.repeat(100), 4)).toBe('xxxx...');
  });
});

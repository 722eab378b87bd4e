/**
 * The peer broke the git wire protocol (a malformed pkt-line, a command line that is not
 * `<old> <new> <ref>`, a request cut short). The message is written for the git user who will
 * see it in `git push` output: it names what was wrong and quotes the offending bytes safely.
 */
export class ProtocolError extends Error {
  readonly code = 'ProtocolError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProtocolError';
  }
}

/**
 * Bytes from the wire, made safe to print inside a message: printable ASCII as is, everything
 * else (control characters, quotes, non-ASCII) as `\xNN`, cut at `max` bytes.
 */
export function printable(bytes: Buffer | string, max = 64): string {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  let out = '';
  for (const byte of buf.subarray(0, max)) {
    const isPlain = byte >= 0x20 && byte < 0x7f && byte !== 0x27 && byte !== 0x5c;
    out += isPlain ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return buf.length > max ? `${out}...` : out;
}

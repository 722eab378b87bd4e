import { describe, expect, it } from 'vitest';
import { parsePushReport } from '../../chaos/pushOutput.js';

const A = 'refs/heads/a';
const B = 'refs/heads/b';

describe('parsePushReport', () => {
  it('reads ok and refused refs from porcelain output', () => {
    const stdout = [
      'To http://127.0.0.1:1/r.git',
      `*\t1111111111111111111111111111111111111111:${A}\t[new branch]`,
      `!\t2222222222222222222222222222222222222222:${B}\t[remote rejected] (fetch first)`,
      'Done',
    ].join('\n');
    const report = parsePushReport([A, B], { code: 1, stdout, stderr: '' });
    expect(report.get(A)).toEqual({ outcome: 'ok' });
    expect(report.get(B)).toEqual({ outcome: 'ng', reason: 'fetch first' });
  });

  it('takes deletions, forced updates and fast-forwards as ok', () => {
    const stdout = [`-\t:${A}\t[deleted]`, `+\tx:${B}\t1234567...89abcde (forced update)`].join('\n');
    const report = parsePushReport([A, B], { code: 0, stdout, stderr: '' });
    expect([...report.values()].map((r) => r.outcome)).toEqual(['ok', 'ok']);
  });

  it("takes narwal's unknown-outcome refusal as unknown", () => {
    const stdout = `!\tx:${A}\t[remote rejected] (narwal: storage failed while recording the push and its outcome is unknown; fetch to see whether it landed)`;
    expect(parsePushReport([A], { code: 1, stdout, stderr: '' }).get(A)?.outcome).toBe('unknown');
  });

  it('tells a push that never got through from one whose connection broke', () => {
    const refused =
      "fatal: unable to access 'http://127.0.0.1:9/r.git/': Failed to connect to 127.0.0.1 port 9: Connection refused";
    expect(parsePushReport([A], { code: 128, stdout: '', stderr: refused }).get(A)?.outcome).toBe('error');
    const broken =
      'error: RPC failed; curl 52 Empty reply from server\nfatal: the remote end hung up unexpectedly';
    expect(parsePushReport([A], { code: 1, stdout: '', stderr: broken }).get(A)?.outcome).toBe('unknown');
    const post503 = 'error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503';
    expect(parsePushReport([A], { code: 1, stdout: '', stderr: post503 }).get(A)?.outcome).toBe('unknown');
    expect(
      parsePushReport([A], { code: null, stdout: '', stderr: refused, timedOut: true }).get(A)?.outcome,
    ).toBe('unknown');
  });
});

import { describe, expect, it } from 'vitest';
import { linesBeforePack } from '../../../lib/protocol/shallowInfo.js';

const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
const bytes = (...parts: string[]) => Buffer.from(parts.join(''), 'latin1');
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const PACK = '\x01PACK\x00\x00\x00\x02';

describe('linesBeforePack', () => {
  it('finds the shallow-info section of a v2 answer, as git wrote it', () => {
    const lines = `${pkt('shallow-info\n')}${pkt(`shallow ${A}`)}${pkt(`unshallow ${B}`)}0001`;
    const answer = bytes(lines, pkt('packfile\n'), pkt(PACK));
    expect(linesBeforePack(answer, 'v2')).toEqual({ kind: 'lines', bytes: bytes(lines) });
    // An empty section (a depth beyond the history) is kept too; none at all is nothing to keep.
    expect(linesBeforePack(bytes(pkt('shallow-info\n'), '0001', pkt('packfile\n')), 'v2')).toEqual({
      kind: 'lines',
      bytes: bytes(pkt('shallow-info\n'), '0001'),
    });
    expect(linesBeforePack(bytes(pkt('packfile\n'), pkt(PACK)), 'v2')).toEqual({
      kind: 'lines',
      bytes: Buffer.alloc(0),
    });
  });

  it('finds the shallow lines and their flush-pkt before a v0 NAK', () => {
    const lines = `${pkt(`shallow ${A}`)}0000`;
    expect(linesBeforePack(bytes(lines, pkt('NAK\n'), pkt(PACK)), 'v0')).toEqual({
      kind: 'lines',
      bytes: bytes(lines),
    });
    expect(linesBeforePack(bytes(pkt('NAK\n')), 'v0')).toEqual({ kind: 'lines', bytes: Buffer.alloc(0) });
  });

  it('asks for more until the pack header has come, wherever the answer was split', () => {
    const answer = bytes(pkt('shallow-info\n'), pkt(`shallow ${A}`), '0001', pkt('packfile\n'));
    for (let end = 0; end < answer.length; end++) {
      expect(linesBeforePack(answer.subarray(0, end), 'v2'), `at ${end}`).toEqual({ kind: 'more' });
    }
  });

  it('keeps nothing of an answer that is not a plain repeatable one', () => {
    for (const [answer, version] of [
      [bytes(pkt('ERR upload-pack: not our ref x\n')), 'v2'],
      [bytes(pkt('acknowledgments\n'), pkt('NAK\n'), '0001', pkt('packfile\n')), 'v2'],
      [bytes(pkt('shallow-info\n'), pkt('shallow nothex'), '0001', pkt('packfile\n')), 'v2'],
      [bytes(pkt('shallow-info\n'), pkt(`shallow ${A}`), pkt('packfile\n')), 'v2'],
      [bytes(pkt('\x01shallow-info\n')), 'v2'],
      [bytes(pkt(`shallow ${A}`), pkt('NAK\n')), 'v0'],
      [bytes(pkt(`ACK ${A}\n`)), 'v0'],
      [bytes('zzzz'), 'v0'],
    ] as const) {
      expect(linesBeforePack(answer, version), answer.toString('latin1')).toEqual({ kind: 'other' });
    }
  });
});

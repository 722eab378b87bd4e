/**
 * The report of a push refused before git read it: report-status lines (`unpack`, one `ng` per
 * command, a flush-pkt), in band 1 when the client takes side-band-64k, and the reason on band 2
 * for a client that asked for no report.
 */
import { describe, expect, it } from 'vitest';
import { type PktLine, parsePktLines } from '../../../lib/protocol/pktLine.js';
import { pushRefusalReport } from '../../../lib/protocol/pushRefusalReport.js';

const commands = [
  { oldOid: '0'.repeat(40), newOid: 'a'.repeat(40), ref: 'refs/heads/main' },
  { oldOid: 'b'.repeat(40), newOid: 'c'.repeat(40), ref: 'refs/tags/v1' },
];
const REASON = 'narwal: storage busy or unavailable, the push was not recorded; retry the push';

const text = (lines: PktLine[]) => lines.map((l) => (l.kind === 'data' ? l.payload.toString() : l.kind));

describe('pushRefusalReport', () => {
  for (const capability of ['report-status', 'report-status-v2']) {
    it(`refuses every command with the reason (${capability}, no sideband)`, () => {
      const answer = pushRefusalReport({ commands, capabilities: [capability, 'quiet'] }, REASON);
      expect(text(parsePktLines(answer))).toEqual([
        `unpack ${REASON}\n`,
        `ng refs/heads/main ${REASON}\n`,
        `ng refs/tags/v1 ${REASON}\n`,
        'flush',
      ]);
    });
  }

  it('sends the report in band 1, closed by a flush-pkt, with side-band-64k', () => {
    const answer = pushRefusalReport({ commands, capabilities: ['report-status', 'side-band-64k'] }, REASON);
    const packets = parsePktLines(answer);
    expect(packets.at(-1)).toEqual({ kind: 'flush' });
    const band1 = packets.slice(0, -1).map((p) => {
      if (p.kind !== 'data') throw new Error('a data packet was expected');
      expect(p.payload[0]).toBe(1);
      return p.payload.subarray(1);
    });
    expect(text(parsePktLines(Buffer.concat(band1)))).toEqual([
      `unpack ${REASON}\n`,
      `ng refs/heads/main ${REASON}\n`,
      `ng refs/tags/v1 ${REASON}\n`,
      'flush',
    ]);
  });

  it('keeps the reason on one line', () => {
    const answer = pushRefusalReport(
      { commands: commands.slice(0, 1), capabilities: ['report-status'] },
      'a\nb  c',
    );
    expect(text(parsePktLines(answer))).toEqual(['unpack a b c\n', 'ng refs/heads/main a b c\n', 'flush']);
  });

  it('says the reason on band 2 to a client that asked for no report, and nothing without sidebands', () => {
    const answer = pushRefusalReport({ commands, capabilities: ['side-band-64k'] }, REASON);
    const packets = parsePktLines(answer);
    expect(packets.map((p) => (p.kind === 'data' ? p.payload.toString('latin1') : p.kind))).toEqual([
      `\u0002${REASON}\n`,
      'flush',
    ]);
    expect(pushRefusalReport({ commands, capabilities: [] }, REASON)).toEqual(Buffer.alloc(0));
  });
});

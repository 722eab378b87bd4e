import { describe, expect, it } from 'vitest';
import { fullCloneOf } from '../../../lib/protocol/fullClone.js';

const A = '1baf81a32dc8367c5d58cd6e3b6fc7e635852967';
const B = '546a337f64d9df125defe8cf17c0ad443e28dfda';

const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
const body = (...parts: string[]) => Buffer.from(parts.join(''), 'latin1');

/** `git clone --bare` over protocol v2 (git 2.39.5): the fetch request, line for line. */
function v2Clone(args: string[] = ['thin-pack\n', 'no-progress\n', 'ofs-delta\n']): Buffer {
  const wants = [`want ${A}\n`, `want ${B}\n`];
  return body(
    pkt('command=fetch\n'),
    pkt('agent=git/2.39.5\n'),
    pkt('object-format=sha1\n'),
    '0001',
    ...[...args, ...wants, 'done\n'].map(pkt),
    '0000',
  );
}

/** `git clone --bare` over protocol v0 (git 2.39.5). */
function v0Clone(
  capabilities = 'multi_ack_detailed side-band-64k thin-pack no-progress ofs-delta deepen-since deepen-not agent=git/2.39.5',
  extra: string[] = [],
): Buffer {
  return body(
    pkt(`want ${A} ${capabilities}\n`),
    pkt(`want ${B}\n`),
    ...extra.map(pkt),
    '0000',
    pkt('done\n'),
  );
}

describe('fullCloneOf', () => {
  it('recognises git clone over v2 and v0, which ask for the same pack', () => {
    const v2 = fullCloneOf(v2Clone(), true);
    const v0 = fullCloneOf(v0Clone(), false);
    expect(v2).toEqual({
      key: expect.stringMatching(/^[0-9a-f]{64}$/),
      preamble: 'packfile\n',
      sidebandData: 65515,
    });
    expect(v0).toEqual({ key: v2?.key, preamble: 'NAK\n', sidebandData: 65515 });
  });

  it('keys by the wanted set and the options that change the pack, not by order or progress', () => {
    const key = fullCloneOf(v2Clone(), true)?.key;
    const reordered = body(
      pkt('command=fetch\n'),
      '0001',
      ...['ofs-delta\n', `want ${B}\n`, `want ${A}\n`, `want ${A}\n`, 'done\n'].map(pkt),
      '0000',
    );
    expect(fullCloneOf(reordered, true)?.key).toBe(key);
    expect(fullCloneOf(v2Clone(['ofs-delta\n']), true)?.key).toBe(key);
    expect(fullCloneOf(v2Clone(['thin-pack\n']), true)?.key).not.toBe(key);
    expect(fullCloneOf(v2Clone(['ofs-delta\n', 'include-tag\n']), true)?.key).not.toBe(key);
    const one = body(
      pkt('command=fetch\n'),
      '0001',
      pkt('ofs-delta\n'),
      pkt(`want ${A}\n`),
      pkt('done\n'),
      '0000',
    );
    expect(fullCloneOf(one, true)?.key).not.toBe(key);
  });

  it('frames for the sideband the v0 client asked for', () => {
    const small = fullCloneOf(v0Clone('multi_ack side-band ofs-delta'), false);
    expect(small?.sidebandData).toBe(995);
    expect(fullCloneOf(v0Clone('multi_ack ofs-delta'), false)).toBeNull();
  });

  it('leaves every other v2 request to git', () => {
    const others = [
      ['have', `have ${B}\n`],
      ['shallow', `shallow ${B}\n`],
      ['deepen', 'deepen 1\n'],
      ['deepen-since', 'deepen-since 1700000000\n'],
      ['filter', 'filter blob:none\n'],
      ['want-ref', 'want-ref refs/heads/main\n'],
      ['sideband-all', 'sideband-all\n'],
      ['packfile-uris', 'packfile-uris https\n'],
      ['an argument it does not know', 'wait-for-done\n'],
    ];
    for (const [what, line] of others) {
      expect(fullCloneOf(v2Clone(['ofs-delta\n', line as string]), true), what).toBeNull();
    }
    const noDone = body(pkt('command=fetch\n'), '0001', pkt(`want ${A}\n`), '0000');
    const lsRefs = body(pkt('command=ls-refs\n'), '0001', pkt('peel\n'), '0000');
    const sha256 = body(
      pkt('command=fetch\n'),
      pkt('object-format=sha256\n'),
      '0001',
      pkt(`want ${A}\n`),
      pkt('done\n'),
      '0000',
    );
    const shortOid = body(pkt('command=fetch\n'), '0001', pkt(`want ${A.slice(1)}\n`), pkt('done\n'), '0000');
    const noWants = body(pkt('command=fetch\n'), '0001', pkt('done\n'), '0000');
    const noDelim = body(pkt('command=fetch\n'), pkt(`want ${A}\n`), pkt('done\n'), '0000');
    for (const request of [noDone, lsRefs, sha256, shortOid, noWants, noDelim]) {
      expect(fullCloneOf(request, true)).toBeNull();
    }
  });

  it('leaves every other v0 request to git', () => {
    expect(fullCloneOf(v0Clone(undefined, [`have ${B}\n`]), false)).toBeNull();
    expect(fullCloneOf(v0Clone(undefined, [`shallow ${B}\n`]), false)).toBeNull();
    expect(fullCloneOf(v0Clone(undefined, ['deepen 1\n']), false)).toBeNull();
    expect(fullCloneOf(v0Clone(undefined, ['filter blob:none\n']), false)).toBeNull();
    expect(fullCloneOf(v0Clone('side-band-64k object-format=sha256'), false)).toBeNull();
    expect(fullCloneOf(v0Clone('side-band-64k some-new-capability'), false)).toBeNull();
    // Negotiation rounds: haves without done, or wants without done.
    expect(fullCloneOf(body(pkt(`want ${A} side-band-64k\n`), '0000'), false)).toBeNull();
    expect(
      fullCloneOf(body(pkt(`want ${A} side-band-64k\n`), '0000', pkt(`have ${B}\n`), pkt('done\n')), false),
    ).toBeNull();
  });

  it('leaves malformed bodies to git', () => {
    const whole = v2Clone();
    for (const request of [whole.subarray(0, whole.length - 2), body('zzzz'), body(''), body('0002')]) {
      expect(fullCloneOf(request, true)).toBeNull();
      expect(fullCloneOf(request, false)).toBeNull();
    }
  });
});

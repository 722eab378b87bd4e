/**
 * Requests as git 2.39.5 sends them (observed over HTTP): which are repeatable fetches, and which
 * share an answer.
 */
import { describe, expect, it } from 'vitest';
import { repeatableFetchOf } from '../../../lib/protocol/repeatableFetch.js';

const A = '1baf81a32dc8367c5d58cd6e3b6fc7e635852967';
const B = '546a337f64d9df125defe8cf17c0ad443e28dfda';

const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
const body = (...parts: string[]) => Buffer.from(parts.join(''), 'latin1');

function v2(args: string[], agent = 'git/2.39.5'): Buffer {
  return body(
    pkt('command=fetch'),
    pkt(`agent=${agent}`),
    pkt('object-format=sha1'),
    '0001',
    ...args.map(pkt),
    '0000',
  );
}

/** actions/checkout: `git -c protocol.version=2 fetch --no-tags --prune --progress --depth=1 origin +<sha>:...`. */
const checkout = (sha = A, depth = 1, agent?: string) =>
  v2(['thin-pack', 'ofs-delta', `deepen ${depth}`, `want ${sha}\n`, 'done\n'], agent);

describe('repeatableFetchOf', () => {
  it('recognises the actions/checkout fetch, shallow, keyed by what it asks for and not by the agent', () => {
    const fetch = repeatableFetchOf(checkout(), true);
    expect(fetch).toEqual({
      key: expect.stringMatching(/^[0-9a-f]{64}$/),
      version: 'v2',
      sidebandData: 65515,
      shallow: true,
      full: false,
      uriProtocols: [],
      wants: [A],
      ofsDelta: true,
      includeTag: false,
    });
    expect(repeatableFetchOf(checkout(A, 1, 'git/2.47.0'), true)?.key).toBe(fetch?.key);
    expect(repeatableFetchOf(checkout(A, 2), true)?.key).not.toBe(fetch?.key);
    expect(repeatableFetchOf(checkout(B), true)?.key).not.toBe(fetch?.key);
    // no-progress changes only band 2.
    const quiet = v2(['thin-pack', 'no-progress', 'ofs-delta', 'deepen 1', `want ${A}\n`, 'done\n']);
    expect(repeatableFetchOf(quiet, true)?.key).toBe(fetch?.key);
  });

  it('keeps the order of wants (git walks them so) but counts a repeated one once', () => {
    const ab = repeatableFetchOf(v2(['ofs-delta', 'deepen 1', `want ${A}\n`, `want ${B}\n`, 'done\n']), true);
    const ba = repeatableFetchOf(v2(['ofs-delta', 'deepen 1', `want ${B}\n`, `want ${A}\n`, 'done\n']), true);
    const aba = repeatableFetchOf(
      v2(['ofs-delta', 'deepen 1', `want ${A}\n`, `want ${B}\n`, `want ${A}\n`, 'done\n']),
      true,
    );
    expect(ab?.key).not.toBe(ba?.key);
    expect(aba?.key).toBe(ab?.key);
  });

  it('recognises a partial clone, apart from the full clone of the same wants', () => {
    const filtered = repeatableFetchOf(
      v2([
        'thin-pack',
        'no-progress',
        'ofs-delta',
        'filter blob:none',
        `want ${A}\n`,
        `want ${A}\n`,
        'done\n',
      ]),
      true,
    );
    expect(filtered).toMatchObject({ shallow: false, full: false });
    const clone = v2(['thin-pack', 'no-progress', 'ofs-delta', `want ${A}\n`, `want ${B}\n`, 'done\n']);
    expect(repeatableFetchOf(clone, true)).toMatchObject({ full: true, shallow: false });
    expect(filtered?.key).not.toBe(repeatableFetchOf(clone, true)?.key);
  });

  it('reads the client’s own shallow lines as a set, and the URI protocols it accepts', () => {
    const one = repeatableFetchOf(
      v2([
        'ofs-delta',
        `shallow ${A}`,
        `shallow ${B}`,
        'deepen 3',
        'deepen-relative',
        `want ${B}\n`,
        'done\n',
      ]),
      true,
    );
    const other = repeatableFetchOf(
      v2([
        'ofs-delta',
        `shallow ${B}`,
        `shallow ${A}`,
        'deepen 3',
        'deepen-relative',
        `want ${B}\n`,
        'done\n',
      ]),
      true,
    );
    expect(one?.key).toBe(other?.key);
    const uris = repeatableFetchOf(
      v2(['thin-pack', 'ofs-delta', 'packfile-uris http,https', `want ${A}\n`, 'done\n']),
      true,
    );
    expect(uris).toMatchObject({ full: true, uriProtocols: ['http', 'https'] });
  });

  it('gives a full clone over v0 the key of the same clone over v2, framed for the sideband asked for', () => {
    const caps = 'multi_ack_detailed side-band-64k thin-pack no-progress ofs-delta agent=git/2.39.5';
    const v0Clone = (capabilities: string, extra: string[] = []) =>
      body(pkt(`want ${A} ${capabilities}\n`), pkt(`want ${B}\n`), ...extra.map(pkt), '0000', pkt('done\n'));
    const v2Clone = v2(['thin-pack', 'no-progress', 'ofs-delta', `want ${A}\n`, `want ${B}\n`, 'done\n']);
    const key = repeatableFetchOf(v2Clone, true)?.key;
    expect(repeatableFetchOf(v0Clone(caps), false)).toMatchObject({ version: 'v0', full: true, key });
    expect(repeatableFetchOf(v0Clone('multi_ack side-band thin-pack ofs-delta'), false)?.sidebandData).toBe(
      995,
    );
    expect(repeatableFetchOf(v0Clone('multi_ack thin-pack ofs-delta'), false)).toBeNull();
    expect(repeatableFetchOf(v0Clone(caps, [`have ${B}\n`]), false)).toBeNull();
    expect(repeatableFetchOf(v0Clone('side-band-64k object-format=sha256'), false)).toBeNull();
    expect(repeatableFetchOf(v0Clone('side-band-64k some-new-capability'), false)).toBeNull();
    const withArgs = (args: string[]) => v2([...args, `want ${A}\n`, `want ${B}\n`, 'done\n']);
    expect(repeatableFetchOf(withArgs(['ofs-delta']), true)?.key).toBe(key);
    expect(repeatableFetchOf(withArgs(['thin-pack', 'ofs-delta']), true)?.key).toBe(key);
    expect(repeatableFetchOf(withArgs(['ofs-delta', 'include-tag']), true)?.key).not.toBe(key);
    expect(repeatableFetchOf(withArgs(['ofs-delta', 'include-tag']), true)?.includeTag).toBe(true);
    expect(repeatableFetchOf(withArgs(['ofs-delta']), true)?.includeTag).toBe(false);
    expect(repeatableFetchOf(withArgs(['no-progress']), true)?.key).not.toBe(key);
  });

  it('recognises the second request of a v0 shallow fetch (with done), not the first', () => {
    const caps =
      'multi_ack_detailed no-done side-band-64k thin-pack no-progress ofs-delta deepen-since deepen-not agent=git/2.39.5';
    const first = body(pkt(`want ${A} ${caps}\n`), pkt('deepen 1'), '0000');
    const second = body(pkt(`want ${A} ${caps}\n`), pkt('deepen 1'), '0000', pkt('done\n'));
    expect(repeatableFetchOf(first, false)).toBeNull();
    expect(repeatableFetchOf(second, false)).toMatchObject({
      version: 'v0',
      shallow: true,
      sidebandData: 65515,
    });
  });

  it('leaves to git whatever depends on the client or is not known here', () => {
    const cases = [
      v2(['ofs-delta', `want ${A}\n`, `have ${B}\n`, 'done\n']),
      v2(['ofs-delta', `want ${A}\n`]),
      v2(['sideband-all', `want ${A}\n`, 'done\n']),
      v2(['want-ref refs/heads/main', 'done\n']),
      v2(['deepen 1', 'deepen-since 1700000000', `want ${A}\n`, 'done\n']),
      v2(['deepen 0', `want ${A}\n`, 'done\n']),
      v2(['packfile-uris https', 'packfile-uris http', `want ${A}\n`, 'done\n']),
      v2(['filter blob:none', 'filter tree:0', `want ${A}\n`, 'done\n']),
      v2(['done\n']),
      body(pkt('command=ls-refs'), '0001', '0000'),
    ];
    for (const request of cases) expect(repeatableFetchOf(request, true)).toBeNull();
  });
});

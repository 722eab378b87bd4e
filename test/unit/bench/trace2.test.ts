import { describe, expect, it } from 'vitest';
import { isoMicros, parseTrace2 } from '../../../bench/trace2.js';

const sid = 'sid';
const line = (event: Record<string, unknown>) => JSON.stringify({ sid, thread: 'main', ...event });

describe('trace2 event files', () => {
  it('reads microsecond times', () => {
    expect(isoMicros('2026-12-03T07:39:34.604335Z')).toBeCloseTo(
      Date.parse('2026-12-03T07:39:34.604Z') + 0.335,
      6,
    );
    expect(isoMicros('nonsense')).toBeNaN();
  });

  it('turns a process and its hooks into spans', () => {
    const text = [
      line({ event: 'version', time: '2026-12-03T07:00:00.000100Z' }),
      line({
        event: 'start',
        time: '2026-12-03T07:00:00.000200Z',
        argv: ['git', '-c', 'x=y', 'receive-pack', '.'],
      }),
      line({
        event: 'cmd_name',
        time: '2026-12-03T07:00:00.000300Z',
        name: 'receive-pack',
        hierarchy: 'receive-pack',
      }),
      line({
        event: 'child_start',
        time: '2026-12-03T07:00:00.010000Z',
        child_id: 1,
        child_class: 'hook',
        hook_name: 'proc-receive',
      }),
      line({ event: 'child_exit', time: '2026-12-03T07:00:00.040000Z', child_id: 1, t_rel: 0.03 }),
      line({ event: 'atexit', time: '2026-12-03T07:00:00.050000Z', t_abs: 0.05 }),
      '{"event":"trunc',
    ].join('\n');
    const spans = parseTrace2(text);
    expect(spans.map((s) => s.name)).toEqual(['hook:proc-receive', 'receive-pack']);
    expect(spans[0]?.ms).toBeCloseTo(30, 6);
    expect(spans[1]?.ms).toBeCloseTo(50, 6);
    expect(spans[1]?.start).toBeCloseTo(Date.parse('2026-12-03T07:00:00Z'), 3);
  });

  it('names a process by its subcommand when git names none, and drops the dashed wrapper', () => {
    const plain = [
      line({
        event: 'start',
        time: '2026-12-03T07:00:00.000000Z',
        argv: ['/usr/lib/git-core/git-http-backend'],
      }),
      line({ event: 'atexit', time: '2026-12-03T07:00:00.020000Z', t_abs: 0.02 }),
    ].join('\n');
    expect(parseTrace2(plain).map((s) => s.name)).toEqual(['http-backend']);
    const wrapper = [
      line({ event: 'start', time: '2026-12-03T07:00:00.000000Z', argv: ['git', 'receive-pack', '.'] }),
      line({
        event: 'cmd_name',
        time: '2026-12-03T07:00:00.000100Z',
        name: '_run_dashed_',
        hierarchy: '_run_dashed_',
      }),
      line({ event: 'atexit', time: '2026-12-03T07:00:00.020000Z', t_abs: 0.02 }),
    ].join('\n');
    expect(parseTrace2(wrapper)).toEqual([]);
    const child = [
      line({
        event: 'cmd_name',
        time: '2026-12-03T07:00:00.000100Z',
        name: 'rev-list',
        hierarchy: '_run_dashed_/receive-pack/rev-list',
      }),
      line({ event: 'atexit', time: '2026-12-03T07:00:00.020000Z', t_abs: 0.02 }),
    ].join('\n');
    expect(parseTrace2(child).map((s) => s.name)).toEqual(['receive-pack/rev-list']);
  });
});

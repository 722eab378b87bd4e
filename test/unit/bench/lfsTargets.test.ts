import { describe, expect, it } from 'vitest';
import type { LfsBenchResult } from '../../../bench/lfsTransfer.js';
import { evaluateTargets } from '../../../bench/targets.js';
import { benchResultsWith } from '../../helpers/benchResults.js';

const results = (lfs: LfsBenchResult) => benchResultsWith({ lfs });

const transfer = {
  bytes: 200 * 1024 * 1024,
  cpMs: [100, 120, 110],
  cpSyncMs: [400],
  hashMs: [95, 90, 100],
  curlMs: [140],
  uploadMs: [130, 140, 125],
  downloadMs: [200, 210, 190],
  floorUploadMs: [300],
  floorDownloadMs: [150],
};
const batch = {
  objects: 1000,
  latencyMs: 30,
  downloadMs: [600],
  uploadPresentMs: [500],
  uploadMissingMs: [900],
};

describe('the Git LFS targets', () => {
  it('compares the median upload and download with cp, and the slowest batch median with 1 s', () => {
    const rows = evaluateTargets(results({ transfer, batch }));
    expect(rows.map((r) => [r.target, r.server, r.pass])).toEqual([
      ['Git LFS upload of a 200 MB object, embedded store, against cp', 'narwal', true],
      ['Git LFS download of a 200 MB object, embedded store, against cp', 'narwal', false],
      ['Git LFS batch call for 1,000 objects', 'narwal-30ms', true],
    ]);
    // cp 110 ms against 130 ms: 0.85x; against 200 ms: 0.55x.
    expect(rows[0]?.measured).toBe(
      '0.85x (130 ms; cp 110 ms, cp and fsync 400 ms, SHA-256 alone 95 ms, curl alone 140 ms, bare node:http 300 ms)',
    );
    expect(rows[1]?.miss).toBe('45% too slow');
    const slow = evaluateTargets(results({ transfer, batch: { ...batch, uploadMissingMs: [1200] } }));
    expect(slow[2]).toMatchObject({ pass: false, miss: '200 ms over' });
  });
});

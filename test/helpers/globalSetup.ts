/**
 * One temporary directory for the whole run: every `mkdtemp(tmpdir())` of a test, and of the
 * processes tests start (narwal nodes, git, the store and presence stand-ins), lands in it through
 * TMPDIR, which the test processes inherit, and it is removed when the run ends, whatever a test
 * left behind. Tests clean up after themselves where they can, but client homes and working
 * repositories are made in helpers, and a test that fails or times out skips its own clean-up:
 * before this, each run left a few hundred directories in the machine's /tmp.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const outer = process.env.TMPDIR;
  const run = mkdtempSync(join(tmpdir(), 'narwal-test-run-'));
  process.env.TMPDIR = run;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    rmSync(run, { recursive: true, force: true, maxRetries: 5 });
  };
}

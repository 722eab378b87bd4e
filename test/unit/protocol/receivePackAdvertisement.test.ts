/**
 * narwal writes receive-pack's advertisement itself; it must be the very bytes the machine's git
 * sends for the same refs with narwal's receive-pack configuration.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { receivePackAdvertisement } from '../../../lib/protocol/receivePackAdvertisement.js';
import type { RefValue } from '../../../lib/protocol/refValue.js';
import { expressBundle } from '../../helpers/clientRepos.js';
import { git, gitOk, makeHome } from '../../helpers/gitClient.js';

let home: string;
let agent: string;

beforeAll(async () => {
  home = await makeHome();
  agent = `git/${(await gitOk(['--version'], { home })).trim().split(' ').pop()}`;
});

async function gitAdvertisement(dir: string, protocol?: string): Promise<string> {
  const out = await git(
    ['-c', 'receive.advertisePushOptions=true', 'receive-pack', '--stateless-rpc', '--advertise-refs', dir],
    { home, ...(protocol ? { env: { GIT_PROTOCOL: protocol } } : {}) },
  );
  if (out.code !== 0) throw new Error(out.stderr);
  return out.stdout;
}

async function refsOf(dir: string): Promise<Map<string, RefValue>> {
  const out = await gitOk(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: dir, home });
  const refs = new Map<string, RefValue>();
  for (const line of out.split('\n').filter(Boolean)) {
    const [oid, name] = line.split(' ');
    if (oid && name) refs.set(name, { oid });
  }
  return refs;
}

describe('receivePackAdvertisement', () => {
  it('matches git for a real history with branches and annotated tags, in v0, v1 and on a v2 request', async () => {
    const dir = join(await mkdtemp(join(tmpdir(), 'narwal-adv-')), 'express.git');
    await gitOk(['clone', '-q', '--mirror', expressBundle(), dir], { home });
    // Names that sort differently by bytes than by locale or by UTF-16.
    const tip = (await gitOk(['rev-parse', 'refs/heads/master'], { cwd: dir, home })).trim();
    for (const name of ['refs/heads/Zeta', 'refs/heads/é-accent', 'refs/heads/a-b', 'refs/heads/a/b'])
      await gitOk(['update-ref', name, tip], { cwd: dir, home });
    // A shuffled map: the order must come from the encoder.
    const refs = new Map([...(await refsOf(dir))].reverse());
    expect(refs.size).toBeGreaterThan(300);
    const ours = (v1: boolean) => receivePackAdvertisement(refs, { agent, v1 }).toString('latin1');
    const theirs = async (protocol?: string) =>
      Buffer.from(await gitAdvertisement(dir, protocol)).toString('latin1');
    expect(ours(false)).toBe(await theirs());
    expect(ours(true)).toBe(await theirs('version=1'));
    expect(ours(false)).toBe(await theirs('version=2'));
  });

  it('matches git for a repository with no refs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'narwal-adv-empty-'));
    await gitOk(['init', '-q', '--bare', dir], { home });
    expect(receivePackAdvertisement(new Map(), { agent, v1: false }).toString()).toBe(
      await gitAdvertisement(dir),
    );
    expect(receivePackAdvertisement(new Map(), { agent, v1: true }).toString()).toBe(
      await gitAdvertisement(dir, 'version=1'),
    );
  });
});

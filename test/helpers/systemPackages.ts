/**
 * The Debian packages the tests need, and the one place that installs them. A test helper names
 * what it needs (a requirement below) and calls ensureInstalled before it starts: on a fresh
 * machine running as root, `npm ci && npm test` installs each package the first time a test
 * needs it; as another user it fails with the command to run. Parallel test workers serialise on
 * one flock and check again under it, so only one of them runs apt-get. (.ci/run installs the
 * same packages up front, to keep the install out of the timed tests.)
 */
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SystemRequirement {
  /** What the tests need, for messages. */
  readonly name: string;
  /** Debian 12 packages that provide it. */
  readonly packages: readonly string[];
  /** A shell command that succeeds once it is there. */
  readonly check: string;
}

/** Ceph's RADOS Gateway, a monitor and an OSD, the S3 stand-in (rgw.ts). */
export const RGW: SystemRequirement = {
  name: 'Ceph RGW (radosgw, radosgw-admin, ceph-mon, ceph-osd, monmaptool, ceph)',
  packages: ['radosgw', 'ceph-mon', 'ceph-osd', 'uuid-runtime'],
  check: ['radosgw', 'radosgw-admin', 'ceph-mon', 'ceph-osd', 'monmaptool', 'ceph']
    .map((bin) => `command -v ${bin} >/dev/null`)
    .join(' && '),
};

/** Debian's Git LFS client (3.3), which the LFS tests drive (lfsClient.ts). */
export const GIT_LFS_CLIENT: SystemRequirement = {
  name: '/usr/bin/git-lfs',
  packages: ['git-lfs'],
  check: 'test -x /usr/bin/git-lfs',
};

/** chromium itself, and a font so that screenshots show text on a bare machine (chromium.ts). */
export const CHROMIUM: SystemRequirement = {
  name: '/usr/bin/chromium',
  packages: ['chromium', 'fonts-dejavu-core'],
  check: 'test -x /usr/bin/chromium',
};

/** The Python git clients of the client matrix, for Debian's python3 (pythonClients.ts). */
export const PYTHON_CLIENTS = {
  dulwich: {
    name: 'dulwich for /usr/bin/python3',
    packages: ['python3-dulwich'],
    check: "/usr/bin/python3 -c 'import dulwich' 2>/dev/null",
  },
  pygit2: {
    name: 'pygit2 for /usr/bin/python3',
    packages: ['python3-pygit2'],
    check: "/usr/bin/python3 -c 'import pygit2' 2>/dev/null",
  },
} as const satisfies Record<string, SystemRequirement>;

async function present(requirement: SystemRequirement): Promise<boolean> {
  try {
    await run('sh', ['-c', requirement.check]);
    return true;
  } catch {
    return false;
  }
}

/** Installs `requirement`'s packages unless it is met already (as root; apt-get update first). */
export async function ensureInstalled(requirement: SystemRequirement): Promise<void> {
  if (await present(requirement)) return;
  const packages = requirement.packages.join(' ');
  const command = `apt-get update && apt-get install -y --no-install-recommends ${packages}`;
  if (process.getuid?.() !== 0) {
    throw new Error(`${requirement.name} missing; install it as root with: ${command}`);
  }
  console.log(`[system packages] ${requirement.name} missing: installing ${packages} with apt-get`);
  const started = Date.now();
  const install = `${requirement.check} || { apt-get update -q && apt-get install -y -q --no-install-recommends ${packages}; }`;
  await run('flock', [join(tmpdir(), 'narwal-apt-install.lock'), 'sh', '-c', install], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!(await present(requirement)))
    throw new Error(`apt-get installed ${packages} but ${requirement.name} is still missing`);
  console.log(`[system packages] installed ${packages} in ${Math.round((Date.now() - started) / 1000)} s`);
}

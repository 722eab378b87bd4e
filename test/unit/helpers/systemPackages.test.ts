/**
 * The Debian packages the tests need are installed from one place (test/helpers/systemPackages.ts),
 * and .ci/run installs the same ones up front.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  ensureInstalled,
  GIT_LFS_CLIENT,
  PYTHON_CLIENTS,
  RGW,
} from '../../helpers/systemPackages.js';

const ROOT = resolve(import.meta.dirname, '../../..');
/** Spelled apart, so that this file does not count itself. */
const INSTALL = ['apt-get', 'install'].join(' ');

describe('system packages', () => {
  it('are installed by one helper only', async () => {
    const entries = await readdir(join(ROOT, 'test'), { recursive: true, withFileTypes: true });
    const installers: string[] = [];
    for (const e of entries.filter((e) => e.isFile() && /\.(ts|py)$/.test(e.name))) {
      const path = join(e.parentPath, e.name);
      if ((await readFile(path, 'utf8')).includes(INSTALL)) installers.push(relative(ROOT, path));
    }
    expect(installers).toEqual(['test/helpers/systemPackages.ts']);
  });

  it('are the ones .ci/run installs up front', async () => {
    const ci = await readFile(join(ROOT, '.ci/run'), 'utf8');
    for (const requirement of [RGW, CHROMIUM, GIT_LFS_CLIENT, PYTHON_CLIENTS.dulwich, PYTHON_CLIENTS.pygit2])
      for (const pkg of requirement.packages)
        expect(ci, `${pkg} in .ci/run`).toMatch(new RegExp(`\\b${pkg}\\b`));
  });

  it('install nothing when the requirement is met', async () => {
    await expect(
      ensureInstalled({ name: 'sh', packages: ['no-such-package'], check: 'command -v sh' }),
    ).resolves.toBeUndefined();
  });
});

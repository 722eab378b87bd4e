/**
 * Which narwal a run measures. By default the CLI `npm run build` just wrote from the working
 * tree; with a revision, that commit's tree is built on its own (git archive, then its
 * scripts/build.mjs with this project's node_modules), so a run can compare commits and is not
 * moved by edits made while it runs.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PROJECT_ROOT } from './fixtures.js';
import { DEFAULT_NARWAL_CLI } from './servers.js';

export interface NarwalBuild {
  readonly cli: string;
  /** The commit built, or the project's HEAD when the working tree was. */
  readonly commit: string;
  /** Whether lib/ or bin/ differed from that commit (working-tree builds only). */
  readonly localChanges: boolean;
}

export async function narwalBuild(options: { rev?: string; workDir: string }): Promise<NarwalBuild> {
  const git = (args: string[]) =>
    execFileSync('git', ['-C', PROJECT_ROOT, ...args], { encoding: 'utf8' }).trim();
  if (options.rev === undefined) {
    return {
      cli: DEFAULT_NARWAL_CLI,
      commit: git(['rev-parse', 'HEAD']),
      localChanges: git(['status', '--porcelain', '--', 'lib', 'bin']) !== '',
    };
  }
  const commit = git(['rev-parse', '--verify', `${options.rev}^{commit}`]);
  const src = join(options.workDir, `narwal-${commit.slice(0, 7)}`);
  await mkdir(src);
  const tar = execFileSync('git', ['-C', PROJECT_ROOT, 'archive', '--format=tar', commit], {
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', src], { input: tar });
  await symlink(join(PROJECT_ROOT, 'node_modules'), join(src, 'node_modules'));
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: src, stdio: 'inherit' });
  return { cli: join(src, 'dist', 'narwal.js'), commit, localChanges: false };
}

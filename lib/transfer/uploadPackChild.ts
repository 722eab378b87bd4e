import type { Generation } from '../cache/RepoCache.js';
import { type ChildExit, childExit } from '../git/childOutput.js';
import type { GitRunner } from '../git/GitRunner.js';
import type { GitChild } from '../git/ProcessSpawner.js';
import { gitProtocolEnv, uploadPackConfig } from '../git/uploadPack.js';

/** What starting upload-pack needs: git, and the pack cache hook when there is one. */
export interface UploadPackDeps {
  readonly git: Pick<GitRunner, 'spawn'>;
  /** The pack cache hook for upload-pack (git/packCacheHook.ts); null when turned off. */
  readonly packObjectsHook: string | null;
  /** Puts back hooks that have gone from the hooks directory; cheap when they are there. */
  readonly ensureHooks: () => Promise<void>;
}

export interface UploadPackOptions {
  /** The client's `Git-Protocol` header. */
  readonly protocol: string | undefined;
  /** Whom the git slot is counted against (see GitSpawnOptions.owner). */
  readonly owner: string;
  /** More environment: NARWAL_CLONE_KEY names a repeatable fetch's pack for the pack cache hook. */
  readonly env?: Record<string, string>;
  /** Told when upload-pack of a repeatable fetch starts, with its exit. */
  readonly packing?: (exit: Promise<unknown>) => void;
}

/** Starts upload-pack on a leased generation; the lease goes when git exits. */
export async function spawnUploadPack(
  deps: UploadPackDeps,
  generation: Generation,
  options: UploadPackOptions,
): Promise<{ child: GitChild; exit: Promise<ChildExit> }> {
  // upload-pack runs the pack cache hook, if there is one, for what it packs.
  if (deps.packObjectsHook !== null)
    await deps.ensureHooks().catch(async (error: unknown) => {
      await generation.release();
      throw error;
    });
  const child = await spawnReleasing(
    deps.git,
    generation,
    [...uploadPackConfig(deps.packObjectsHook), 'upload-pack', '--stateless-rpc', generation.dir],
    { env: { ...gitProtocolEnv(options.protocol), ...options.env }, owner: options.owner },
  );
  const exit = childExit(child);
  void exit.then(() => generation.release());
  return { child, exit };
}

/** Spawns git for a leased generation, giving the lease back if git cannot even start. */
export async function spawnReleasing(
  git: Pick<GitRunner, 'spawn'>,
  generation: Generation | null,
  args: string[],
  options: { env: Record<string, string>; owner: string },
): Promise<GitChild> {
  try {
    return await git.spawn(args, options);
  } catch (error) {
    await generation?.release();
    throw error;
  }
}

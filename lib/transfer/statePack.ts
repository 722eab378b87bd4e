/**
 * The stored packs of one repository state, as a `packfile-uris` link fetches them from narwal
 * itself (on the embedded store; on S3 the link is presigned and narwal is not asked): only a
 * pack the log names for that state is read, so a link can never reach another object of the
 * store, and a pack the log names is never deleted (docs/architecture.md invariant 2).
 */
import { Readable } from 'node:stream';
import { bundleHeader } from '../protocol/bundleUri.js';
import type { ObjectStore, ObjectStream } from '../store/ObjectStore.js';
import { packKey } from '../wal/keys.js';
import type { LoadedIndex } from '../wal/types.js';
import { PackNotInLog } from './errors.js';
import { type StateTargets, targetFor } from './targetFor.js';
import { statePacks } from './uriPlan.js';

export interface StatePackDeps {
  readonly cache: StateTargets;
  readonly store: Pick<ObjectStore, 'getStream'>;
}

/** The bytes of `pack` of the state after entry `seq`; throws PackNotInLog for any other name. */
export async function readStatePack(
  deps: StatePackDeps,
  loaded: LoadedIndex,
  seq: number,
  pack: string,
): Promise<ObjectStream> {
  const repo = loaded.index.repo;
  if (seq > loaded.index.seq) throw new PackNotInLog(repo, pack, seq);
  const target = await targetFor(deps.cache, loaded, seq === loaded.index.seq ? undefined : seq);
  if (!(await statePacks(target)).includes(pack)) throw new PackNotInLog(repo, pack, seq);
  return deps.store.getStream(packKey(repo, pack, 'pack'));
}

/**
 * `pack` of the state after entry `seq` as a bundle whose header names that state's refs. A link
 * to it is signed only once the pack was found to hold exactly what those refs reach
 * (answerBundleUri.ts), and a state never changes, so the refs are complete in it.
 */
export async function readStateBundle(
  deps: StatePackDeps,
  loaded: LoadedIndex,
  seq: number,
  pack: string,
): Promise<ObjectStream> {
  if (seq > loaded.index.seq) throw new PackNotInLog(loaded.index.repo, pack, seq);
  const target = await targetFor(deps.cache, loaded, seq === loaded.index.seq ? undefined : seq);
  const refs = [...(await target.refs())].map(([name, value]) => [name, value.oid] as const);
  const header = bundleHeader(refs.filter(([name]) => name.startsWith('refs/')));
  const stored = await readStatePack(deps, loaded, seq, pack);
  async function* bytes() {
    yield header;
    yield* stored.body;
  }
  const body = Readable.from(bytes(), { objectMode: false });
  body.once('close', () => stored.body.destroy());
  return { body, size: header.length + stored.size };
}

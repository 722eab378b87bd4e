/**
 * Which stored packs a full clone may fetch itself (protocol v2 `packfile-uris`,
 * answerWithPackUris.ts; the `bundle-uri` list, answerBundleUri.ts), and the inline pack of the
 * objects they lack.
 *
 * Which packs: those the state's log names (its newest checkpoint's, and the entries' after it)
 * that are in the cache's object store and whose objects the clone's wants all reach, so a clone
 * never receives an object a normal clone would not have (an object a force-push left behind is
 * kept by a checkpoint, but is never sent). The largest first, and at most MAX_URI_PACKS.
 *
 * What is inline: the reachable objects outside those packs, packed on their own (never thin: the
 * client indexes the inline pack before it downloads any URI, so a delta base must be in it).
 *
 * The plan and the inline pack are made once per generation and request (by the repeatable
 * fetch's key) and kept in the generation beside its cached clone packs; the next identical clone
 * reads two small files.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type CacheTarget, exists, type Generation } from '../cache/RepoCache.js';
import { childExit } from '../git/childOutput.js';
import { GitFailed, type GitRunner } from '../git/GitRunner.js';
import { ObjectList } from '../git/ObjectList.js';
import { PACK_CACHE_DIR } from '../git/packCacheHook.js';
import { distinctObjectCount, heldByOthers, type PackNames, readPackNames } from '../git/packIndex.js';
import type { RefValue } from '../protocol/refValue.js';

export interface PlanDeps {
  readonly git: Pick<GitRunner, 'spawn' | 'check' | 'checkScript'>;
}

/** Stored packs a clone may fetch itself, and how many objects the inline part holds. */
export interface UriPlan {
  readonly v: 2;
  readonly packs: readonly { readonly name: string; readonly hash: string }[];
  readonly inline: number;
}

/** What a plan is made for: objects the wants reach, kept under `key`. */
export interface UriRequest {
  readonly key: string;
  readonly wants: readonly string[];
  readonly ofsDelta: boolean;
  /**
   * For a client that asked for `include-tag`: the annotated tags it did not want (tagsToFollow),
   * each with the object it peels to. Those whose object the wants reach are sent too.
   */
  readonly followTags?: ReadonlyMap<string, string>;
}

const PLAN_SUFFIX = '.uris.json';
const INLINE_SUFFIX = '.uris.pack';
/** Marks a generation whose plans a client asked for. */
const ASKED = 'uris-asked';
/** At most this many URIs per answer: a checkpoint's pack and the largest pushes after it. */
const MAX_URI_PACKS = 8;
/** Where a pack's object count is: after `PACK` and the version (gitformat-pack(5)). */
const PACK_COUNT_AT = 8;

/** A stored pack of the state that the cache holds, with its index's object names. */
interface StoredPack {
  readonly name: string;
  readonly names: PackNames;
}

/**
 * The name a plan is kept under: its wants as a set. The plan is a function of the objects they
 * reach (the URI packs are offered only to clients that take `ofs-delta`, and the inline pack is
 * made for them), so a bare clone, a clone that asks for every ref in another order, and the
 * bundle list share one plan, and one can be made before anyone asks (plansAhead.ts).
 */
export function planKey(wants: readonly string[], followsTags = false): string {
  const set = [...new Set(wants)].sort();
  const hash = createHash('sha256').update(set.join('\n'));
  if (followsTags) hash.update('\ninclude-tag');
  return `clone-${hash.digest('hex')}`;
}

/**
 * The annotated tags under refs/tags/ that `wants` does not name, each with the object it peels
 * to: what `include-tag` may add to a clone. git's pack-objects (`--include-tag`, which
 * upload-pack passes for it) sends such a tag when the object it peels to is in the pack, and the
 * client then keeps the tags it has the objects of: `git clone --single-branch` gets the
 * annotated tags of its branch's history this way.
 */
export function tagsToFollow(
  refs: ReadonlyMap<string, RefValue>,
  wants: readonly string[],
): Map<string, string> {
  const wanted = new Set(wants);
  const tags = new Map<string, string>();
  for (const [name, value] of refs)
    if (name.startsWith('refs/tags/') && value.peeled !== undefined && !wanted.has(value.oid))
      tags.set(value.oid, value.peeled);
  return tags;
}

/**
 * Notes in the generation at `dir` that a client was answered from a plan (plansAhead.ts reads
 * it): written by the first such answer, only looked for by the next.
 */
export async function noteAsked(dir: string): Promise<void> {
  if (await wasAsked(dir)) return;
  await writeFile(join(dir, PACK_CACHE_DIR, ASKED), '').catch(() => {});
}

/** Whether a client was answered from a plan of the generation at `dir`. */
export function wasAsked(dir: string): Promise<boolean> {
  return exists(join(dir, PACK_CACHE_DIR, ASKED));
}

/** Where the inline pack of the plan kept under `key` is, in the generation at `dir`. */
export function inlinePackPath(dir: string, key: string): string {
  return join(dir, PACK_CACHE_DIR, `${key}${INLINE_SUFFIX}`);
}

/** The plan for `request` on `generation`: the one kept there, or one made and kept now. */
export async function planFor(
  deps: PlanDeps,
  generation: Generation,
  target: CacheTarget,
  request: UriRequest,
  owner: string,
): Promise<UriPlan> {
  const cache = join(generation.dir, PACK_CACHE_DIR);
  const text = await readFile(join(cache, `${request.key}${PLAN_SUFFIX}`), 'utf8').catch(() => null);
  const kept = text === null ? null : (JSON.parse(text) as UriPlan);
  if (kept?.v === 2) return kept;
  await mkdir(cache, { recursive: true });
  const stored = await storedPacks(generation, target);
  const plan =
    stored.length === 0
      ? { v: 2 as const, packs: [], inline: 0 }
      : await planOfStored(deps, generation, request, stored, owner);
  // Written last: its presence says the inline pack is whole.
  await keep(join(cache, `${request.key}${PLAN_SUFFIX}`), (part) => writeFile(part, JSON.stringify(plan)));
  return plan;
}

/**
 * The plan when there are stored packs, for the request's wants and the tags it follows
 * (UriRequest.followTags): the plan of both is what upload-pack would have packed, the tags and
 * the objects their targets reach.
 */
async function planOfStored(
  deps: PlanDeps,
  generation: Generation,
  request: UriRequest,
  stored: readonly StoredPack[],
  owner: string,
): Promise<UriPlan> {
  const tags = request.followTags;
  let wanted = request;
  if (tags !== undefined && tags.size > 0) {
    const reachable = new ObjectList(await reachableObjects(deps, generation, request.wants, owner));
    const followed = [...tags].filter(([, peeled]) => reachable.indexOf(Buffer.from(peeled, 'hex'), 0) >= 0);
    wanted = { ...request, wants: [...request.wants, ...followed.map(([tag]) => tag)] };
  }
  return (
    (await planOfLargest(deps, generation, wanted, stored, owner)) ??
    (await planByObject(deps, generation, wanted, stored, owner))
  );
}

/** The packs the log names for the state: its newest checkpoint's, then the entries' after it. */
export async function statePacks(target: CacheTarget): Promise<string[]> {
  const names = new Set(target.checkpoint?.packs ?? []);
  for (const item of await target.itemsAfter(target.checkpoint?.seq ?? 0))
    for (const name of item.packs) names.add(name);
  return [...names].filter((name) => /^pack-[0-9a-f]{40}$/.test(name));
}

/** The state's packs the cache's object store holds, largest first. */
async function storedPacks(generation: Generation, target: CacheTarget): Promise<StoredPack[]> {
  const stored: StoredPack[] = [];
  for (const name of await statePacks(target)) {
    const idx = await readFile(join(generation.objects, 'pack', `${name}.idx`)).catch(() => null);
    if (idx === null) continue;
    const names = readPackNames(idx);
    if (names.count > 0) stored.push({ name, names });
  }
  return stored.sort((a, b) => b.names.count - a.names.count);
}

/**
 * The plan in the usual case, without listing the objects: the largest stored packs, when the
 * wants reach every object in them. git packs what the wants reach outside those packs
 * (pack-objects --keep-pack) while it counts what they reach (rev-list --count, from the bitmap);
 * the packs' objects are all reachable exactly when the reachable ones in them (the count less
 * the inline pack's) are as many as the packs hold. Null when they are not (a force-push left
 * objects no ref reaches in one): the caller then looks at each object.
 */
async function planOfLargest(
  deps: PlanDeps,
  generation: Generation,
  request: UriRequest,
  stored: readonly StoredPack[],
  owner: string,
): Promise<UriPlan | null> {
  const packs = largestDistinct(stored);
  let inline = -1;
  const kept = await keep(inlinePackPath(generation.dir, request.key), async (part) => {
    const wants = `${part}.wants`;
    await writeFile(wants, request.wants.map((oid) => `${oid}\n`).join(''));
    try {
      const options = [
        ...(request.ofsDelta ? ['--delta-base-offset'] : []),
        ...packs.map((pack) => `--keep-pack=${pack.name}.pack`),
      ];
      // The generation borrows its objects (objects/info/alternates), and git honours --keep-pack
      // only for packs of the repository's own object directory: the store is named as that.
      const out = await deps.git.checkScript(COUNT_AND_PACK, [wants, part, ...options], {
        cwd: generation.dir,
        owner,
        env: { GIT_OBJECT_DIRECTORY: generation.objects },
      });
      const reachable = Number(out.toString().trim());
      if (!Number.isSafeInteger(reachable))
        throw new GitFailed(['rev-list'], 0, `an object count of '${out}'`);
      inline = await packObjectCount(part);
      return reachable - inline === distinctObjectCount(packs.map((pack) => pack.names));
    } finally {
      await rm(wants, { force: true });
    }
  });
  return kept ? planOf(packs, inline) : null;
}

/**
 * The two git commands of planOfLargest, side by side from one shell (one fork of this process
 * instead of two): `$1` the wants, one per line; `$2` the inline pack to write; the rest
 * pack-objects options. It prints the count, and fails if either command did.
 */
const COUNT_AND_PACK = `wants=$1 part=$2; shift 2
"$0" rev-list --objects --use-bitmap-index --count --stdin <"$wants" & counting=$!
"$0" pack-objects --revs --stdout -q "$@" <"$wants" >"$part"; packed=$?
wait $counting; counted=$?
[ $packed -ne 0 ] && exit $packed
exit $counted`;

/**
 * The plan when some stored pack holds objects the wants do not reach: every reachable object
 * listed, each pack kept only if all its objects are among them, the rest packed inline.
 */
async function planByObject(
  deps: PlanDeps,
  generation: Generation,
  request: UriRequest,
  stored: readonly StoredPack[],
  owner: string,
): Promise<UriPlan> {
  const reachable = new ObjectList(await reachableObjects(deps, generation, request.wants, owner));
  const candidates: { pack: StoredPack; members: Uint32Array }[] = [];
  for (const pack of stored) {
    const members = reachableMembers(pack.names, reachable);
    if (members !== null) candidates.push({ pack, members });
  }
  // As largestDistinct: a pack whose objects the larger chosen ones all hold is left out.
  const chosen: typeof candidates = [];
  const covered = new Uint8Array(reachable.size);
  for (const candidate of candidates) {
    if (chosen.length === MAX_URI_PACKS) break;
    if (candidate.members.every((i) => covered[i] === 1)) continue;
    chosen.push(candidate);
    for (const i of candidate.members) covered[i] = 1;
  }
  const rest: string[] = [];
  for (let i = 0; i < reachable.size; i++) if (covered[i] === 0) rest.push(reachable.line(i));
  if (chosen.length > 0) {
    const lines = rest.map((line) => `${line}\n`).join('');
    await keep(inlinePackPath(generation.dir, request.key), (part) =>
      packObjects(deps, generation, lines, request.ofsDelta, owner, part),
    );
  }
  return planOf(
    chosen.map(({ pack }) => pack),
    rest.length,
  );
}

/**
 * The largest stored packs, at most MAX_URI_PACKS, leaving out any whose objects the larger ones
 * chosen already hold (a branch pushed again after a force-push moved it away): the client would
 * download those objects twice.
 */
function largestDistinct(stored: readonly StoredPack[]): StoredPack[] {
  const chosen: StoredPack[] = [];
  for (const pack of stored) {
    if (chosen.length === MAX_URI_PACKS) break;
    if (
      chosen.length > 0 &&
      heldByOthers(
        pack.names,
        chosen.map((c) => c.names),
      )
    )
      continue;
    chosen.push(pack);
  }
  return chosen;
}

function planOf(packs: readonly StoredPack[], inline: number): UriPlan {
  return { v: 2, packs: packs.map(({ name, names }) => ({ name, hash: names.packHash })), inline };
}

/**
 * Where each object of a pack is in the reachable objects (their line numbers), or null when the
 * pack holds one that is not reachable and so may not be sent.
 */
function reachableMembers(pack: PackNames, reachable: ObjectList): Uint32Array | null {
  const members = new Uint32Array(pack.count);
  for (let i = 0; i < pack.count; i++) {
    const at = reachable.indexOf(pack.bytes, pack.nameAt(i));
    if (at < 0) return null;
    members[i] = at;
  }
  return members;
}

/**
 * Writes a file under a temporary name and renames it into place, so no reader sees a part;
 * when `write` answers false, the part is removed instead and keep answers false.
 */
async function keep(path: string, write: (part: string) => Promise<unknown>): Promise<boolean> {
  const part = `${path}.${randomBytes(6).toString('hex')}.part`;
  try {
    if ((await write(part)) === false) {
      await rm(part, { force: true });
      return false;
    }
    await rename(part, path);
    return true;
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
}

/**
 * Every object the wants reach, one `<oid>[ <path>]` line each, as rev-list wrote them. The
 * reachability bitmap of the checkpoint's pack answers most of the walk when there is one (on the
 * express fixture: 16 ms instead of 148); its lines then carry no path, which only the inline
 * pack's delta search would use, and the inline pack is what no stored pack covers: the objects
 * of a few pushes at most.
 */
async function reachableObjects(
  deps: PlanDeps,
  generation: Generation,
  wants: readonly string[],
  owner: string,
): Promise<Buffer> {
  const input = wants.map((oid) => `${oid}\n`).join('');
  return deps.git.check(['rev-list', '--objects', '--use-bitmap-index', '--stdin'], {
    cwd: generation.dir,
    owner,
    input,
  });
}

/** A self-contained pack at `path` of the objects `input` names, one line each. */
async function packObjects(
  deps: PlanDeps,
  generation: Generation,
  input: string,
  ofsDelta: boolean,
  owner: string,
  path: string,
): Promise<void> {
  const args = ['pack-objects', '--stdout', '-q', ...(ofsDelta ? ['--delta-base-offset'] : [])];
  const child = await deps.git.spawn(args, { cwd: generation.dir, owner });
  const exit = childExit(child);
  child.stdin?.end(input);
  await pipeline(child.stdout as Readable, createWriteStream(path));
  const result = await exit;
  if (result.code !== 0) throw new GitFailed(args, result.code, result.stderr);
}

/** The object count in the header of the pack at `path`. */
async function packObjectCount(path: string): Promise<number> {
  const file = await open(path, 'r');
  try {
    const header = Buffer.alloc(PACK_COUNT_AT + 4);
    const { bytesRead } = await file.read(header, 0, header.length, 0);
    if (bytesRead < header.length || header.toString('latin1', 0, 4) !== 'PACK')
      throw new GitFailed(['pack-objects'], 0, 'it wrote no pack header');
    return header.readUInt32BE(PACK_COUNT_AT);
  } finally {
    await file.close();
  }
}

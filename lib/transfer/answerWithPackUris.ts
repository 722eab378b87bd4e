/**
 * A full clone answered mostly by the object store (protocol v2 `packfile-uris`,
 * lib/protocol/packfileUris.ts): the answer names packs the log already stores, which the client
 * downloads itself (a presigned URL on S3, narwal's own signed URL on the embedded store), and
 * carries inline only the objects the clone needs that those packs lack.
 *
 * Which packs: those the state's log names (its newest checkpoint's, and the entries' after it)
 * that are in the cache's object store and whose objects the clone's wants all reach, so a clone
 * never receives an object a normal clone would not have (an object a force-push left behind is
 * kept by a checkpoint, but is never sent). A pack named by the log is never deleted
 * (docs/architecture.md invariant 2), so a URI sent stays good until it expires. With no such
 * pack, the caller answers as it always has.
 *
 * What is inline: the reachable objects outside those packs, packed on their own (never thin: the
 * client indexes the inline pack before it downloads any URI, so a delta base must be in it).
 *
 * The choice and the inline pack are made once per generation and request (by the repeatable
 * fetch's key) and kept in the generation beside its cached clone packs; the next identical clone
 * reads two small files and sends a few hundred bytes, however large the repository.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, createWriteStream } from 'node:fs';
import { type FileHandle, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { childExit } from '../git/childOutput.js';
import { GitFailed, type GitRunner } from '../git/GitRunner.js';
import { ObjectList } from '../git/ObjectList.js';
import { PACK_CACHE_DIR } from '../git/packCacheHook.js';
import { type PackNames, readPackNames } from '../git/packIndex.js';
import { acceptsUri, type PackfileUri, packfileUrisSection } from '../protocol/packfileUris.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { PACK_HEADER } from '../protocol/shallowInfo.js';
import { clonePackBody } from './clonePack.js';

export interface PackUriDeps {
  readonly git: Pick<GitRunner, 'spawn'>;
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
}

/** Where a client fetches a stored pack of the state `seq` of `repo` itself. */
export type PackLink = (pack: string, seq: number) => Promise<string>;

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
}

const PLAN_SUFFIX = '.uris.json';
/** At most this many URIs per answer: a checkpoint's pack and the largest pushes after it. */
const MAX_URI_PACKS = 8;
const INLINE_SUFFIX = '.uris.pack';
/**
 * The inline pack when the URIs cover every object (the usual case right after a checkpoint):
 * `PACK`, version 2, no objects, and the SHA-1 of those twelve bytes, as pack-objects writes it
 * for an empty list, without starting a process for it.
 */
const EMPTY_PACK = (() => {
  const header = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'binary');
  return Buffer.concat([header, createHash('sha1').update(header).digest()]);
})();

/**
 * The answer to `fetch` (a full clone whose client accepts packfile URIs) with stored packs as
 * URIs, or null when no stored pack qualifies or the client accepts none of their URIs.
 */
export async function answerWithPackUris(
  deps: PackUriDeps,
  target: CacheTarget,
  fetch: RepeatableFetch,
  link: PackLink,
  owner: string,
): Promise<Readable | null> {
  // The URI packs use offsets for their deltas, as every pack git writes to disk does.
  if (fetch.version !== 'v2' || !fetch.full || !fetch.ofsDelta || fetch.uriProtocols.length === 0)
    return null;
  const generation = await deps.cache.leaseComplete(target);
  let handed = false;
  try {
    const request = { key: `uris-${fetch.key}`, wants: fetch.wants, ofsDelta: fetch.ofsDelta };
    const plan = await planFor(deps, generation, target, request, owner);
    if (plan.packs.length === 0) return null;
    const uris: PackfileUri[] = [];
    for (const pack of plan.packs) {
      const uri = await link(pack.name, target.seq);
      if (!acceptsUri(fetch.uriProtocols, uri)) return null;
      uris.push({ hash: pack.hash, uri });
    }
    const inline = await openInline(join(generation.dir, PACK_CACHE_DIR), request.key);
    if (inline === null) return null;
    const body = clonePackBody(
      { preamble: PACK_HEADER.v2, sidebandData: fetch.sidebandData },
      inline,
      () => void generation.release(),
      packfileUrisSection(uris),
    );
    handed = true;
    return body;
  } finally {
    if (!handed) await generation.release();
  }
}

/** The plan for `request` on `generation`: the one kept there, or one made and kept now. */
export async function planFor(
  deps: PackUriDeps,
  generation: Generation,
  target: CacheTarget,
  request: UriRequest,
  owner: string,
): Promise<UriPlan> {
  const cache = join(generation.dir, PACK_CACHE_DIR);
  const text = await readFile(join(cache, `${request.key}${PLAN_SUFFIX}`), 'utf8').catch(() => null);
  const kept = text === null ? null : (JSON.parse(text) as UriPlan);
  return kept?.v === 2 ? kept : makePlan(deps, generation, target, request, owner);
}

async function openInline(cache: string, key: string): Promise<FileHandle | null> {
  return open(join(cache, `${key}${INLINE_SUFFIX}`), constants.O_RDONLY).catch(() => null);
}

/** Chooses the packs, writes the inline pack, then the plan (whose presence says both are whole). */
async function makePlan(
  deps: PackUriDeps,
  generation: Generation,
  target: CacheTarget,
  request: UriRequest,
  owner: string,
): Promise<UriPlan> {
  const cache = join(generation.dir, PACK_CACHE_DIR);
  const key = request.key;
  const reachable = new ObjectList(await reachableObjects(deps, generation, request.wants, owner));
  const candidates: { name: string; hash: string; members: Uint32Array }[] = [];
  for (const name of await statePacks(target)) {
    const idx = await readFile(join(generation.objects, 'pack', `${name}.idx`)).catch(() => null);
    if (idx === null) continue;
    const pack = readPackNames(idx);
    const members = reachableMembers(pack, reachable);
    if (members !== null && members.length > 0) candidates.push({ name, hash: pack.packHash, members });
  }
  await mkdir(cache, { recursive: true });
  // The largest first (the client downloads them in order), and only a few: each costs the client
  // a download and an index-pack, and the objects of the others are few enough to go inline.
  candidates.sort((a, b) => b.members.length - a.members.length);
  const packs = candidates.slice(0, MAX_URI_PACKS);
  const covered = new Uint8Array(reachable.size);
  for (const pack of packs) for (const i of pack.members) covered[i] = 1;
  const rest: string[] = [];
  for (let i = 0; i < reachable.size; i++) if (covered[i] === 0) rest.push(reachable.line(i));
  const plan: UriPlan = { v: 2, packs: packs.map(({ name, hash }) => ({ name, hash })), inline: rest.length };
  if (packs.length > 0) {
    await keep(join(cache, `${key}${INLINE_SUFFIX}`), (part) =>
      rest.length === 0
        ? writeFile(part, EMPTY_PACK)
        : packObjects(deps, generation, rest, request.ofsDelta, owner, part),
    );
  }
  await keep(join(cache, `${key}${PLAN_SUFFIX}`), (part) => writeFile(part, JSON.stringify(plan)));
  return plan;
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

/** The packs the log names for the state: its newest checkpoint's, then the entries' after it. */
export async function statePacks(target: CacheTarget): Promise<string[]> {
  const names = new Set(target.checkpoint?.packs ?? []);
  for (const item of await target.itemsAfter(target.checkpoint?.seq ?? 0))
    for (const name of item.packs) names.add(name);
  return [...names].filter((name) => /^pack-[0-9a-f]{40}$/.test(name));
}

/** Writes a file under a temporary name and renames it into place, so no reader sees a part. */
async function keep(path: string, write: (part: string) => Promise<void>): Promise<void> {
  const part = `${path}.${randomBytes(6).toString('hex')}.part`;
  try {
    await write(part);
    await rename(part, path);
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
  deps: PackUriDeps,
  generation: Generation,
  wants: readonly string[],
  owner: string,
): Promise<Buffer> {
  const child = await deps.git.spawn(['rev-list', '--objects', '--use-bitmap-index', '--stdin'], {
    cwd: generation.dir,
    owner,
  });
  const exit = childExit(child);
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stdin?.end(wants.map((oid) => `${oid}\n`).join(''));
  const result = await exit;
  if (result.code !== 0) throw new GitFailed(['rev-list'], result.code, result.stderr);
  return Buffer.concat(chunks);
}

/** A self-contained pack of `objects` (lines as rev-list wrote them) at `path`. */
async function packObjects(
  deps: PackUriDeps,
  generation: Generation,
  objects: readonly string[],
  ofsDelta: boolean,
  owner: string,
  path: string,
): Promise<void> {
  const args = ['pack-objects', '--stdout', '-q', ...(ofsDelta ? ['--delta-base-offset'] : [])];
  const child = await deps.git.spawn(args, { cwd: generation.dir, owner });
  const exit = childExit(child);
  child.stdin?.end(objects.map((line) => `${line}\n`).join(''));
  await pipeline(child.stdout as Readable, createWriteStream(path));
  const result = await exit;
  if (result.code !== 0) throw new GitFailed(args, result.code, result.stderr);
}

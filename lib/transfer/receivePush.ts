/**
 * A push: the real `git receive-pack --stateless-rpc` receives and validates the pack
 * (index-pack --strict, connectivity) and writes report-status; narwal decides every ref update
 * through git's proc-receive hook (receive.procReceiveRefs=refs hands all of them to it), so that
 * the entry is published - packs uploaded, entry written, index CAS won - before git can report
 * `ok` for any ref (docs/architecture.md invariant 1).
 *
 * The hook itself is a short shell script (git/hookScript.ts): receive-pack's children inherit
 * fd 3, a socketpair to this process, on which the hook hands its pipes over (git/hookChannel.ts),
 * so the decision runs here with the store clients, caches and group commit of this node, and no
 * extra runtime starts per push.
 */
import { type Duplex, Readable } from 'node:stream';
import type { CacheTarget, Generation, Progress } from '../cache/RepoCache.js';
import { type ChildExit, childExit, firstOutput } from '../git/childOutput.js';
import { fastForwards, pairKey } from '../git/fastForwards.js';
import type { GitRunner } from '../git/GitRunner.js';
import { hookChannel } from '../git/hookChannel.js';
import { peelTags } from '../git/peelTags.js';
import { ReceivedObjects } from '../git/receivedObjects.js';
import { receivePackConfig } from '../git/receivePackConfig.js';
import { createEmptyBase, type ReceivedPack, type ScratchRepo } from '../git/scratchRepo.js';
import { type Logger, serializeError } from '../log.js';
import { matchesRef, type ProtectionRule } from '../policy/protectionRules.js';
import {
  type ProcReceiveCommand,
  type ProcReceiveResult,
  serveProcReceive,
} from '../protocol/procReceive.js';
import { pushRefusalReport } from '../protocol/pushRefusalReport.js';
import { ReceivePackHeadParser } from '../protocol/receivePackRequest.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { lastLine } from '../util/lastLine.js';
import { onBodyError } from '../util/onBodyError.js';
import { RepoExists } from '../wal/errors.js';
import { emptyIndex } from '../wal/indexCodec.js';
import { packKey } from '../wal/keys.js';
import { type PublishResult, type PushJob, type RefOutcome, refusedOnEmptyRepo } from '../wal/Publisher.js';
import { putImmutable } from '../wal/putImmutable.js';
import type { Identity, LoadedIndex } from '../wal/types.js';
import { answerWhilePreparing } from './answerWhilePreparing.js';
import { type ClientMessage, GenerationLost, GitRefused, RepoBeingCreated } from './errors.js';
import { cacheChangedUnder, pushRefusalFor, refusedInProtocol } from './pushRefusal.js';
import { spoolBody } from './spoolBody.js';

/** The cache as a push uses it (RepoCache). */
export interface PushCache {
  target(loaded: LoadedIndex): CacheTarget;
  leaseIfComplete(target: CacheTarget): Promise<Generation | null>;
  leaseComplete(target: CacheTarget, progress?: Progress): Promise<Generation>;
  /** A complete generation a few entries older whose object store holds the newer packs, or null. */
  nearlyComplete(target: CacheTarget): Promise<Generation | null>;
  /** Adds packs this node received (a push it published) without downloading them again. */
  adoptPacks(repo: string, created: string, packs: readonly ReceivedPack[]): Promise<void>;
}

export interface PushDeps {
  readonly git: GitRunner;
  readonly cache: PushCache;
  readonly publisher: { publish(job: PushJob): Promise<PublishResult> };
  /** Creates the repository a push is the first to; reads it when a racing push created it. */
  readonly wal: {
    createRepo(repo: string, options: { public: boolean }): Promise<LoadedIndex>;
    readIndex(repo: string): Promise<LoadedIndex | null>;
  };
  readonly store: ObjectStore;
  readonly hooksDir: string;
  /**
   * Puts back hooks that have gone from `hooksDir` (and the pack cache hook, when used); cheap
   * when they are there. Called before each git that runs them.
   */
  readonly ensureHooks: () => Promise<void>;
  /** The node's scratch directory, made sure to exist and to be its own (cache/nodeDir.ts). */
  readonly scratchRoot: () => Promise<string>;
  /** Makes the private repository each push is received into (git/scratchRepo.ts). */
  readonly scratchRepos: {
    create(generation: { dir: string; objects: string }): Promise<ScratchRepo>;
    /** A push is announced (its advertisement asked for): get ready for it, in the background. */
    prepare(): void;
  };
  readonly maxHeadBytes: number;
  readonly maxCommands: number;
  readonly logger: Logger;
  /** Hints after a publish (prewarm the next generation, maybe checkpoint); never awaited by the push. */
  readonly afterPublish: (repo: string, loaded: LoadedIndex) => void;
  /** Takes work a push leaves running after its answer, so a node waits for it before it freezes. */
  readonly background: (work: Promise<void>) => void;
  readonly clientMessage: ClientMessage;
  /** Looks at the push's new objects before it is published (Git LFS pointers). */
  readonly pushObjects?: PushObjectCheck;
}

/** What a look at a push's new objects finds (lib/lfs/pushCheck.ts). */
export interface PushObjectCheck {
  check(push: {
    readonly repo: string;
    /** The objects the push received, and the repository it was received into. */
    readonly objects: ReceivedObjects;
    readonly commands: readonly { readonly ref: string; readonly newOid: string }[];
    /** Refuse refs (else only record what the objects point at). */
    readonly enforce: boolean;
  }): Promise<{
    /** Git LFS objects the new objects point at: the entry records them. */
    readonly pointers: readonly string[];
    /** Refused refs, and why. */
    readonly refused: ReadonlyMap<string, string>;
  }>;
}

export interface PushRequest {
  readonly repo: string;
  /**
   * The index the client's advertisement came from, or null when the repository does not exist
   * yet: the push then creates it, once a command would change a ref, so a refused push (bad
   * commands, a bad pack, invalid ref names) leaves nothing in the store.
   */
  readonly loaded: LoadedIndex | null;
  /** The request body, decoded and bounded. */
  readonly body: Readable;
  readonly who: Identity;
  /** Whom receive-pack's git slot is counted against (see GitSpawnOptions.owner). */
  readonly owner: string;
  /** Called when git exits without asking narwal to decide the push's commands. */
  readonly undecided?: () => void;
}

/** A push as receive-pack runs it: the index it starts from, and how to create the repository. */
interface Received extends Omit<PushRequest, 'loaded'> {
  readonly loaded: LoadedIndex;
  readonly create?: () => Promise<LoadedIndex>;
}

type ReceiveOutcome =
  | { readonly kind: 'stream'; readonly body: Readable }
  | { readonly kind: 'refused'; readonly exit: ChildExit; readonly inputError?: Error };

/**
 * Runs a push and returns git's answer. When the repository's cache must be prepared first (a
 * cold cache), the body is spooled to disk meanwhile - so git finishes sending and reads the
 * answer - and, when the client takes sideband messages, the answer starts at once with the
 * preparation's progress. A request git refuses without answering throws (GitRefused, or the
 * body's own error).
 */
export async function receivePush(deps: PushDeps, request: PushRequest): Promise<Readable | Buffer> {
  const { loaded } = request;
  const received: Received =
    loaded === null
      ? { ...request, loaded: unbornIndex(request.repo), create: () => createForPush(deps, request.repo) }
      : { ...request, loaded };
  return answerOf(await receive(deps, received));
}

/** git's answer, or why there is none. */
function answerOf(outcome: ReceiveOutcome): Readable | Buffer {
  if (outcome.kind === 'stream') return outcome.body;
  if (outcome.inputError) throw outcome.inputError;
  // git's probe POST (a lone flush-pkt) and empty requests get an empty answer.
  if (outcome.exit.code === 0) return Buffer.alloc(0);
  throw new GitRefused('receive-pack', outcome.exit.stderr);
}

async function receive(deps: PushDeps, request: Received): Promise<ReceiveOutcome> {
  // A repository that does not exist yet has nothing to prepare and must not get a cache entry.
  if (request.create) return receiveInto(deps, request, await createEmptyBase(await deps.scratchRoot()));
  // The generation of the index the client's advertisement came from (or a newer one): its
  // objects are the bases of the client's thin pack, its refs the snapshot for connectivity.
  const target = deps.cache.target(request.loaded);
  const leased = (await deps.cache.leaseIfComplete(target)) ?? (await deps.cache.nearlyComplete(target));
  const outcome = leased ? await receiveUnlessLost(deps, request, leased) : null;
  if (outcome) return outcome;
  const spool = await spoolBody(request.body, await deps.scratchRoot(), {
    maxHeadBytes: deps.maxHeadBytes,
    maxCommands: deps.maxCommands,
  });
  try {
    const head = await spool.head;
    const sideband = head.capabilities.includes('side-band-64k') && !head.capabilities.includes('quiet');
    if (!sideband || head.commands.length === 0) {
      try {
        const generation = await deps.cache.leaseComplete(target);
        await spool.done;
        return await receiveInto(deps, { ...request, body: await spool.open() }, generation, spool.remove);
      } catch (error) {
        // git never read this push: refused in its protocol, so that git prints why.
        if (head.commands.length === 0 || !refusedInProtocol(error)) throw error;
        deps.logger.error('push refused before git read it', {
          repo: request.repo,
          error: serializeError(error),
        });
        await spool.remove();
        return { kind: 'stream', body: Readable.from([pushRefusalReport(head, pushRefusalFor(error))]) };
      }
    }
    const body = answerWhilePreparing(
      {
        prefix: Buffer.alloc(0),
        prepare: (progress) => deps.cache.leaseComplete(target, progress),
        answer: async (generation, answer) => {
          await spool.done;
          const outcome = await receiveInto(
            deps,
            { ...request, body: await spool.open() },
            generation,
            spool.remove,
          );
          if (outcome.kind === 'stream') await answer.relay(outcome.body);
          else
            answer.fail(
              outcome.inputError?.message ?? `narwal: ${lastLine(outcome.exit.stderr) ?? 'push refused'}`,
            );
        },
      },
      {
        logger: deps.logger,
        event: 'push failed while preparing the repository',
        repo: request.repo,
        clientMessage: deps.clientMessage,
        otherwise: 'narwal: the repository could not be prepared, the push was not recorded; retry the push',
        cleanup: spool.remove,
      },
    );
    return { kind: 'stream', body };
  } catch (error) {
    await spool.remove();
    throw error;
  }
}

/**
 * receiveInto on a generation leased complete (or nearly), or null when its files went before the
 * push's repository was made of them (GenerationLost): git has read nothing of the push then, and
 * the caller receives it as into a cold cache, whose build makes the generation anew.
 */
async function receiveUnlessLost(
  deps: PushDeps,
  request: Received,
  generation: Pick<Generation, 'dir' | 'objects' | 'release'>,
): Promise<ReceiveOutcome | null> {
  try {
    return await receiveInto(deps, request, generation);
  } catch (error) {
    if (!(error instanceof GenerationLost)) throw error;
    deps.logger.warn('push repository not made, the cache changed under it; preparing it anew', {
      repo: request.repo,
      error: serializeError(error.cause),
    });
    return null;
  }
}

async function receiveInto(
  deps: PushDeps,
  request: Received,
  generation: Pick<Generation, 'dir' | 'objects' | 'release'>,
  cleanup: () => Promise<void> = async () => {},
): Promise<ReceiveOutcome> {
  const { repo } = request;
  // Hooks gone from the data directory are put back while the scratch repository is made.
  const hooks = deps.ensureHooks();
  hooks.catch(() => {});
  let scratch: ScratchRepo;
  try {
    scratch = await deps.scratchRepos.create(generation);
  } catch (error) {
    await Promise.all([generation.release(), cleanup()]);
    throw cacheChangedUnder(error) ? new GenerationLost(error) : error;
  }
  let child: Awaited<ReturnType<GitRunner['spawn']>>;
  try {
    await hooks;
    // The receive-pack started in the scratch repository ahead of the push, when it came with one
    // that is still alive; else one started ahead for any directory (a shell waiting for it).
    child =
      (await scratch.started?.take(request.owner)) ??
      (await deps.git.spawnReady(receivePackArgs(deps.hooksDir), scratch.dir, {
        stdio: RECEIVE_PACK_STDIO,
        owner: request.owner,
      }));
  } catch (error) {
    await Promise.all([scratch.remove(), generation.release(), cleanup()]);
    throw error;
  }
  const exit = childExit(child);
  let decided = false;
  // Work a published push leaves for after git has its answer: the scratch repository (whose
  // packs it links) and the generation stay until it is over.
  const afterAnswer: Promise<void>[] = [];
  void exit.then(async () => {
    if (!decided) request.undecided?.();
    await Promise.allSettled(afterAnswer);
    return Promise.all([scratch.remove(), generation.release(), cleanup()]);
  });

  const control = child.stdio[3] as Duplex;
  const decide = async (commands: ProcReceiveCommand[], _options: string[], capabilities: string[]) => {
    decided = true;
    const atomic = capabilities.includes('atomic');
    // git hands the hook only the commands it did not refuse itself (a failed connectivity check,
    // "missing necessary objects", refuses one ref), and then reports its own refusals beside the
    // hook's answers: an atomic push missing any of its commands fails whole here, since its refs
    // land all together or not at all (docs/architecture.md invariant 6). git 2.39's receive-pack
    // would update the others.
    const requested = parser.head?.commands.length ?? commands.length;
    if (atomic && commands.length < requested)
      return commands.map(
        (c): ProcReceiveResult => ({ ref: c.ref, ok: false, reason: 'atomic push failure' }),
      );
    try {
      // Refs refused for what their new objects point at (Git LFS objects the store lacks) are
      // decided before anything is created or published; an atomic push then lands nothing.
      // The push's packs, read once in this process for every question its checks ask.
      const packs = commands.some((c) => !/^0+$/.test(c.newOid)) ? await scratch.packs() : [];
      const received = await ReceivedObjects.open(deps.git, scratch.dir, packs);
      const objects = await deps.pushObjects?.check({
        repo,
        objects: received,
        commands,
        enforce: request.loaded.index.settings?.lfsPushCheck !== false,
      });
      const refusedRefs = objects?.refused ?? new Map<string, string>();
      const refusedHere = commands
        .filter((c) => refusedRefs.has(c.ref))
        .map((c): ProcReceiveResult => ({ ref: c.ref, ok: false, reason: refusedRefs.get(c.ref) ?? '' }));
      const accepted = commands.filter((c) => !refusedRefs.has(c.ref));
      if (refusedHere.length > 0 && (atomic || accepted.length === 0))
        return commands.map(
          (c): ProcReceiveResult => ({
            ref: c.ref,
            ok: false,
            reason: refusedRefs.get(c.ref) ?? 'atomic push failure',
          }),
        );
      let created = request.loaded.index.created;
      if (request.create) {
        const refused = refusedOnEmptyRepo(accepted, atomic);
        if (refused) return [...refusedHere, ...refused.map(resultOf)];
        created = (await request.create()).index.created;
      }
      const published = await publishPush(deps, {
        repo,
        created,
        commands: accepted,
        atomic,
        who: request.who,
        packs,
        received,
        git: deps.git,
        dir: scratch.dir,
        rules: request.loaded.index.protection,
        ...(objects ? { pointers: objects.pointers } : {}),
        later: (work) => afterAnswer.push(work),
      });
      return [...refusedHere, ...published];
    } catch (error) {
      // Nothing was published (or its outcome could not be learned): no ref may report ok.
      const repositoryGone = await scratch.gone();
      deps.logger.error('push not published', { repo, repositoryGone, error: serializeError(error) });
      const reason = pushRefusalFor(error, { repositoryGone });
      return commands.map((c): ProcReceiveResult => ({ ref: c.ref, ok: false, reason }));
    }
  };
  let channel: Duplex | null = null;
  const hook = hookChannel(control)
    .then((opened) => {
      channel = opened;
      return opened === null ? undefined : serveProcReceive(opened, decide);
    })
    .catch((error: unknown) => error);
  void exit.then(() => {
    control.destroy();
    channel?.destroy();
  });

  let inputError: Error | undefined;
  const parser = new ReceivePackHeadParser({
    maxHeadBytes: deps.maxHeadBytes,
    maxCommands: deps.maxCommands,
  });
  const fail = (error: Error) => {
    inputError ??= error;
    child.kill('SIGKILL');
  };
  onBodyError(request.body, fail);
  parser.once('error', fail);
  child.stdin?.on('error', () => {});
  request.body.pipe(parser).pipe(child.stdin as NodeJS.WritableStream);

  const first = await firstOutput(child, exit);
  if (inputError === undefined && first.started) return { kind: 'stream', body: first.body };
  await hook;
  const finished = first.started ? await exit : first.exit;
  return { kind: 'refused', exit: finished, ...(inputError ? { inputError } : {}) };
}

/** receive-pack's arguments but for its directory (the last), as every push runs it. */
export function receivePackArgs(hooksDir: string): string[] {
  return [...receivePackConfig(hooksDir), 'receive-pack', '--stateless-rpc'];
}

/** Its stdio: fd 3 is the channel its proc-receive hook hands its pipes over (git/hookChannel.ts). */
export const RECEIVE_PACK_STDIO: ['pipe', 'pipe', 'pipe', 'pipe'] = ['pipe', 'pipe', 'pipe', 'pipe'];

async function publishPush(
  deps: PushDeps,
  push: {
    repo: string;
    created: string;
    commands: ProcReceiveCommand[];
    atomic: boolean;
    who: Identity;
    /** The packs the push sent, and their objects. */
    packs: readonly ReceivedPack[];
    received: ReceivedObjects;
    git: GitRunner;
    dir: string;
    rules: readonly ProtectionRule[] | undefined;
    /** The Git LFS objects the push's new objects point at, once they were looked for. */
    pointers?: readonly string[];
    /** Takes work that need not delay the answer; the push's directories outlive it. */
    later: (work: Promise<void>) => void;
  },
): Promise<ProcReceiveResult[]> {
  const live = push.commands.filter((c) => !/^0+$/.test(c.newOid));
  const packs = live.length > 0 ? push.packs : [];
  // Uploaded while the publisher decides and writes the entry; its CAS waits for them.
  const stored = Promise.all(
    packs.flatMap((p) => [
      putImmutable(deps.store, packKey(push.repo, p.name, 'pack'), {
        path: p.packPath,
        size: p.packSize,
        immutable: true,
      }),
      putImmutable(deps.store, packKey(push.repo, p.name, 'idx'), {
        path: p.idxPath,
        size: p.idxSize,
        immutable: true,
      }),
    ]),
  ).then(() => {});
  stored.catch(() => {});
  const [peeled, forwards] = await Promise.all([
    peelTags(
      push.received,
      live.map((c) => c.newOid),
    ),
    // Protection rules may deny force-pushes: whether each update is one is a question for git,
    // asked only about the refs such a rule of the index the push started from names. Should the
    // rules change before the CAS, the publisher refuses an unanswered one with "push again".
    fastForwards(
      push.git,
      push.dir,
      push.commands.filter((c) => push.rules?.some((r) => r.denyForce && matchesRef(r.pattern, c.ref))),
    ),
  ]);
  const result = await deps.publisher.publish({
    repo: push.repo,
    commands: push.commands.map((c) => {
      const target = peeled.get(c.newOid);
      const fastForward = forwards.get(pairKey(c));
      return {
        ref: c.ref,
        oldOid: c.oldOid,
        newOid: c.newOid,
        ...(target ? { peeled: target } : {}),
        ...(fastForward !== undefined ? { fastForward } : {}),
      };
    }),
    atomic: push.atomic,
    who: push.who,
    packs: packs.map((p) => p.name),
    bytes: packs.reduce((sum, p) => sum + p.packSize, 0),
    stored,
    ...(push.pointers && packs.length > 0 ? { lfs: push.pointers } : {}),
  });
  if (result.seq !== null) {
    // Published: from here on nothing may turn the outcome into a refusal. Adopting the packs only
    // saves the cache a download (its directory may have been deleted under it, for instance), so
    // it runs while git reports: a handful of file system calls that `ok` need not wait for. The
    // next generation is prepared once they are in.
    const { loaded } = result;
    const adopted = deps.cache
      .adoptPacks(push.repo, push.created, packs)
      .catch((error: unknown) =>
        deps.logger.warn('packs of a published push not adopted by the cache', {
          repo: push.repo,
          error: serializeError(error),
        }),
      )
      .then(() => deps.afterPublish(push.repo, loaded));
    deps.background(adopted);
    push.later(adopted);
  }
  return result.outcomes.map(resultOf);
}

function resultOf(o: RefOutcome): ProcReceiveResult {
  return o.ok ? { ref: o.ref, ok: true } : { ref: o.ref, ok: false, reason: o.reason };
}

/** What a repository that does not exist yet looks like to receive-pack: no refs, no objects. */
function unbornIndex(repo: string): LoadedIndex {
  return { index: emptyIndex(repo, { public: false, now: new Date(0) }), etag: 'unborn' };
}

async function createForPush(deps: PushDeps, repo: string): Promise<LoadedIndex> {
  try {
    const created = await deps.wal.createRepo(repo, { public: false });
    deps.logger.info('repository created by push', { repo });
    return created;
  } catch (error) {
    if (!(error instanceof RepoExists)) throw error;
    const loaded = await deps.wal.readIndex(repo);
    if (loaded === null) throw new RepoBeingCreated(repo);
    return loaded;
  }
}

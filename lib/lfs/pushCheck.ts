/**
 * A push whose new commits point at Git LFS objects the store does not have is refused, ref by
 * ref, with the objects named and the command that uploads them: otherwise clones would get
 * pointers whose objects nobody can download. Only the push's new objects are looked at
 * (pointerScan.ts); the refs are told apart only when something is missing, by asking git which
 * missing pointer each ref's new commits reach. A repository's `lfsPushCheck` setting turns the
 * refusal off (pointers are still looked up and recorded, for the orphan sweep).
 */
import type { GitRunner } from '../git/GitRunner.js';
import type { ReceivedObjects } from '../git/receivedObjects.js';
import { mapLimit } from '../util/mapLimit.js';
import type { LfsObjects } from './LfsObjects.js';
import type { Pointer } from './pointer.js';
import { pointersAmong } from './pointerScan.js';

export interface PushedObjects {
  readonly repo: string;
  /** The objects the push received, and the repository it was received into. */
  readonly objects: ReceivedObjects;
  readonly commands: readonly { readonly ref: string; readonly newOid: string }[];
  /** Refuse refs that reach missing objects (the repository's setting); else only record. */
  readonly enforce: boolean;
}

export interface PushObjectsVerdict {
  /** The LFS oids the push's new objects point at, sorted: its entry records them. */
  readonly pointers: readonly string[];
  /** Refused refs, and why. */
  readonly refused: ReadonlyMap<string, string>;
}

/** Pointers whose objects are looked up in the store at once. */
const LOOKUPS = 32;
/** Missing objects a refusal names; the rest are counted. */
const NAMED = 3;

export class LfsPushCheck {
  readonly #git: GitRunner;
  readonly #objects: LfsObjects;

  constructor(deps: { git: GitRunner; objects: LfsObjects }) {
    this.#git = deps.git;
    this.#objects = deps.objects;
  }

  async check(push: PushedObjects): Promise<PushObjectsVerdict> {
    const blobs = await pointersAmong(push.objects, await push.objects.received());
    const byOid = new Map<string, Pointer>();
    for (const pointer of blobs.values()) byOid.set(pointer.oid, pointer);
    const pointers = [...byOid.keys()].sort();
    if (pointers.length === 0) return { pointers, refused: new Map() };
    // Looked up with the check off too: an old object is renewed so that the orphan sweep, which
    // has not yet seen the entry about to name it, does not take it meanwhile (LfsObjects.ts).
    const states = await mapLimit([...byOid.values()], LOOKUPS, async (p) => ({
      pointer: p,
      present: (await this.#objects.state(push.repo, p.oid, p.size, { renew: true })) === 'present',
    }));
    if (!push.enforce) return { pointers, refused: new Map() };
    const missing = new Set(states.filter((s) => !s.present).map((s) => s.pointer.oid));
    if (missing.size === 0) return { pointers, refused: new Map() };
    const missingBlobs = new Map([...blobs].filter(([, p]) => missing.has(p.oid)));
    const refused = new Map<string, string>();
    for (const command of push.commands) {
      if (/^0+$/.test(command.newOid)) continue;
      const reached = await this.#reached(push.objects.dir, command.newOid, missingBlobs);
      if (reached.length > 0) refused.set(command.ref, refusal(reached));
    }
    return { pointers, refused };
  }

  /** The missing pointers `tip`'s new commits reach, as `path (sha256:...)`, first seen first. */
  async #reached(dir: string, tip: string, missing: ReadonlyMap<string, Pointer>): Promise<string[]> {
    const out = await this.#git.check(['rev-list', '--objects', tip, '--not', '--all'], {
      cwd: dir,
      withinSlot: true,
    });
    const seen = new Map<string, string>();
    for (const line of out.toString('utf8').split('\n')) {
      const space = line.indexOf(' ');
      const pointer = missing.get(space < 0 ? line : line.slice(0, space));
      if (pointer && !seen.has(pointer.oid))
        seen.set(
          pointer.oid,
          `${space < 0 ? '?' : line.slice(space + 1)} (sha256:${pointer.oid.slice(0, 12)})`,
        );
    }
    return [...seen.values()];
  }
}

function refusal(missing: readonly string[]): string {
  const named = missing.slice(0, NAMED).join(', ');
  const more = missing.length > NAMED ? ` and ${missing.length - NAMED} more` : '';
  return `narwal: LFS objects missing on the server: ${named}${more}; upload them with git lfs push --all origin, then push again`;
}

/**
 * One chaos client: a real `git` user working on several repositories through whichever node is
 * up, recording every operation. Each push makes fresh commits (a unique message), so an update in
 * the log names exactly one push command.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZERO_OID } from './checkHistory.js';
import type {
  Op,
  Outcome,
  PushCommandRecord,
  PushOp,
  PushStyle,
  ReadKind,
  ReadOp,
  Recorder,
} from './history.js';
import { parsePushReport } from './pushOutput.js';

export interface NodeChoice {
  readonly name: string;
  /** Base URL with credentials. */
  readonly url: string;
}

export interface ChaosClientOptions {
  readonly id: number;
  readonly repos: readonly string[];
  readonly home: string;
  readonly recorder: Recorder;
  /** A node that is up now (null while every node is down). */
  readonly pick: () => NodeChoice | null;
  readonly random: () => number;
  /** A git child still running after this is killed, and its outcome is unknown. */
  readonly gitTimeoutMs: number;
}

interface GitResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

export const HOT_REFS = ['refs/heads/hot-0', 'refs/heads/hot-1'];

export class ChaosClient {
  readonly #o: ChaosClientOptions;
  #dir = '';
  /** The empty tree: every chaos commit has it, so packs stay tiny and pushes are about refs. */
  #tree = '';
  #tmpRefs = 0;
  #commits = 0;
  /** Temporary branches this client created and has not tried to delete yet, per repository. */
  readonly #deletable = new Map<string, Set<string>>();

  constructor(options: ChaosClientOptions) {
    this.#o = options;
  }

  async init(): Promise<void> {
    this.#dir = await mkdtemp(join(tmpdir(), `narwal-chaos-client-${this.#o.id}-`));
    await this.#git(['init', '-q', '--bare', this.#dir], false, tmpdir());
    this.#tree = (await this.#git(['hash-object', '-t', 'tree', '-w', '/dev/null'])).stdout.trim();
  }

  async dispose(): Promise<void> {
    await rm(this.#dir, { recursive: true, force: true });
  }

  /** Runs operations until `until()` is false. */
  async run(until: () => boolean): Promise<void> {
    while (until()) {
      const repo = this.#choose(this.#o.repos);
      const roll = this.#o.random();
      try {
        if (roll < 0.16) await this.push(repo, 'single');
        else if (roll < 0.3) await this.push(repo, 'multi');
        else if (roll < 0.44) await this.push(repo, 'atomic');
        else if (roll < 0.6) await this.push(repo, 'lease');
        else if (roll < 0.7) await this.push(repo, 'delete');
        else if (roll < 0.8) await this.read(repo, 'clone');
        else if (roll < 0.9) await this.read(repo, 'ls-remote');
        else await this.read(repo, 'fetch');
      } catch (error) {
        // A local git step failed (not a server operation): note it and go on.
        console.warn(`chaos client ${this.#o.id}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** A push of the given style, built on the refs a fetch just saw. */
  async push(repo: string, style: PushStyle): Promise<void> {
    // A seed creates the repository: there is nothing to fetch yet.
    const refs = style === 'seed' ? new Map<string, string>() : await this.read(repo, 'fetch');
    if (refs === null) return;
    const own = `refs/heads/w${this.#o.id}`;
    const commands: { ref: string; old: string; new: string }[] = [];
    const grow = async (ref: string, detached = false) => {
      const old = refs.get(ref) ?? ZERO_OID;
      commands.push({ ref, old, new: await this.#commit(detached || old === ZERO_OID ? null : old) });
    };
    const tmp = () => `refs/heads/w${this.#o.id}-t${this.#tmpRefs++}`;
    const args: string[] = [];
    switch (style) {
      case 'seed':
        await grow('refs/heads/main');
        break;
      case 'single':
        await grow(this.#o.random() < 0.5 ? own : 'refs/heads/main');
        break;
      case 'multi':
      case 'atomic':
        await grow(own);
        await grow(tmp());
        // Half of them also race for main, so some atomic pushes must fail whole.
        if (this.#o.random() < 0.5) await grow('refs/heads/main');
        if (style === 'atomic') args.push('--atomic');
        break;
      case 'lease': {
        const ref = this.#choose(HOT_REFS);
        // Sometimes a rewrite (no parent): only the lease keeps it from losing someone's update.
        await grow(ref, this.#o.random() < 0.5);
        args.push(`--force-with-lease=${ref}:${refs.get(ref) ?? ''}`);
        break;
      }
      case 'delete': {
        const mine = [...(this.#deletable.get(repo) ?? [])].filter((ref) => refs.has(ref));
        const ref = mine.length > 0 ? this.#choose(mine) : undefined;
        if (ref === undefined) return;
        this.#deletable.get(repo)?.delete(ref);
        commands.push({ ref, old: refs.get(ref) ?? ZERO_OID, new: ZERO_OID });
        break;
      }
    }
    const node = this.#o.pick();
    if (node === null) return;
    const records: PushCommandRecord[] = commands.map((c) => ({ ...c, outcome: 'unknown' as Outcome }));
    const op = this.#o.recorder.begin<PushOp>({
      kind: 'push',
      id: this.#o.recorder.nextId(),
      repo,
      node: node.name,
      style,
      atomic: style === 'atomic',
      start: performance.now(),
      end: Number.POSITIVE_INFINITY,
      commands: records,
    });
    const specs = commands.map((c) => (c.new === ZERO_OID ? `:${c.ref}` : `${c.new}:${c.ref}`));
    const out = await this.#git(['push', '--porcelain', ...args, `${node.url}/${repo}.git`, ...specs], true);
    if (out.timedOut) this.#unanswered(op, out);
    const reports = parsePushReport(
      commands.map((c) => c.ref),
      out,
    );
    for (const record of records) {
      const report = reports.get(record.ref);
      record.outcome = report?.outcome ?? 'unknown';
      if (report?.reason) record.reason = report.reason;
    }
    // An unknown outcome never moves end: the push may still land after the client gave up.
    if (records.some((r) => r.outcome !== 'unknown')) this.#o.recorder.finish(op);
    else this.#o.recorder.forget(op);
    for (const record of records) {
      if (record.new !== ZERO_OID && /-t\d+$/.test(record.ref)) {
        const set = this.#deletable.get(repo) ?? new Set<string>();
        set.add(record.ref);
        this.#deletable.set(repo, set);
      }
    }
  }

  /** A read through some node; returns the branches it saw, or null when it failed. */
  async read(repo: string, kind: ReadKind): Promise<Map<string, string> | null> {
    const node = this.#o.pick();
    if (node === null) return null;
    const op = this.#o.recorder.begin<ReadOp>({
      kind,
      id: this.#o.recorder.nextId(),
      repo,
      node: node.name,
      start: performance.now(),
      end: Number.POSITIVE_INFINITY,
      outcome: 'error',
    });
    const url = `${node.url}/${repo}.git`;
    const protocol = ['-c', `protocol.version=${this.#o.random() < 0.3 ? 0 : 2}`];
    let refs: Map<string, string> | null = null;
    let reason = '';
    if (kind === 'ls-remote') {
      const out = await this.#git([...protocol, 'ls-remote', '--heads', url], true);
      if (out.code === 0) refs = parseRefLines(out.stdout, 'refs/heads/');
      else reason = this.#failure(op, out);
    } else if (kind === 'fetch') {
      const remote = `refs/remotes/${repo.replace(/\//g, '_')}/`;
      const out = await this.#git(
        [...protocol, 'fetch', '-q', '--prune', '--no-tags', url, `+refs/heads/*:${remote}*`],
        true,
      );
      if (out.code === 0) {
        const listed = await this.#git(['for-each-ref', '--format=%(objectname) %(refname)', remote]);
        refs = parseRefLines(listed.stdout, remote);
      } else reason = this.#failure(op, out);
    } else {
      const dir = await mkdtemp(join(tmpdir(), `narwal-chaos-clone-${this.#o.id}-`));
      try {
        const out = await this.#git(
          [...protocol, 'clone', '-q', '--bare', url, join(dir, 'c.git')],
          true,
          dir,
        );
        if (out.code === 0) {
          const listed = await this.#git(
            ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/'],
            false,
            join(dir, 'c.git'),
          );
          refs = parseRefLines(listed.stdout, 'refs/heads/');
          // Every object every ref reaches arrived.
          const fsck = await this.#git(
            ['fsck', '--connectivity-only', '--no-dangling'],
            false,
            join(dir, 'c.git'),
          );
          if (fsck.code !== 0) {
            refs = null;
            reason = `fsck of the clone failed: ${fsck.stderr}`;
            op.reason = reason;
            op.outcome = 'error';
            this.#o.recorder.finish(op);
            this.#o.recorder.corrupt.push(`clone #${op.id} of ${repo}: ${fsck.stderr.trim()}`);
            return null;
          }
        } else reason = this.#failure(op, out);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    if (refs !== null) {
      op.outcome = 'ok';
      op.refs = refs;
    } else op.reason = firstFailureLine(reason);
    this.#o.recorder.finish(op);
    return refs;
  }

  async #commit(parent: string | null): Promise<string> {
    const message = `chaos ${this.#o.id}.${this.#commits++} ${this.#o.random().toString(36).slice(2)}`;
    const out = await this.#git([
      'commit-tree',
      this.#tree,
      ...(parent ? ['-p', parent] : []),
      '-m',
      message,
    ]);
    const oid = out.stdout.trim();
    if (out.code !== 0 || !/^[0-9a-f]{40}$/.test(oid)) throw new Error(`commit-tree failed: ${out.stderr}`);
    return oid;
  }

  /** What a read's git said when it failed, or that it got no answer in time (also recorded). */
  #failure(op: ReadOp, out: GitResult): string {
    if (!out.timedOut) return out.stderr;
    this.#unanswered(op, out);
    return `no answer within ${this.#o.gitTimeoutMs / 1000} s`;
  }

  #unanswered(op: Op, out: GitResult): void {
    const said = out.stderr.trim().split('\n').at(-1) ?? '';
    this.#o.recorder.unanswered.push(
      `${op.kind} #${op.id} of ${op.repo} on ${op.node}: no answer within ${this.#o.gitTimeoutMs / 1000} s${said ? ` (git's last words: ${said})` : ''}`,
    );
  }

  #choose<T>(items: readonly T[]): T {
    return items[Math.floor(this.#o.random() * items.length)] as T;
  }

  #git(args: readonly string[], remote = false, cwd = this.#dir): Promise<GitResult> {
    return new Promise((resolve) => {
      execFile(
        'git',
        [...args],
        {
          cwd,
          timeout: remote ? this.#o.gitTimeoutMs : 0,
          killSignal: 'SIGKILL',
          maxBuffer: 64 * 1024 * 1024,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: this.#o.home,
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_TERMINAL_PROMPT: '0',
            LANG: 'C',
          },
        },
        (error, stdout, stderr) => {
          const timedOut = error !== null && (error as { killed?: boolean }).killed === true;
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ code, stdout: stdout.toString(), stderr: stderr.toString(), timedOut });
        },
      );
    });
  }
}

/**
 * The line of git's stderr that says what failed first: an error, a fatal one or the server's
 * (`remote: ...`), before what git failed on after it (`fatal: expected 'acknowledgments'` follows
 * `error: RPC failed; HTTP 500`); the last line when none is.
 */
function firstFailureLine(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '');
  return lines.find((line) => /^(error|fatal|remote)[: ]/.test(line)) ?? lines.at(-1) ?? '';
}

/** `<oid> <ref>` lines of refs under `prefix`, renamed to the branches they stand for. */
function parseRefLines(text: string, prefix: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{40})\s+(\S+)$/.exec(line.trim());
    if (match?.[1] && match[2]?.startsWith(prefix))
      refs.set(`refs/heads/${match[2].slice(prefix.length)}`, match[1]);
  }
  return refs;
}

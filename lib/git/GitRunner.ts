/**
 * Runs the real `git` with an environment that works on a read-only home (Lambda) and with
 * repositories owned by another uid (EFS access points): HOME points at a writable directory,
 * system and global config are ignored, and safe.directory is given on the command line, which
 * git treats as protected config.
 */
import type { StdioOptions } from 'node:child_process';
import type { GitBudget } from './GitBudget.js';
import { directSpawner, type GitChild, type ProcessSpawner } from './ProcessSpawner.js';

export interface GitSpawnOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly stdio?: StdioOptions;
  /**
   * The command is a step of an operation that already holds a budget slot (a push's receive-pack
   * asking git about what it received): it must not be refused, or queue behind its own parent.
   */
  readonly withinSlot?: boolean;
  /**
   * Whom the slot is counted against (a token, or an anonymous client's address): one owner may
   * hold only its share of the node's slots. Unset for work no client asked for.
   */
  readonly owner?: string;
  /**
   * Maintenance nobody waits for (checkpoint repacks, multi-pack-indexes): it runs at a lower CPU
   * priority, which its own children inherit, so that requests in flight on the node come first.
   */
  readonly background?: boolean;
}

/**
 * `-c safe.directory=*` for the git a script starts: configuration from the environment is
 * command-line configuration, which git trusts for safe.directory.
 */
const TRUST_EVERY_OWNER = {
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'safe.directory',
  GIT_CONFIG_VALUE_0: '*',
};

/** The nice value of background git processes (0 is normal, 19 the lowest priority). */
const BACKGROUND_NICE = 10;

export interface GitResult {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

export class GitFailed extends Error {
  readonly code = 'GitFailed';
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args[0] ?? ''} failed (${exitCode}): ${stderr.trim().split('\n').slice(-3).join(' / ')}`);
  }
}

/**
 * A shell that waits for one line, the last argument, and then becomes git (`exec`): started
 * ahead of the request that gives it the line, so that the fork, and the handing over of its
 * pipes when a helper starts it (ForkServer.ts), happen between requests instead of inside one.
 * A shell's `read` takes the line a byte at a time from a pipe, so git reads exactly what comes
 * after it.
 */
const READY_SCRIPT = 'IFS= read -r last || exit 0; exec "$0" "$@" "$last"';

interface Ready {
  readonly child: GitChild;
}

/**
 * A git process started before the request that will use it, whole (arguments and directory
 * known), and waiting for its input: `take` hands it over with a budget slot, as spawn would
 * start it, or answers null when it is no longer alive; `discard` stops it unused.
 */
export interface StartedAhead {
  take(owner?: string): Promise<GitChild | null>;
  discard(): void;
}

export class GitRunner {
  readonly #budget: GitBudget;
  readonly #env: NodeJS.ProcessEnv;
  readonly #binary: string;
  readonly #spawner: ProcessSpawner;
  /** Processes started ahead, one per kind of call (see READY_SCRIPT). */
  readonly #ready = new Map<string, Ready>();
  /** Processes started ahead whole (startAhead), not taken yet. */
  readonly #ahead = new Set<GitChild>();
  #closed = false;

  /**
   * `trace2Dir`: git's trace2 event target (GIT_TRACE2_EVENT, one file per git process), for
   * profiles; off unless given. `spawner`: what starts the processes (node's spawn unless given;
   * ForkServer.ts keeps forks off this process).
   */
  constructor(options: {
    budget: GitBudget;
    home: string;
    binary?: string;
    trace2Dir?: string;
    spawner?: ProcessSpawner;
  }) {
    this.#budget = options.budget;
    this.#binary = options.binary ?? 'git';
    this.#spawner = options.spawner ?? directSpawner;
    this.#env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: options.home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      LANG: 'C',
      ...(options.trace2Dir !== undefined ? { GIT_TRACE2_EVENT: options.trace2Dir } : {}),
    };
  }

  /** Spawns git once a budget slot is free; the slot is released when the child exits. */
  async spawn(args: readonly string[], options: GitSpawnOptions = {}): Promise<GitChild> {
    return this.#start(this.#binary, ['-c', 'safe.directory=*', ...args], {}, options);
  }

  /**
   * Runs `script` with /bin/sh, git's environment and one budget slot: `"$0"` is git (trusting
   * every repository's owner, as spawn's git does) and `args` are the script's `"$@"`. For a step
   * of a request made of a few git commands: each one spawned from here costs a fork of a node
   * process and the handing over of its pipes (without the helper, a fork of this one: about 13 ms
   * at 200 MB of memory on a 2-core machine), and forks from a shell cost a fraction of that. The
   * script must wait for every command it starts.
   */
  async spawnScript(
    script: string,
    args: readonly string[],
    options: GitSpawnOptions = {},
  ): Promise<GitChild> {
    return this.#start('/bin/sh', ['-c', script, this.#binary, ...args], TRUST_EVERY_OWNER, options);
  }

  async #start(
    binary: string,
    args: readonly string[],
    env: Readonly<Record<string, string>>,
    options: GitSpawnOptions,
  ): Promise<GitChild> {
    const release = options.withinSlot ? () => {} : await this.#budget.acquire(options.owner);
    try {
      // nice(1) lowers the priority before git starts, so everything git starts inherits it.
      const [command, commandArgs] = options.background
        ? ['nice', ['-n', String(BACKGROUND_NICE), binary, ...args]]
        : [binary, [...args]];
      const child = await this.#spawner.spawn(command, commandArgs, {
        cwd: options.cwd,
        env: { ...this.#env, ...env, ...options.env },
        stdio: options.stdio ?? ['pipe', 'pipe', 'pipe'],
      });
      child.once('close', release);
      child.once('error', release);
      return child;
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * Like spawn of `args` then `last`, from a process started ahead for such calls when one is
   * ready (its budget slot is taken now, as spawn's); another is started once this one is over.
   * For commands on the path of a request that always start the same way (a push's receive-pack).
   */
  async spawnReady(
    args: readonly string[],
    last: string,
    options: Pick<GitSpawnOptions, 'owner' | 'stdio'> = {},
  ): Promise<GitChild> {
    const stdio = options.stdio ?? ['pipe', 'pipe', 'pipe'];
    const key = JSON.stringify([args, stdio]);
    const ready = this.#ready.get(key);
    this.#ready.delete(key);
    const alive = ready && ready.child.exitCode === null && ready.child.signalCode === null;
    const stdin = ready?.child.stdin ?? null;
    if (!alive || last.includes('\n') || stdin === null) {
      ready?.child.kill('SIGKILL');
      const child = await this.spawn([...args, last], options);
      this.#readyAfter(child, args, stdio, key);
      return child;
    }
    const { child } = ready;
    let release: () => void;
    try {
      release = await this.#budget.acquire(options.owner);
    } catch (error) {
      // Refused a slot: the process stays ready for the next call.
      if (!this.#closed && !this.#ready.has(key)) this.#ready.set(key, ready);
      else child.kill('SIGKILL');
      throw error;
    }
    child.once('close', release);
    child.once('error', release);
    holdsOpen(child, true);
    stdin.write(`${last}\n`);
    this.#readyAfter(child, args, stdio, key);
    return child;
  }

  /**
   * Starts `git args` in `cwd` now, off the path of the request that will take it, for a command
   * whose every argument is known ahead (a push's receive-pack in the private repository made
   * for it: git reads its request, and only then the repository's refs and borrowed objects, so
   * those may be added after it started). Until taken it holds no budget slot and does not keep
   * this process alive.
   */
  startAhead(
    args: readonly string[],
    options: Pick<GitSpawnOptions, 'cwd' | 'stdio'> = {},
  ): StartedAhead | null {
    if (this.#closed) return null;
    const ahead = this.#ahead;
    let taken = false;
    const started = this.#spawner
      .spawn(this.#binary, ['-c', 'safe.directory=*', ...args], {
        cwd: options.cwd,
        env: this.#env,
        stdio: options.stdio ?? PIPES,
      })
      .then(
        (child) => {
          if (this.#closed) {
            child.kill('SIGKILL');
            return null;
          }
          child.once('error', () => ahead.delete(child));
          child.once('exit', () => ahead.delete(child));
          holdsOpen(child, false);
          if (!taken) ahead.add(child);
          return child;
        },
        () => null,
      );
    return {
      take: async (owner) => {
        if (taken) throw new Error('a process started ahead is taken once');
        taken = true;
        const child = await started;
        if (child === null) return null;
        ahead.delete(child);
        if (child.exitCode !== null || child.signalCode !== null || child.killed) return null;
        let release: () => void;
        try {
          release = await this.#budget.acquire(owner);
        } catch (error) {
          child.kill('SIGKILL');
          throw error;
        }
        // It may have died while the slot was awaited: the caller then starts one itself.
        if (child.exitCode !== null || child.signalCode !== null) {
          release();
          return null;
        }
        child.once('close', release);
        child.once('error', release);
        holdsOpen(child, true);
        return child;
      },
      discard: () => {
        if (taken) return;
        taken = true;
        void started.then((child) => {
          if (child === null) return;
          ahead.delete(child);
          child.kill('SIGKILL');
        });
      },
    };
  }

  /** Stops the processes started ahead (the node is closing). */
  close(): void {
    this.#closed = true;
    for (const child of this.#ahead) child.kill('SIGKILL');
    this.#ahead.clear();
    for (const ready of this.#ready.values()) ready.child.kill('SIGKILL');
    this.#ready.clear();
  }

  /** Starts the next ready process for `key` once `child` is over, off the path of a request. */
  #readyAfter(child: GitChild, args: readonly string[], stdio: StdioOptions, key: string): void {
    child.once('close', () => {
      setImmediate(() => {
        if (this.#closed || this.#ready.has(key)) return;
        this.#spawner
          .spawn('/bin/sh', ['-c', READY_SCRIPT, this.#binary, '-c', 'safe.directory=*', ...args], {
            env: this.#env,
            stdio,
          })
          .then(
            (waiting) => {
              // Closed meanwhile, or another call made one first.
              if (this.#closed || this.#ready.has(key)) {
                waiting.kill('SIGKILL');
                return;
              }
              waiting.once('error', () => this.#ready.get(key)?.child === waiting && this.#ready.delete(key));
              // A process that waits is never waited for: it must not keep this process alive.
              holdsOpen(waiting, false);
              this.#ready.set(key, { child: waiting });
            },
            // None ready: the next call spawns as spawn does.
            () => {},
          );
      });
    });
  }

  /** Runs a short git command to completion, feeding `input`, collecting output. */
  async run(
    args: readonly string[],
    options: GitSpawnOptions & { input?: string | Buffer } = {},
  ): Promise<GitResult> {
    return collect(await this.spawn(args, { ...options, stdio: PIPES }), options.input);
  }

  /** Like run, but throws GitFailed on a non-zero exit. */
  async check(
    args: readonly string[],
    options: GitSpawnOptions & { input?: string | Buffer } = {},
  ): Promise<Buffer> {
    const result = await this.run(args, options);
    if (result.code !== 0) throw new GitFailed(args, result.code, result.stderr);
    return result.stdout;
  }

  /** Like check, for a script of git commands (spawnScript); what it printed. */
  async checkScript(
    script: string,
    args: readonly string[],
    options: GitSpawnOptions & { input?: string | Buffer } = {},
  ): Promise<Buffer> {
    const child = await this.spawnScript(script, args, { ...options, stdio: PIPES });
    const { code, stdout, stderr } = await collect(child, options.input);
    if (code !== 0) throw new GitFailed(['sh', ...args], code, stderr);
    return stdout;
  }
}

const PIPES: StdioOptions = ['pipe', 'pipe', 'pipe'];

/** Feeds `input` to a child and collects what it writes until it exits. */
async function collect(child: GitChild, input: string | Buffer | undefined): Promise<GitResult> {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => stdout.push(d));
  child.stderr?.on('data', (d: Buffer) => stderr.push(d));
  child.stdin?.on('error', () => {});
  child.stdin?.end(input ?? '');
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { code, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') };
}

/** Whether `child` and its pipes keep this process's event loop alive. */
function holdsOpen(child: GitChild, on: boolean): void {
  if (on) child.ref();
  else child.unref();
  for (const stream of child.stdio) {
    const handle = stream as { ref?: () => void; unref?: () => void } | null;
    if (on) handle?.ref?.();
    else handle?.unref?.();
  }
}

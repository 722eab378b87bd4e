/**
 * A Lambda function as the platform runs it: a set of execution environments ("sandboxes"),
 * each serving one invocation at a time, a new one started (a cold start) whenever every
 * existing one is busy. Sandboxes share nothing but what the function mounts or calls: each has
 * its own `/tmp` (here, a directory of its own) and its own copy of the handler's module state
 * (here, its own container and app). https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html
 * ("For each concurrent request, Lambda provisions a separate instance of your execution
 * environment") and https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
 *
 * The function's timeout (at most 900 s) is what `getRemainingTimeInMillis` counts down from.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';

/** https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: "900 seconds (15 minutes)". */
export const LAMBDA_MAX_TIMEOUT_MS = 900_000;

export interface SandboxInstance<H> {
  readonly handler: H;
  /** Called when the function is torn down (the platform would just discard the sandbox). */
  close(): Promise<void>;
}

export interface SandboxStart {
  readonly id: number;
  /** This sandbox's `/tmp`. */
  readonly tmpDir: string;
}

export interface Sandbox<H> {
  readonly id: number;
  readonly handler: H;
  readonly tmpDir: string;
  /** Invocations this sandbox has served. */
  invocations: number;
}

export class LambdaFunction<H> {
  readonly #free: Sandbox<H>[] = [];
  readonly #all: { sandbox: Sandbox<H>; instance: SandboxInstance<H> }[] = [];
  #starting = 0;
  #lastId = 0;

  constructor(
    readonly name: string,
    private readonly options: {
      start: (sandbox: SandboxStart) => Promise<SandboxInstance<H>>;
      timeoutMs?: number;
      memoryMb?: number;
    },
  ) {
    if ((options.timeoutMs ?? LAMBDA_MAX_TIMEOUT_MS) > LAMBDA_MAX_TIMEOUT_MS)
      throw new Error(`${name}: a Lambda function times out after at most 900 s`);
  }

  /** Sandboxes started so far (cold starts). */
  get coldStarts(): number {
    return this.#all.length + this.#starting;
  }

  get sandboxes(): readonly Sandbox<H>[] {
    return this.#all.map((s) => s.sandbox);
  }

  /**
   * Runs one invocation in a free sandbox (or a new one) and frees it when `run` settles. `initMs`
   * is the time the sandbox took to start when this invocation started it (0 when one was free):
   * Lambda reports it apart, as the REPORT line's "Init Duration", not within the invocation's
   * "Duration" (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html,
   * the Init phase).
   */
  async invoke<T>(run: (sandbox: Sandbox<H>, context: Context, initMs: number) => Promise<T>): Promise<T> {
    const waited = performance.now();
    const free = this.#free.pop();
    const sandbox = free ?? (await this.#coldStart());
    const initMs = free ? 0 : performance.now() - waited;
    sandbox.invocations++;
    try {
      return await run(sandbox, this.#context(), initMs);
    } finally {
      this.#free.push(sandbox);
    }
  }

  async stop(): Promise<void> {
    for (const { sandbox, instance } of this.#all.splice(0)) {
      await instance.close();
      await rm(sandbox.tmpDir, { recursive: true, force: true });
    }
    this.#free.length = 0;
  }

  async #coldStart(): Promise<Sandbox<H>> {
    this.#starting++;
    try {
      const id = ++this.#lastId;
      const tmpDir = await mkdtemp(join(tmpdir(), `narwal-sandbox-${this.name}-`));
      const instance = await this.options.start({ id, tmpDir });
      const sandbox: Sandbox<H> = { id, handler: instance.handler, tmpDir, invocations: 0 };
      this.#all.push({ sandbox, instance });
      return sandbox;
    } finally {
      this.#starting--;
    }
  }

  #context(): Context {
    const requestId = randomBytes(16).toString('hex');
    const deadline = Date.now() + (this.options.timeoutMs ?? LAMBDA_MAX_TIMEOUT_MS);
    return {
      callbackWaitsForEmptyEventLoop: true,
      functionName: this.name,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${this.name}`,
      memoryLimitInMB: String(this.options.memoryMb ?? 2048),
      awsRequestId: requestId,
      logGroupName: `/aws/lambda/${this.name}`,
      logStreamName: 'local',
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: () => {},
      fail: () => {},
      succeed: () => {},
    };
  }
}

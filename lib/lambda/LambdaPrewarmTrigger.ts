/**
 * The prewarm trigger on Lambda: an asynchronous invocation (`InvocationType: Event`) of the
 * prewarm function, which Lambda queues and answers with 202 at once, so a push pays one API call
 * for it. The event names the repository and the index that was published; the prewarm function
 * reads the index again itself (functions/prewarm.ts).
 * https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { PrewarmTrigger } from '../cache/prewarmTrigger.js';
import { type Logger, serializeError } from '../log.js';
import type { LoadedIndex } from '../wal/types.js';
import { classifyLambdaError } from './classifyLambdaError.js';

/** What the prewarm function receives. */
export interface PrewarmEvent {
  readonly repo: string;
  /** The published index, for the log: the function builds whatever index is current. */
  readonly seq: number;
  readonly etag: string;
}

export class LambdaPrewarmTrigger implements PrewarmTrigger {
  readonly #client: LambdaClient;
  readonly #functionName: string;
  readonly #logger: Logger;

  constructor(options: { client: LambdaClient; functionName: string; logger: Logger }) {
    this.#client = options.client;
    this.#functionName = options.functionName;
    this.#logger = options.logger;
  }

  async trigger(repo: string, loaded: LoadedIndex): Promise<void> {
    const event: PrewarmEvent = { repo, seq: loaded.index.seq, etag: loaded.etag };
    try {
      const result = await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionName,
          InvocationType: 'Event',
          Payload: Buffer.from(JSON.stringify(event)),
        }),
      );
      if (result.StatusCode !== 202) {
        this.#logger.warn('prewarm not queued', {
          repo,
          function: this.#functionName,
          status: result.StatusCode,
        });
      }
    } catch (error) {
      const failure = classifyLambdaError(error, this.#functionName);
      // A hint lost is no harm; a deployment that can never invoke its prewarm function is.
      const fields = { repo, kind: failure.kind, error: serializeError(failure) };
      if (failure.kind === 'misconfigured') this.#logger.error('prewarm invoke failed', fields);
      else this.#logger.warn('prewarm invoke failed', fields);
    }
  }
}

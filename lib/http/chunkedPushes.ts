/**
 * Pushes git sends in chunks, behind an API Gateway that may refuse them.
 *
 * git sends a push larger than its `http.postBuffer` (1 MiB by default) as a 4-byte probe POST
 * (`Content-Length: 4`, a flush packet) followed by the real POST without Content-Length
 * (`Transfer-Encoding: chunked`). API Gateway marks a request's Transfer-Encoding "Exception" for
 * Lambda integrations and documents nothing more
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html),
 * so the deployment says what narwal assumes (NARWAL_CHUNKED_PUSHES):
 * - `accepted`: the gateway buffers the chunked request; pushes up to Lambda's limit stay there.
 * - `pool`: the gateway refuses it. The probe still reaches the function, which answers 413 at
 *   once (git stops before sending the body the gateway would refuse) and notes the repository;
 *   for a while after, its pushes are redirected to the pool at `info/refs`, so pushing again
 *   works. A client that sets `http.postBuffer` above its push sends one request with
 *   Content-Length instead and stays on Lambda.
 * The note is a presence record, so every sandbox and the authorizer see it.
 */
import type { PresenceStore } from '../presence/PresenceStore.js';

export type ChunkedPushMode = 'accepted' | 'pool';

/** How long pushes to a repository go to the pool after a chunked one was refused. */
export const CHUNKED_PUSH_NOTE_MS = 30 * 60_000;

const ID = 'route#chunked-push';

export class ChunkedPushNotes {
  readonly #presence: PresenceStore;
  readonly #now: () => number;
  readonly #owner: string;

  constructor(options: { presence: PresenceStore; owner: string; now?: () => number }) {
    this.#presence = options.presence;
    this.#owner = options.owner;
    this.#now = options.now ?? Date.now;
  }

  /** Notes that a push to `repo` was too large to come through as one request. */
  async note(repo: string): Promise<void> {
    const record = {
      key: keyOf(repo),
      id: ID,
      owner: this.#owner,
      expiresAt: this.#now() + CHUNKED_PUSH_NOTE_MS,
    };
    // A live note from someone else is as good as ours.
    await this.#presence.tryCreate(record);
  }

  async noted(repo: string): Promise<boolean> {
    return (await this.#presence.get(keyOf(repo), ID)) !== null;
  }
}

/** git's probe before a chunked push: the whole request is one flush packet. */
export function isPushProbe(headers: Readonly<Record<string, string | undefined>>): boolean {
  return headers['content-length'] === '4';
}

function keyOf(repo: string): string {
  return `repo#${repo}`;
}

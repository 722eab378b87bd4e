/**
 * actions/checkout's fetch without the client's work: the two requests git 2.39 makes for
 * `git -c protocol.version=2 fetch --no-tags --prune --no-recurse-submodules --depth=1 origin
 * +<sha>:refs/...` (read from its GIT_TRACE_PACKET: the capability advertisement, then one `fetch`
 * with `thin-pack`, `no-progress`, `ofs-delta`, `deepen 1`, the want and `done`; no `ls-refs`,
 * since the refspec names an object), with git's own capability lines, over one kept-alive
 * connection, the answer counted and thrown away instead of indexed and written.
 *
 * On this machine the storm's git clients share the two CPUs with the server, and each costs
 * more CPU than narwal spends answering it, so a storm of real jobs measures the clients as much
 * as the server. CI runners are other machines; this client measures what the server alone
 * sustains, as wireClone.ts does for full clones.
 */
import { request, wireConnection } from './wireClone.js';

export interface WireCheckoutResult {
  readonly ms: number;
  readonly packBytes: number;
}

/** One checkout fetch of `sha` at depth 1; `agent` is the git the requests are copied from (`git/2.39.5`). */
export async function wireCheckout(
  repoUrl: string,
  sha: string,
  agent: string,
  signal?: AbortSignal,
): Promise<WireCheckoutResult> {
  const started = performance.now();
  const connection = wireConnection(repoUrl, signal);
  const call = connection.call;
  try {
    const advertised = await call('GET', '/info/refs?service=git-upload-pack');
    if (advertised.status !== 200 || !advertised.text.includes('fetch=shallow'))
      throw new Error(`info/refs answered ${advertised.status} without a v2 fetch that can deepen`);
    const fetched = await call(
      'POST',
      '/git-upload-pack',
      request(
        'fetch',
        ['thin-pack\n', 'no-progress\n', 'ofs-delta\n', 'deepen 1\n', `want ${sha}\n`, 'done\n'],
        [`agent=${agent}\n`, 'object-format=sha1\n'],
      ),
      false,
    );
    if (fetched.status !== 200) throw new Error(`fetch answered ${fetched.status}`);
    // The response ends with a flush-pkt after the packfile section; anything else was cut short.
    if (fetched.tail.toString('latin1') !== '0000') throw new Error('the fetch response ended early');
    return { ms: performance.now() - started, packBytes: fetched.bytes };
  } finally {
    connection.close();
  }
}

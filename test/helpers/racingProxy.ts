/**
 * A plain HTTP proxy in front of narwal that can run an action just before it forwards the next
 * push (`POST .../git-receive-pack`): after the client read the refs, before its commands reach
 * the server. With it a test moves a ref in that window for clients that have no pre-push hook,
 * so only the server can see that the old value the client sends is stale.
 */
import { startProxy } from './proxy.js';

export interface RacingProxy {
  readonly url: string;
  /** Runs `action` once, before the next receive-pack POST is forwarded. */
  beforeNextPush(action: () => Promise<void>): void;
  stop(): Promise<void>;
}

export async function startRacingProxy(target: string): Promise<RacingProxy> {
  const upstream = new URL(target);
  let pending: (() => Promise<void>) | undefined;
  const proxy = await startProxy(async (req) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'POST' && path.endsWith('/git-receive-pack') && pending) {
      const action = pending;
      pending = undefined;
      await action();
    }
    return upstream;
  });
  return {
    url: proxy.url,
    beforeNextPush(action) {
      pending = action;
    },
    stop: () => proxy.stop(),
  };
}

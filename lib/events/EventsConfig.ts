/** Where events about published entries go, and how deliveries are retried (set by lib/config.ts). */
export interface EventsConfig {
  readonly webhook: {
    readonly url: string;
    /** The signing key itself, or (secretId) its secret in AWS Secrets Manager, read at run time. */
    readonly secret: string | undefined;
    readonly secretId: string | undefined;
    readonly timeoutMs: number;
    /** Loopback, link-local and private addresses may be delivered to. */
    readonly allowPrivate: boolean;
  } | null;
  readonly eventBridge: {
    readonly bus: string;
    readonly source: string;
    readonly region: string;
    readonly endpoint: string | undefined;
  } | null;
  /** Attempts per event before delivery waits for the next catch-up, and the backoff between them. */
  readonly attempts: number;
  readonly backoffMs: number;
  readonly backoffCapMs: number;
  /** How often a server catches up the deliveries of the repositories in its cache. */
  readonly catchUpMs: number;
}

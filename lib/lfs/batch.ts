/**
 * The batch API's request and answer, as JSON
 * (https://github.com/git-lfs/git-lfs/blob/main/docs/api/batch.md). A request that is not a batch
 * at all is refused whole; an object with a bad oid or size gets an error of its own, as the
 * specification asks, and the others are answered.
 */
import { InvalidLfsRequest, UnsupportedHashAlgorithm } from './errors.js';

export type Operation = 'download' | 'upload';

/** Objects in one batch: git-lfs sends 100 by default (lfs.transfer.batchSize). */
export const MAX_BATCH_OBJECTS = 10_000;

export interface BatchObject {
  /** As sent: checked per object, since one bad object must not fail the others. */
  readonly oid: unknown;
  readonly size: unknown;
}

export interface BatchRequest {
  readonly operation: Operation;
  readonly objects: readonly BatchObject[];
  /** The branch the objects are for, when the client says (unused: objects are per repository). */
  readonly ref?: string;
}

export interface Action {
  readonly href: string;
  readonly header?: Readonly<Record<string, string>>;
  readonly expires_in: number;
  readonly expires_at: string;
}

export interface ObjectAnswer {
  readonly oid: string;
  readonly size: number;
  /** The actions carry what they need (signatures, or the caller's own credentials). */
  readonly authenticated?: true;
  readonly actions?: {
    readonly download?: Action;
    readonly upload?: Action;
    readonly verify?: Action;
  };
  readonly error?: { readonly code: number; readonly message: string };
}

export interface BatchAnswer {
  readonly transfer: 'basic';
  readonly objects: readonly ObjectAnswer[];
  readonly hash_algo: 'sha256';
}

export function parseBatchRequest(body: unknown): BatchRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidLfsRequest('the batch request must be a JSON object');
  const fields = body as Record<string, unknown>;
  const operation = fields.operation;
  if (operation !== 'download' && operation !== 'upload')
    throw new InvalidLfsRequest('"operation" must be "download" or "upload"');
  const algorithm = fields.hash_algo;
  if (algorithm !== undefined && algorithm !== 'sha256')
    throw new UnsupportedHashAlgorithm(typeof algorithm === 'string' ? algorithm : JSON.stringify(algorithm));
  const transfers = fields.transfers;
  if (transfers !== undefined && (!Array.isArray(transfers) || !transfers.some((t) => t === 'basic')))
    throw new InvalidLfsRequest('this server offers only the "basic" transfer adapter');
  const objects = fields.objects;
  if (!Array.isArray(objects) || objects.length === 0)
    throw new InvalidLfsRequest('"objects" must be a non-empty array');
  if (objects.length > MAX_BATCH_OBJECTS)
    throw new InvalidLfsRequest(`at most ${MAX_BATCH_OBJECTS} objects per batch, not ${objects.length}`);
  const ref = (fields.ref as { name?: unknown } | undefined)?.name;
  return {
    operation,
    objects: objects.map((o): BatchObject => {
      const object = o !== null && typeof o === 'object' ? (o as Record<string, unknown>) : {};
      return { oid: object.oid, size: object.size };
    }),
    ...(typeof ref === 'string' ? { ref } : {}),
  };
}

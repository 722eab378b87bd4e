/**
 * The one place where errors become HTTP responses. Anything not meant for the client becomes a
 * plain 500 with the request id (the log has the rest), never a stack or an SDK error.
 */
import { AccessDenied } from '../auth/AccessDenied.js';
import { InvalidGrant } from '../auth/Principal.js';
import { AmbiguousToken, TokenNotFound } from '../auth/TokenStore.js';
import { InvalidSignedUrl } from '../auth/UrlSigner.js';
import { CatFileClosed } from '../browse/CatFile.js';
import { InvalidBrowsePath, NoSuchPath, NoSuchRevision } from '../browse/errors.js';
import { BuildSuperseded } from '../cache/RepoCache.js';
import { StalePreview } from '../history/History.js';
import { RuleNotFound } from '../history/protection.js';
import { InvalidRefPattern } from '../history/refPattern.js';
import {
  InvalidLfsRequest,
  LfsContentMismatch,
  LfsObjectMissing,
  LfsObjectTooLarge,
  LfsUploadMissing,
  LockConflict,
  LockNotFound,
  LockNotOwned,
  TooManyLocks,
  UnsupportedHashAlgorithm,
} from '../lfs/errors.js';
import { InvalidSettings } from '../lfs/settings.js';
import { serializeError } from '../log.js';
import { errorPageView } from '../monitor/pages.js';
import { InvalidProtection } from '../policy/protectionRules.js';
import { PresenceUnavailable } from '../presence/PresenceStore.js';
import { ProtocolError } from '../protocol/ProtocolError.js';
import { encodePktLine } from '../protocol/pktLine.js';
import { StoreError } from '../store/errors.js';
import {
  CacheChanged,
  GenerationLost,
  GitRefused,
  PackNotInLog,
  RepoBeingCreated,
} from '../transfer/errors.js';
import { Busy } from '../util/Busy.js';
import { NoSuchEntry, RepoNotFound } from '../wal/errors.js';
import { NOT_STORED } from './cachePolicy.js';
import { HttpError, unauthorized } from './HttpError.js';
import type { CoreResponse } from './types.js';

export interface ErrorLogger {
  error(message: string, fields: Record<string, unknown>): void;
}

export function errorResponse(error: unknown, requestId: string, logger: ErrorLogger): CoreResponse {
  if (error instanceof HttpError) return text(error.status, error.message, error.headers);
  if (error instanceof AccessDenied) return accessDenied(error);
  if (error instanceof ProtocolError) return text(400, `narwal: ${error.message}`);
  if (error instanceof GitRefused) return text(400, error.message);
  if (error instanceof CacheChanged || error instanceof GenerationLost)
    return text(503, error.message, { 'retry-after': '1' });
  if (error instanceof BuildSuperseded) {
    // The cache was evicted or deleted while this request prepared it (and retried no more).
    return text(503, `narwal: the server's cache of the repository changed while it was prepared; retry`, {
      'retry-after': '1',
    });
  }
  if (error instanceof RepoBeingCreated) return text(409, error.message);
  if (error instanceof RepoNotFound) return text(404, `narwal: repository ${error.repo} not found`);
  if (error instanceof NoSuchEntry) return text(404, `narwal: ${error.message}`);
  if (error instanceof InvalidSignedUrl)
    return text(error.reason === 'malformed' ? 400 : 403, `narwal: ${error.message}`);
  if (error instanceof PackNotInLog) return text(404, error.message);
  if (error instanceof InvalidRefPattern) return text(400, `narwal: ${error.message}`);
  if (error instanceof NoSuchRevision || error instanceof NoSuchPath)
    return text(404, `narwal: ${error.message}`);
  if (error instanceof InvalidBrowsePath) return text(400, `narwal: ${error.message}`);
  if (error instanceof CatFileClosed) {
    // The generation's reader went away mid-page (a node stopping, a cache deleted): retry.
    return text(503, 'narwal: the repository cache changed while the page was read; retry', {
      'retry-after': '1',
    });
  }
  if (error instanceof StalePreview) return text(409, `narwal: ${error.message}`);
  const lfs = lfsError(error, requestId);
  if (lfs) return lfs;
  if (error instanceof InvalidProtection || error instanceof InvalidSettings)
    return text(400, `narwal: ${error.message}`);
  if (error instanceof RuleNotFound) return text(404, `narwal: ${error.message}`);
  if (error instanceof InvalidGrant) return text(400, `narwal: ${error.message}`);
  if (error instanceof TokenNotFound) return text(404, `narwal: ${error.message}`);
  if (error instanceof AmbiguousToken) return text(409, `narwal: ${error.message}`);
  if (error instanceof Busy) {
    return text(503, error.message, { 'retry-after': String(error.retryAfterSeconds) });
  }
  if (
    error instanceof StoreError &&
    (error.code === 'ConditionalConflict' || error.code === 'PreconditionFailed')
  ) {
    // A race this request lost where no retry was left: retryable, not a server fault.
    logger.error('store race not absorbed', { requestId, error: serializeError(error, { stack: true }) });
    return text(503, `narwal: busy with concurrent writers; retry in a moment (request ${requestId})`, {
      'retry-after': '1',
    });
  }
  if (
    (error instanceof StoreError && error.code === 'StoreUnavailable') ||
    error instanceof PresenceUnavailable
  ) {
    logger.error('store unavailable', { requestId, error: serializeError(error, { stack: true }) });
    return text(503, `narwal: storage temporarily unavailable; retry in a moment (request ${requestId})`, {
      'retry-after': '1',
    });
  }
  logger.error('unexpected error', { requestId, error: serializeError(error, { stack: true }) });
  return text(500, `narwal: internal error (request ${requestId})`);
}

/**
 * A fetch's POST that failed on narwal's side (a 5xx), answered so that git shows why. git 2.39
 * shows nothing of a failed POST's body: curl drops it (CURLOPT_FAILONERROR) and git prints only
 * `error: RPC failed; HTTP 503 curl 22 ...`, then what it missed (`fatal: expected
 * 'acknowledgments'`). So the message goes in the protocol: status 200 and an `ERR` packet, on
 * which git (v0 and v2 alike) dies with `fatal: remote error: <message>` (gitprotocol-pack(5),
 * gitprotocol-v2(5)). What a request got wrong (a 4xx) keeps its status: no git sends it, and
 * the clients that do read statuses.
 */
export function asUploadPackError(response: CoreResponse): CoreResponse {
  if (response.status < 500 || !Buffer.isBuffer(response.body)) return response;
  const message = response.body.toString('utf8').trim().split('\n')[0] ?? '';
  const { 'content-type': _type, ...headers } = response.headers;
  return {
    status: 200,
    headers: { ...headers, 'content-type': UPLOAD_PACK_RESULT },
    body: encodePktLine(`ERR ${message}\n`),
  };
}

const UPLOAD_PACK_RESULT = 'application/x-git-upload-pack-result';

/** Git LFS failures; a lock conflict carries the lock in its answer, as the locking API says. */
function lfsError(error: unknown, requestId: string): CoreResponse | null {
  if (error instanceof InvalidLfsRequest || error instanceof LfsContentMismatch)
    return text(422, `narwal: ${error.message}`);
  if (error instanceof UnsupportedHashAlgorithm) return text(409, `narwal: ${error.message}`);
  if (error instanceof LfsObjectMissing || error instanceof LfsUploadMissing || error instanceof LockNotFound)
    return text(404, `narwal: ${error.message}`);
  if (error instanceof LfsObjectTooLarge) return text(413, `narwal: ${error.message}`);
  if (error instanceof LockNotOwned) return text(403, `narwal: ${error.message}`);
  if (error instanceof TooManyLocks) return text(409, `narwal: ${error.message}`);
  if (error instanceof LockConflict) {
    return {
      status: 409,
      headers: { 'content-type': LFS_MEDIA_TYPE, ...NOT_STORED },
      body: Buffer.from(
        JSON.stringify({ lock: error.lock, message: `narwal: ${error.message}`, request_id: requestId }),
      ),
    };
  }
  return null;
}

/** Git LFS's media type (https://github.com/git-lfs/git-lfs/blob/main/docs/api/batch.md). */
export const LFS_MEDIA_TYPE = 'application/vnd.git-lfs+json';

/**
 * An error response for a Git LFS client: `{"message", "request_id"}` as LFS's JSON, with
 * `LFS-Authenticate` beside `WWW-Authenticate` on a 401 (git-lfs reads it first, and API Gateway
 * renames `WWW-Authenticate` but passes it). An answer that already is LFS JSON is kept.
 */
export function asLfsJson(response: CoreResponse, requestId: string): CoreResponse {
  if (response.headers['content-type'] === LFS_MEDIA_TYPE) return response;
  const message = Buffer.isBuffer(response.body) ? response.body.toString('utf8').trim() : '';
  const challenge = response.headers['www-authenticate'];
  return {
    status: response.status,
    headers: {
      ...response.headers,
      'content-type': LFS_MEDIA_TYPE,
      ...NOT_STORED,
      ...(challenge ? { 'lfs-authenticate': challenge } : {}),
    },
    body: Buffer.from(JSON.stringify({ message, request_id: requestId })),
  };
}

/**
 * The answer to a request node's HTTP parser refused before any handler saw it, by the parser's
 * error code (node's `clientError` event; llhttp's HPE_* codes).
 */
export function clientErrorResponse(code: string | undefined, maxHeaderBytes: number): CoreResponse {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return text(
      431,
      `narwal: the request headers are larger than this server accepts (${maxHeaderBytes} bytes)`,
    );
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    return text(408, 'narwal: the request did not arrive in time; retry');
  }
  return text(400, `narwal: malformed HTTP request${code?.startsWith('HPE_') ? ` (${code})` : ''}`);
}

/** CONNECT (a proxy tunnel) is no method of a git host. */
export function connectRefused(): CoreResponse {
  return text(405, 'narwal: method CONNECT not allowed', { allow: 'GET, POST' });
}

/** 401 asks git for credentials; a hidden repository gets the same 404 as a missing one. */
function accessDenied(error: AccessDenied): CoreResponse {
  const message = `narwal: ${error.message}`;
  if (error.reason === 'Unauthenticated') {
    const challenge = unauthorized(message);
    return text(challenge.status, challenge.message, challenge.headers);
  }
  return text(error.reason === 'Hidden' ? 404 : 403, message);
}

export function text(
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): CoreResponse {
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...NOT_STORED, ...headers },
    body: Buffer.from(`${message}\n`),
  };
}

export function json(status: number, value: unknown): CoreResponse {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...NOT_STORED },
    body: Buffer.from(`${JSON.stringify(value, null, 2)}\n`),
  };
}

export function htmlPage(status: number, page: string): CoreResponse {
  return {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      ...NOT_STORED,
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
    },
    body: Buffer.from(page),
  };
}

/** An error response for the JSON API: the same status, headers and message, as `{"error": ...}`. */
export function asJson(response: CoreResponse): CoreResponse {
  const message = Buffer.isBuffer(response.body) ? response.body.toString('utf8').trim() : '';
  const shaped = json(response.status, { error: message });
  return { ...shaped, headers: { ...response.headers, ...shaped.headers } };
}

/** An error response for a browser: the same status, headers and message, as a page. */
export function asHtml(response: CoreResponse): CoreResponse {
  const message = Buffer.isBuffer(response.body) ? response.body.toString('utf8').trim() : '';
  const shaped = htmlPage(response.status, errorPageView(response.status, message));
  return { ...shaped, headers: { ...response.headers, ...shaped.headers } };
}

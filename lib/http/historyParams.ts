/** Parameters of the history routes (JSON API and monitor pages), checked the same way for both. */
import type { Principal } from '../auth/Principal.js';
import type { Identity } from '../wal/types.js';
import { badRequest, unsupportedMediaType } from './HttpError.js';
import { decodedBody, readAll } from './requestBody.js';
import type { CoreRequest } from './types.js';

/** A sequence number from a query or form field (a `#` in front is allowed). */
export function seqParam(value: string | null | undefined, name: string): number {
  const text = (value ?? '').trim().replace(/^#/, '');
  if (!/^\d{1,12}$/.test(text))
    throw badRequest(`narwal: ${name} must be an entry number, not ${JSON.stringify(value ?? '')}`);
  return Number(text);
}

export function optionalSeq(value: string | null | undefined, name: string): number | undefined {
  return value === null || value === undefined || value === '' ? undefined : seqParam(value, name);
}

/** The form or JSON fields of a small POST body. */
export async function postFields(request: CoreRequest): Promise<Record<string, unknown>> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  const body = (await readAll(decodedBody(request, 64 * 1024, 'the request'))).toString('utf8');
  if (type === 'application/json') {
    try {
      const parsed: unknown = JSON.parse(body);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('not an object');
      return parsed as Record<string, unknown>;
    } catch {
      throw badRequest('narwal: the body must be a JSON object');
    }
  }
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(body));
  throw unsupportedMediaType('narwal: send application/json (or a form)');
}

export function stringField(fields: Record<string, unknown>, name: string): string | undefined {
  const value = fields[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  throw badRequest(`narwal: ${name} must be a string`);
}

/** Who a change made through the API or the monitor is recorded as. */
export function identityOf(principal: Principal, request: CoreRequest): Identity {
  return {
    token: principal.name,
    ...(principal.owner ? { owner: principal.owner } : {}),
    ...(request.headers['user-agent'] ? { agent: request.headers['user-agent'].slice(0, 200) } : {}),
    ...(request.remoteAddress ? { ip: request.remoteAddress } : {}),
  };
}

/**
 * A browser sends the user's Basic credentials with any request to this host, including a form
 * another site submits: a state-changing request must come from this host's own pages.
 */
export function requireSameOrigin(request: CoreRequest): void {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    throw badRequest('narwal: cross-site requests cannot change anything');
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      throw badRequest('narwal: malformed Origin header');
    }
    if (host !== request.headers.host) throw badRequest('narwal: cross-site requests cannot change anything');
  }
}

/** Parameters of the history routes (JSON API and monitor pages), checked the same way for both. */
import type { Principal } from '../auth/Principal.js';
import { readAll } from '../util/readAll.js';
import type { Identity } from '../wal/types.js';
import { badRequest, unsupportedMediaType } from './HttpError.js';
import { type BodyPace, decodedBody } from './requestBody.js';
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

/**
 * The fields of a small POST body: JSON, or for the monitor's own pages (`forms: true`) a form.
 * The JSON API takes JSON only: a content type a cross-site form cannot send without a CORS
 * preflight, which this server never grants.
 */
export async function postFields(
  request: CoreRequest,
  pace: BodyPace,
  options: { forms: boolean },
): Promise<Record<string, unknown>> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json' && !(options.forms && type === 'application/x-www-form-urlencoded'))
    throw unsupportedMediaType(
      options.forms ? 'narwal: send application/json (or a form)' : 'narwal: send application/json',
    );
  const body = (
    await readAll(decodedBody(request, { maxBytes: 64 * 1024, ...pace }, 'the request'))
  ).toString('utf8');
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
  return Object.fromEntries(new URLSearchParams(body));
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

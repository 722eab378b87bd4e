/**
 * The protection JSON API, `/api/v1/repos/OWNER/NAME/-/protection`:
 * - `GET`: the rules in force (read access);
 * - `PUT` with `{"rules": [...]}`: replace every rule; with `{"rule": {...}}`: add the rule, or
 *   replace the one with the same pattern (admin access);
 * - `DELETE` with `?pattern=P`: remove that rule; without: remove every rule (admin access).
 * Answers are JSON: `{"repo", "seq", "rules"}`, plus `"entry"` (the seq of the protect entry that
 * made the change, null when nothing changed) after a change.
 */
import { authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { changeProtection, readProtection } from '../history/protection.js';
import { type ProtectionChange, parseRefPattern, parseRule, parseRules } from '../policy/protectionRules.js';
import { InvalidRepoName, parseRepoName } from '../repoName.js';
import type { Publisher } from '../wal/Publisher.js';
import type { Wal } from '../wal/Wal.js';
import { NOT_STORED } from './cachePolicy.js';
import { badRequest, methodNotAllowed, unsupportedMediaType } from './HttpError.js';
import { type BodyPace, decodedBody } from './requestBody.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface ProtectionRouteDeps {
  readonly wal: Wal;
  readonly publisher: Publisher;
  /** How a request body must keep arriving (else 408). */
  readonly bodyPace: BodyPace;
}

const PATH = /^\/api\/v1\/repos\/(.+)\/-\/protection$/;
const MAX_BODY_BYTES = 256 * 1024;

/** Whether the router should hand this path to `protectionRoute`. */
export function isProtectionPath(path: string): boolean {
  return PATH.test(path);
}

export async function protectionRoute(
  deps: ProtectionRouteDeps,
  request: CoreRequest,
  path: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const repo = repoOf(path);
  if (request.method === 'GET' || request.method === 'HEAD') {
    authorize(principal, repo, 'read', { public: (await deps.wal.readIndex(repo))?.index.public ?? false });
    return json(200, await readProtection(deps.wal, repo));
  }
  if (request.method !== 'PUT' && request.method !== 'DELETE')
    throw methodNotAllowed('narwal: use GET, PUT or DELETE on protection');
  const loaded = await deps.wal.readIndex(repo);
  authorize(principal, repo, 'admin', { public: loaded?.index.public ?? false });
  const change = request.method === 'PUT' ? await putChange(request, deps.bodyPace) : deleteChange(request);
  const who = {
    token: principal?.name ?? 'anonymous',
    ...(principal?.tokenId ? { tokenId: principal.tokenId } : {}),
    ...(principal?.owner ? { owner: principal.owner } : {}),
    ...(request.headers['user-agent'] ? { agent: request.headers['user-agent'].slice(0, 200) } : {}),
    ...(request.remoteAddress ? { ip: request.remoteAddress } : {}),
  };
  return json(200, await changeProtection(deps.publisher, repo, change, who));
}

async function putChange(request: CoreRequest, pace: BodyPace): Promise<ProtectionChange> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw unsupportedMediaType('narwal: send the rules as application/json');
  const chunks: Buffer[] = [];
  for await (const chunk of decodedBody(request, { maxBytes: MAX_BODY_BYTES, ...pace }, 'the rules'))
    chunks.push(Buffer.from(chunk as Buffer));
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw badRequest('narwal: the body is not valid JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badRequest('narwal: send {"rules": [...]} or {"rule": {...}}');
  const fields = Object.keys(body);
  if (fields.length === 1 && fields[0] === 'rules')
    return { op: 'set', rules: parseRules((body as { rules: unknown }).rules) };
  if (fields.length === 1 && fields[0] === 'rule')
    return { op: 'upsert', rule: parseRule((body as { rule: unknown }).rule) };
  throw badRequest('narwal: send {"rules": [...]} or {"rule": {...}}');
}

function deleteChange(request: CoreRequest): ProtectionChange {
  const pattern = request.query.get('pattern');
  return pattern === null ? { op: 'set', rules: [] } : { op: 'remove', pattern: parseRefPattern(pattern) };
}

function repoOf(path: string): string {
  const raw = PATH.exec(path)?.[1] ?? '';
  try {
    return parseRepoName(raw);
  } catch (error) {
    if (error instanceof InvalidRepoName) throw badRequest(`narwal: ${error.message}`);
    throw error;
  }
}

function json(status: number, value: unknown): CoreResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...NOT_STORED },
    body: Buffer.from(`${JSON.stringify(value)}\n`),
  };
}

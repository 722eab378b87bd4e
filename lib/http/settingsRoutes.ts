/**
 * A repository's settings over the JSON API, `/api/v1/repos/OWNER/NAME/-/settings`:
 * - `GET`: `{"repo", "seq", "settings": {"lfsPushCheck": true}}` (read access);
 * - `PUT` `{"lfsPushCheck": false}` (`application/json`, admin access): a settings entry in the
 *   log; answers the settings plus `"entry"`, its seq (null when nothing changed).
 */
import { authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import { changeSettings, parseSettingsChange, readSettings } from '../lfs/settings.js';
import { readAll } from '../util/readAll.js';
import type { Publisher } from '../wal/Publisher.js';
import type { Wal } from '../wal/Wal.js';
import { json } from './errorResponse.js';
import { badRequest, methodNotAllowed, unsupportedMediaType } from './HttpError.js';
import { whoOf } from './lfsLockRoutes.js';
import { repoFromPath } from './repoPath.js';
import { type BodyPace, decodedBody } from './requestBody.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface SettingsRouteDeps {
  readonly wal: Wal;
  readonly publisher: Publisher;
  readonly bodyPace: BodyPace;
}

const PATH = /^\/api\/v1\/repos\/(.+)\/-\/settings$/;

export function isSettingsPath(path: string): boolean {
  return PATH.test(path);
}

export async function settingsRoute(
  deps: SettingsRouteDeps,
  request: CoreRequest,
  path: string,
  principal: Principal | null,
): Promise<CoreResponse> {
  const repo = repoFromPath(PATH.exec(path)?.[1] ?? '');
  const loaded = await deps.wal.readIndex(repo);
  const visibility = { public: loaded?.index.public ?? false };
  if (request.method === 'GET' || request.method === 'HEAD') {
    authorize(principal, repo, 'read', visibility);
    return json(200, await readSettings(deps.wal, repo));
  }
  if (request.method !== 'PUT') throw methodNotAllowed('narwal: use GET or PUT on settings');
  authorize(principal, repo, 'admin', visibility);
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json')
    throw unsupportedMediaType('narwal: send the settings as application/json');
  const bytes = await readAll(
    decodedBody(request, { maxBytes: 64 * 1024, ...deps.bodyPace }, 'the settings'),
  );
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw badRequest('narwal: the body is not valid JSON');
  }
  const change = parseSettingsChange(body);
  return json(200, await changeSettings(deps.publisher, repo, change, whoOf(principal, request)));
}

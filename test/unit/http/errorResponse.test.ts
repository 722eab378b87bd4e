import { describe, expect, it } from 'vitest';
import { AccessDenied } from '../../../lib/auth/AccessDenied.js';
import { BuildSuperseded } from '../../../lib/cache/RepoCache.js';
import { asUploadPackError, errorResponse } from '../../../lib/http/errorResponse.js';
import { unauthorized } from '../../../lib/http/HttpError.js';
import { silentLogger } from '../../../lib/log.js';
import { PresenceUnavailable } from '../../../lib/presence/PresenceStore.js';
import { ConditionalConflict, StoreUnavailable } from '../../../lib/store/errors.js';
import { CacheChanged, GenerationLost, GitRefused, RepoBeingCreated } from '../../../lib/transfer/errors.js';
import { Busy } from '../../../lib/util/Busy.js';

const answer = (error: unknown) => {
  const response = errorResponse(error, 'req-1', silentLogger);
  return { status: response.status, headers: response.headers, text: String(response.body) };
};

describe('errorResponse', () => {
  it.each([
    ['a busy node', new Busy('narwal: server busy; retry in a moment')],
    ['the store being unavailable', new StoreUnavailable('k', 'down')],
    ['a store race left unabsorbed', new ConditionalConflict('k')],
    ['presence records being unavailable', new PresenceUnavailable('throttled')],
    [
      'a cache build the cache changed under',
      new BuildSuperseded('the cache of r changed while g was built'),
    ],
  ])('answers %s with a retryable 503 and a message', (_, error) => {
    const { status, headers, text } = answer(error);
    expect(status).toBe(503);
    expect(headers['retry-after']).toBe('1');
    expect(text).toMatch(/^narwal: .*retry/);
  });

  it('keeps the status and headers of errors meant for the client', () => {
    const { status, headers } = answer(unauthorized('narwal: authentication required'));
    expect(status).toBe(401);
    expect(headers['www-authenticate']).toMatch(/^Basic/);
  });

  it('answers anything else with a plain 500 naming the request, never a stack', () => {
    const { status, text } = answer(new TypeError('x is undefined'));
    expect(status).toBe(500);
    expect(text).toBe('narwal: internal error (request req-1)\n');
  });
});

describe('errorResponse for refused access', () => {
  it('asks for credentials, forbids, or answers as for a missing repository', () => {
    const unauthenticated = answer(new AccessDenied('Unauthenticated', 'a/b', 'read', null));
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers['www-authenticate']).toMatch(/^Basic realm="narwal"/);
    expect(unauthenticated.text).toBe('narwal: authentication required for a/b\n');
    const forbidden = answer(new AccessDenied('Forbidden', 'a/b', 'write', 'ci'));
    expect(forbidden.status).toBe(403);
    expect(forbidden.text).toBe('narwal: token ci may not push to a/b\n');
    const hidden = answer(new AccessDenied('Hidden', 'a/b', 'write', 'ci'));
    expect(hidden.status).toBe(404);
    expect(hidden.text).toBe('narwal: repository a/b not found\n');
    expect(hidden.headers['www-authenticate']).toBeUndefined();
  });
});

describe('errorResponse for the transfers', () => {
  it('answers them as it did while they were HttpErrors of the git routes', () => {
    const refused = answer(new GitRefused('upload-pack', 'fatal: protocol error\nfatal: bad want line\n'));
    expect(refused).toMatchObject({
      status: 400,
      text: 'narwal: git upload-pack refused the request: fatal: bad want line\n',
    });
    const changed = answer(new CacheChanged());
    expect(changed).toMatchObject({
      status: 503,
      text: 'narwal: the cache changed while the refs were read; retry\n',
    });
    expect(changed.headers['retry-after']).toBe('1');
    const lost = answer(new GenerationLost(new Error('ENOENT')));
    expect(lost).toMatchObject({
      status: 503,
      text: "narwal: the server's cache of the repository changed before the push was read; retry the push\n",
    });
    expect(lost.headers['retry-after']).toBe('1');
    expect(answer(new RepoBeingCreated('team/app'))).toMatchObject({
      status: 409,
      text: 'narwal: repository team/app is being created; retry\n',
    });
  });
});

describe('asUploadPackError', () => {
  it("answers a fetch's server-side failure as an ERR packet git prints, keeping its other headers", () => {
    const response = asUploadPackError(
      errorResponse(new Busy('narwal: server busy; retry'), 'req-1', silentLogger),
    );
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-git-upload-pack-result');
    expect(response.headers['retry-after']).toBe('1');
    expect(String(response.body)).toBe('0023ERR narwal: server busy; retry\n');
    const internal = asUploadPackError(errorResponse(new TypeError('x'), 'req-1', silentLogger));
    expect(String(internal.body)).toBe('002fERR narwal: internal error (request req-1)\n');
  });

  it('keeps what a request got wrong as its 4xx, and a 401 asking for credentials', () => {
    for (const error of [new GitRefused('upload-pack', 'fatal: bad line'), unauthorized('narwal: sign in')]) {
      const original = errorResponse(error, 'req-1', silentLogger);
      expect(asUploadPackError(original)).toBe(original);
    }
  });
});

/** How the router and the gateway's classifier both read a path (routeOf.ts). */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../lib/http/HttpError.js';
import { decodePath, routeOf } from '../../../lib/http/routeOf.js';

describe('routeOf', () => {
  it.each([
    ['/healthz', { kind: 'health' }],
    ['/api/v1/repos/team/app/-/protection', { kind: 'protection', repoPart: 'team/app' }],
    ['/api/v1/tokens', { kind: 'tokens' }],
    ['/api/v1/tokens/ci', { kind: 'tokens' }],
    ['/', { kind: 'front' }],
    ['/-/login', { kind: 'login' }],
    ['/api/v1/repos/team/app/-/log', { kind: 'api', path: '/repos/team/app/-/log' }],
    ['/team/app.git/info/refs', { kind: 'git', suffix: '/info/refs', repoPart: 'team/app.git' }],
    [
      '/team/app.git@3/git-upload-pack',
      { kind: 'git', suffix: '/git-upload-pack', repoPart: 'team/app.git@3' },
    ],
    ['/team/app/-/entry/2', { kind: 'page', path: 'team/app/-/entry/2' }],
    [
      '/team/app.git/uri-packs/7/pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.pack',
      {
        kind: 'uriPack',
        repoPart: 'team/app',
        form: 'pack',
        seq: 7,
        pack: 'pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      },
    ],
    [
      '/team/app.git/uri-bundles/7/pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bundle',
      {
        kind: 'uriPack',
        repoPart: 'team/app',
        form: 'bundle',
        seq: 7,
        pack: 'pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      },
    ],
    // A pack's link in a bundle's place (or the other way) names nothing narwal serves.
    [
      '/team/app.git/uri-packs/7/pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bundle',
      { kind: 'page', path: 'team/app.git/uri-packs/7/pack-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bundle' },
    ],
    [
      '/team/app.git/uri-packs/7/pack-xyz.pack',
      { kind: 'page', path: 'team/app.git/uri-packs/7/pack-xyz.pack' },
    ],
  ])('reads %s', (path, route) => {
    expect(routeOf(path)).toEqual(route);
  });
});

describe('decodePath', () => {
  it('decodes, and drops trailing slashes', () => {
    expect(decodePath('/team/caf%C3%A9/')).toBe('/team/café');
    expect(decodePath('')).toBe('/');
  });

  it.each([
    ['/team%2Fapp.git/info/refs', 'narwal: encoded "/" or "\\" in the URL path'],
    ['/team/app%5c', 'narwal: encoded "/" or "\\" in the URL path'],
    ['/team/%E0%A4%A', 'narwal: malformed percent-encoding in the URL path'],
    ['/team/a%00pp', 'narwal: invalid characters in the URL path'],
  ])('refuses %s with a 400 that says why', (raw, message) => {
    expect(() => decodePath(raw)).toThrow(new HttpError(400, message));
  });
});

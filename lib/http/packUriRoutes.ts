/**
 * The URIs of a clone's `packfile-uris` answer (lib/transfer/answerWithPackUris.ts), and the route
 * that serves them when the store cannot:
 *
 *   GET|HEAD /<repo>.git/uri-packs/<seq>/<pack>.pack?expires=T&signature=S
 *   GET|HEAD /<repo>.git/uri-bundles/<seq>/<pack>.bundle?expires=T&signature=S
 *
 * On S3 a URI is a presigned GET of the stored pack, so its bytes never pass through narwal. On
 * the embedded store narwal streams the pack itself, from this route: the URL is signed
 * (lib/auth/UrlSigner.ts) for the repository, the state and the pack, and expires, because git
 * fetches it in a process with no credentials (`git http-fetch`). The route checks the signature
 * before anything else, then that the log names the pack for that state, and only reads.
 *
 * A bundle of the v2 `bundle-uri` command (lib/transfer/answerBundleUri.ts) is a stored pack
 * behind a header narwal writes, so it is always served by narwal, on S3 too.
 */
import type { UrlSigner } from '../auth/UrlSigner.js';
import type { Presigner } from '../store/ObjectStore.js';
import type { PackLink } from '../transfer/answerWithPackUris.js';
import { readStateBundle, readStatePack, type StatePackDeps } from '../transfer/statePack.js';
import { RepoNotFound } from '../wal/errors.js';
import { packKey } from '../wal/keys.js';
import type { Wal } from '../wal/Wal.js';
import { baseUrl, type SiteAddress } from './baseUrl.js';
import { methodNotAllowed } from './HttpError.js';
import { repoFromPath } from './repoPath.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface PackUriSettings {
  readonly signer: UrlSigner;
  /** How long a URI may be used: the client fetches it once the inline pack is in. */
  readonly ttlSeconds: number;
  /** The store's, when clients can reach it themselves (S3): URIs are then presigned GETs. */
  readonly presigner?: Presigner;
}

export interface PackUriRouteDeps extends StatePackDeps {
  readonly wal: Pick<Wal, 'readIndex'>;
  readonly packUris?: PackUriSettings;
}

export interface PackLinkDeps extends SiteAddress {
  readonly packUris?: PackUriSettings;
  /** Base URL of narwal's own transfers when they must not go where the request came (the pool). */
  readonly lfsTransferBase?: string;
}

/** `/<repo>.git/uri-packs/<seq>/<pack>.pack` or `uri-bundles/<seq>/<pack>.bundle`, once decoded. */
const URI_PACK_PATH = /^\/(.+)\.git\/uri-(pack|bundle)s\/(\d{1,12})\/(pack-[0-9a-f]{40})\.(pack|bundle)$/;

export interface UriPackPath {
  readonly repoPart: string;
  /** The stored pack itself, or the pack as a bundle of the state's refs. */
  readonly form: 'pack' | 'bundle';
  readonly seq: number;
  readonly pack: string;
}

export function uriPackPathParts(path: string): UriPackPath | null {
  const match = URI_PACK_PATH.exec(path);
  if (match === null || match[2] !== match[5]) return null;
  const form = match[2] === 'bundle' ? 'bundle' : 'pack';
  return { repoPart: match[1] ?? '', form, seq: Number(match[3]), pack: match[4] ?? '' };
}

const subject = (form: UriPackPath['form'], repo: string, seq: number, pack: string) =>
  `uri-${form}\n${repo}\n${seq}\n${pack}`;

function signedLink(
  settings: PackUriSettings,
  base: string,
  form: UriPackPath['form'],
  repo: string,
): PackLink {
  return async (pack, seq) => {
    const signed = await settings.signer.sign(subject(form, repo, seq, pack), settings.ttlSeconds);
    return `${base}/${repo}.git/uri-${form}s/${seq}/${pack}.${form}?expires=${signed.expires}&signature=${signed.signature}`;
  };
}

/** How a clone of `repo` through `request` names its stored packs, or undefined when it does not. */
export function packLinkFor(deps: PackLinkDeps, request: CoreRequest, repo: string): PackLink | undefined {
  const settings = deps.packUris;
  if (settings === undefined) return undefined;
  const presigner = settings.presigner;
  if (presigner !== undefined)
    return async (pack) =>
      (
        await presigner.presign(packKey(repo, pack, 'pack'), {
          method: 'GET',
          expiresInSeconds: settings.ttlSeconds,
        })
      ).url;
  return signedLink(settings, deps.lfsTransferBase ?? baseUrl(deps, request), 'pack', repo);
}

/** How the `bundle-uri` command of `repo` names its bundles, or undefined when it is not served. */
export function bundleLinkFor(deps: PackLinkDeps, request: CoreRequest, repo: string): PackLink | undefined {
  const settings = deps.packUris;
  if (settings === undefined) return undefined;
  return signedLink(settings, deps.lfsTransferBase ?? baseUrl(deps, request), 'bundle', repo);
}

export async function uriPackRoute(
  deps: PackUriRouteDeps,
  request: CoreRequest,
  to: UriPackPath,
): Promise<CoreResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD')
    throw methodNotAllowed('narwal: use GET to fetch a pack');
  const repo = repoFromPath(to.repoPart);
  const settings = deps.packUris;
  if (settings === undefined) throw new RepoNotFound(repo);
  await settings.signer.verify(
    subject(to.form, repo, to.seq, to.pack),
    request.query.get('expires'),
    request.query.get('signature'),
  );
  const loaded = await deps.wal.readIndex(repo);
  if (loaded === null) throw new RepoNotFound(repo);
  const read = to.form === 'bundle' ? readStateBundle : readStatePack;
  const pack = await read(deps, loaded, to.seq, to.pack);
  const headers = {
    'content-type': to.form === 'bundle' ? 'application/octet-stream' : 'application/x-git-packed-objects',
    'content-length': String(pack.size),
    // The URL expires and its bytes never change: a shared cache may keep them, never past that.
    'cache-control': 'private, max-age=60',
  };
  if (request.method === 'HEAD') {
    pack.body.destroy();
    return { status: 200, headers, body: Buffer.alloc(0) };
  }
  return { status: 200, headers, body: pack.body };
}

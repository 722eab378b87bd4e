/** The one guard against cross-site requests that change state (CSRF). */
import { badRequest, forbidden } from './HttpError.js';
import type { CoreRequest } from './types.js';

/** Methods that change nothing (RFC 9110 section 9.2.1), so a cross-site one is harmless. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * A browser sends the user's Basic credentials with any request to this host, including a form
 * another site submits: a request that may change state (any method but GET and HEAD, on every
 * route: git's, the JSON API's, the monitor's) must come from this host's own pages. The core
 * handler calls this once, before routing, so no route can forget it.
 *
 * Fetch Metadata (`Sec-Fetch-Site`) says where a request comes from when the browser sends it;
 * otherwise `Origin` must name this host. Browsers send `Origin` with every request whose method
 * is neither GET nor HEAD (the Fetch standard, "append a request `Origin` header"), and send
 * `null` for a sandboxed frame, an opaque origin or a no-referrer policy, so `null` is never
 * taken for this host. A request with neither header is not a browser's: git, curl, scripts.
 */
export function requireSameOrigin(request: CoreRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw crossSite();
  const origin = request.headers.origin;
  if (origin === undefined) return;
  if (origin === 'null') throw crossSite();
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw badRequest('narwal: malformed Origin header');
  }
  if (host !== request.headers.host) throw crossSite();
}

const crossSite = () => forbidden('narwal: cross-site requests cannot change anything');

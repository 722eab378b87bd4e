/**
 * The base URL shown in clone commands and links: NARWAL_PUBLIC_URL when configured, else the
 * host the client used to reach this server (a server listening on port 0 or on 0.0.0.0 has no
 * better name for itself).
 */
import type { CoreRequest } from './types.js';

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export function baseUrl(configured: string | undefined, request: CoreRequest): string {
  if (configured !== undefined) return configured;
  const host = request.headers.host;
  return `http://${host !== undefined && HOST.test(host) ? host : 'localhost'}`;
}

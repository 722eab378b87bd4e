/**
 * The base URL shown in clone commands and links. NARWAL_PUBLIC_URL when configured; else the
 * host the client named, but only when NARWAL_ALLOWED_HOSTS lists it; else the address and port
 * the request arrived on, the listening address as this connection sees it (a server on 0.0.0.0
 * answers with the interface the client reached). The Host header is the client's to choose, so it
 * never decides by itself where a clone URL or a link points.
 */
import type { CoreRequest } from './types.js';

/** Where links point: what the configuration says. */
export interface SiteAddress {
  readonly publicUrl?: string | undefined;
  /** Lower-case `host` or `host:port` names a request's Host may name to be used in links. */
  readonly allowedHosts?: readonly string[];
}

export function baseUrl(site: SiteAddress, request: CoreRequest): string {
  if (site.publicUrl !== undefined) return site.publicUrl;
  const host = request.headers.host?.trim().toLowerCase();
  if (host !== undefined && site.allowedHosts?.includes(host)) return `http://${host}`;
  const { localAddress, localPort } = request;
  if (localAddress === undefined || localPort === undefined) return 'http://localhost';
  return `http://${hostOf(localAddress)}:${localPort}`;
}

/** An IPv4 address as is (also when node reports it IPv4-mapped), an IPv6 one in brackets. */
function hostOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return mapped;
  return address.includes(':') ? `[${address}]` : address;
}

/**
 * Addresses a webhook must not reach unless the operator says so: loopback, link-local (the
 * cloud's instance metadata at 169.254.169.254 among them), private and other special-purpose
 * ranges (RFC 6890's registries; RFC 4193 unique-local and RFC 4291 link-local for IPv6). A
 * webhook is the one request narwal makes to a URL it is given, so without this a webhook setting
 * could make the server call services that only trust their own network.
 */
import { type LookupAddress, type LookupOptions, lookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, instance metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  BLOCKED.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  BLOCKED.addSubnet(network, prefix, 'ipv6');

/** Whether `address` (an IP literal, IPv6 with or without brackets) is in a blocked range. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family !== 6) return false;
  const embedded = embeddedIpv4(bare);
  return embedded !== undefined ? BLOCKED.check(embedded, 'ipv4') : BLOCKED.check(bare, 'ipv6');
}

/** A host name that always means this machine (RFC 6761 section 6.3: `localhost` and below). */
export function isLocalName(host: string): boolean {
  return /(^|\.)localhost\.?$/i.test(host);
}

/**
 * The IPv4 address an IPv6 one carries: IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 section 2.5.5.2),
 * IPv4-compatible `::a.b.c.d` and the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052).
 */
function embeddedIpv4(address: string): string | undefined {
  const groups = expand(address);
  if (groups === undefined) return undefined;
  const head = groups.slice(0, 6).join(':');
  const mapped = head === '0:0:0:0:0:ffff' || head === '0:0:0:0:0:0' || head === '64:ff9b:0:0:0:0';
  const [high = 0, low = 0] = groups.slice(6);
  // ::1 and :: are IPv6's own loopback and unspecified addresses, not IPv4-compatible ones.
  if (!mapped || (head === '0:0:0:0:0:0' && high === 0 && low <= 1)) return undefined;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad becomes two groups). */
function expand(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const head = parse(left);
  const tail = right === undefined ? [] : parse(right);
  const fill = 8 - head.length - tail.length;
  if (fill < 0 || (right === undefined && fill !== 0)) return undefined;
  const groups = [...head, ...Array<number>(fill).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** A webhook's host resolved (or was written as) an address it may not reach. */
export class PrivateAddressRefused extends Error {
  readonly code = 'PrivateAddressRefused';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      `${host} resolves to a loopback, link-local or private address (${address}); set NARWAL_WEBHOOK_ALLOW_PRIVATE=true to allow it`,
    );
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * `dns.lookup` for node:http's `lookup` option that fails the connection when the name resolves to
 * a blocked address: the check applies to the addresses actually connected to, so a name that
 * resolves elsewhere later (DNS rebinding) cannot slip through a check made earlier. Every address
 * the name has is checked, whichever one the connection would use.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    const [first] = addresses ?? [];
    if (error || first === undefined) {
      callback(error ?? Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    const blocked = addresses.find((a) => isPrivateAddress(a.address));
    if (blocked) callback(new PrivateAddressRefused(hostname, blocked.address), []);
    else if (options.all) callback(null, addresses);
    else callback(null, first.address, first.family);
  });
}

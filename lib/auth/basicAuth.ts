/**
 * HTTP Basic (RFC 7617) with the token as the password. Clients that put the token in the user
 * name and leave the password empty are accepted too.
 */
export function tokenFromAuthorization(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return decoded || null;
  const password = decoded.slice(colon + 1);
  return password !== '' ? password : decoded.slice(0, colon) || null;
}

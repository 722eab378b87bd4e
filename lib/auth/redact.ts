/**
 * Scrubs credentials from text bound for a log: narwal tokens (the public id is kept, so a line
 * still says which token it was), the user-info of URLs, HTTP Basic and Bearer credentials, and
 * any exact secret the process was configured with. The log sink applies it to every line, so a
 * field that carries a secret by mistake is covered too.
 */
const RULES: readonly [RegExp, string][] = [
  [/\bnwl_([0-9a-f]{16})_[A-Za-z0-9_-]+/g, 'nwl_$1_[redacted]'],
  [/\bnwl_(?![0-9a-f]{16}_\[redacted\])[A-Za-z0-9_-]{8,}/g, 'nwl_[redacted]'],
  [/\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/\s@"'<>]+@/g, '$1[redacted]@'],
  [/\b(Basic|Bearer)(\s+|%20)[A-Za-z0-9+/=._~-]+/gi, '$1 [redacted]'],
];

/** Header and field names whose values are credentials whatever they look like. */
export const SECRET_FIELD = /^(authorization|proxy-authorization|cookie|set-cookie|password|secret)$/i;

/** Secrets shorter than this are refused by configuration, so scrubbing them cannot eat text. */
export const MIN_SECRET_LENGTH = 16;

/**
 * A run of text that may hold a percent-encoded secret: no whitespace, quote or backslash (so a
 * run never crosses the bounds of a JSON string), and at least one `%XX`.
 */
const ENCODED_RUN = /[^\s"\\]*%[0-9A-Fa-f]{2}[^\s"\\]*/g;

/**
 * `secrets` is read at every call, so a secret learned later (one read from Secrets Manager once
 * the app has started) is scrubbed from then on when its holder adds it to the list.
 */
export function redactor(secrets: readonly (string | undefined)[] = []): (text: string) => string {
  const scrub = (text: string) => {
    const exact = secrets.filter((s): s is string => s !== undefined && s.length >= MIN_SECRET_LENGTH);
    let out = text;
    for (const secret of exact) out = out.split(secret).join('[redacted]');
    for (const secret of exact) {
      // The same secret as it appears inside a JSON string or a URL.
      for (const form of [JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])
        if (form !== secret) out = out.split(form).join('[redacted]');
    }
    for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
    return out;
  };
  // A client may percent-encode any byte of a path (RFC 3986 section 2.1), so a secret is looked
  // for in the decoded form of every encoded run too; a run that holds one is written decoded and
  // scrubbed, with what is not plain text encoded again.
  return (text) =>
    scrub(text).replace(ENCODED_RUN, (run) => {
      const decoded = percentDecoded(run);
      const scrubbed = scrub(decoded);
      return scrubbed === decoded ? run : reencoded(scrubbed);
    });
}

/** Decodes every `%XX` (up to three times, for double encoding); anything else is left as is. */
function percentDecoded(text: string): string {
  let out = text;
  for (let round = 0; round < 3 && /%[0-9A-Fa-f]{2}/.test(out); round++) {
    out = out.replace(/(?:%[0-9A-Fa-f]{2})+/g, (bytes) => {
      const raw = Buffer.from(bytes.replace(/%/g, ''), 'hex');
      const text = raw.toString('utf8');
      return text.includes('\uFFFD') ? raw.toString('latin1') : text;
    });
  }
  return out;
}

/** Percent-encodes what may not stand in a path or a JSON string as it is. */
function reencoded(text: string): string {
  return text.replace(/[^A-Za-z0-9._~!$&'()*+,;=:@/[\]-]/gu, (char) => {
    try {
      return encodeURIComponent(char);
    } catch {
      return '%EF%BF%BD'; // a lone surrogate: U+FFFD in its place
    }
  });
}

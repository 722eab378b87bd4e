/**
 * What caches may keep of narwal's answers: nothing. Almost every answer is behind credentials
 * (a token's view of private repositories, the log, the rules) or about a state that moves with
 * every push, so no cache, shared or the browser's, may store it (RFC 9111 section 5.2.2.5,
 * `no-store`; `private` keeps shared caches out even where `no-store` is not understood). git
 * itself ignores these headers; `Expires` and `Pragma` are for HTTP/1.0 caches, as git
 * http-backend sends them.
 */
export const NOT_STORED: Readonly<Record<string, string>> = {
  'cache-control': 'private, no-store, max-age=0',
  expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  pragma: 'no-cache',
};

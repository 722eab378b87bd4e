import { describe, expect, it } from 'vitest';
import { acceptsUri, offerPackfileUris, packfileUrisSection } from '../../../lib/protocol/packfileUris.js';
import { encodePktLine, FLUSH_PKT } from '../../../lib/protocol/pktLine.js';

const advertisement = (fetch: string) =>
  Buffer.concat(
    [
      'version 2\n',
      'agent=git/2.39.5\n',
      'ls-refs=unborn\n',
      fetch,
      'server-option\n',
      'object-format=sha1\n',
    ]
      .map((line) => encodePktLine(line))
      .concat(FLUSH_PKT),
  );

describe('packfile-uris', () => {
  it('offers packfile URIs in the fetch capability and changes nothing else', () => {
    const offered = offerPackfileUris(advertisement('fetch=shallow wait-for-done filter\n'));
    expect(offered.equals(advertisement('fetch=shallow wait-for-done filter packfile-uris\n'))).toBe(true);
    expect(offerPackfileUris(advertisement('fetch\n')).equals(advertisement('fetch=packfile-uris\n'))).toBe(
      true,
    );
    const already = advertisement('fetch=shallow packfile-uris\n');
    expect(offerPackfileUris(already)).toBe(already);
    const notPackets = Buffer.from('not pkt-lines');
    expect(offerPackfileUris(notPackets)).toBe(notPackets);
  });

  it('writes the section git reads: the header, one line per pack, a delim-pkt', () => {
    const hash = 'a'.repeat(40);
    expect(packfileUrisSection([{ hash, uri: 'https://x/p.pack' }]).toString()).toBe(
      `0012packfile-uris\n003e${hash} https://x/p.pack\n0001`,
    );
  });

  it('sends a URI only in a protocol the client named', () => {
    expect(acceptsUri(['https'], 'https://bucket/p')).toBe(true);
    expect(acceptsUri(['https'], 'http://host/p')).toBe(false);
    expect(acceptsUri(['http', 'https'], 'HTTP://host/p')).toBe(true);
    expect(acceptsUri(['http'], 'not a uri')).toBe(false);
  });
});

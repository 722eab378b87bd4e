/**
 * Git configuration for upload-pack (clone and fetch); each line says why. `packObjectsHook` is
 * the pack cache (packCacheHook.ts), null when it is turned off.
 */
export function uploadPackConfig(packObjectsHook: string | null = null): string[] {
  return [
    // Full clones of a generation are packed once and then served from the file. git honours this
    // setting only from the command line or system/global config, never from a repository's.
    ...(packObjectsHook ? ['-c', `uploadpack.packObjectsHook=${packObjectsHook}`] : []),
    // Partial clone (--filter=blob:none).
    ...['-c', 'uploadpack.allowFilter=true'],
    // A partial clone later fetches the blobs it lacks by oid. Protocol v2 accepts any `want`
    // (gitprotocol-v2(5): "Wants can be anything and are not limited to advertised objects"); v0
    // and v1 refuse an unadvertised oid unless told to, which broke partial clones over v0.
    ...['-c', 'uploadpack.allowAnySHA1InWant=true'],
    // No `uploadpack.allowRefInWant`: git's upload-pack (2.39 here; upstream had only a proposed
    // fix in December 2025) answers a v2 fetch with both want-ref and deepen by wanted-refs before
    // shallow-info, against gitprotocol-v2(5), and git's own client then fails every
    // `clone --depth` ("expected 'packfile', received 'shallow-info'"). Without ref-in-want,
    // clients want the oids ls-refs listed, which a generation always holds.
  ];
}

/**
 * The value git sends in `Git-Protocol` (e.g. `version=2`), passed on as GIT_PROTOCOL only when
 * it is made of the characters git itself uses there (gitprotocol-http(5), "Git-Protocol").
 */
export function gitProtocolEnv(header: string | undefined): Record<string, string> {
  if (header === undefined || header.length > 256 || !/^[A-Za-z0-9=:._-]+$/.test(header)) return {};
  return { GIT_PROTOCOL: header };
}

export function wantsProtocolV2(header: string | undefined): boolean {
  return header?.split(':').includes('version=2') ?? false;
}

/** The client asked for protocol v1 and nothing newer (receive-pack answers v2 requests in v0). */
export function wantsProtocolV1(header: string | undefined): boolean {
  const versions = header?.split(':').filter((p) => p.startsWith('version=')) ?? [];
  return versions.includes('version=1') && !versions.includes('version=2');
}

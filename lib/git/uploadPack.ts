/** Git configuration for upload-pack (clone and fetch); each line says why. */
export function uploadPackConfig(): string[] {
  return [
    // Partial clone (--filter=blob:none) and fetching by ref name in protocol v2.
    ...['-c', 'uploadpack.allowFilter=true'],
    ...['-c', 'uploadpack.allowRefInWant=true'],
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

/**
 * What a file is, for the file page and the raw download: binary or text (git's own test: a NUL
 * byte in the first 8000 bytes, xdiff-interface.c buffer_is_binary), an LFS pointer (the Git LFS
 * pointer spec: `version https://git-lfs.github.com/spec/v1`, then `oid sha256:...` and `size`),
 * and the Content-Type of its raw bytes.
 *
 * Raw downloads never run in this site's origin: text of any kind (HTML included) is served as
 * text/plain, and every raw answer carries a sandboxing Content-Security-Policy (see
 * RAW_HEADERS), so an SVG or HTML file in a repository cannot script the pages of the host.
 */

const FIRST_BYTES = 8000;

export function isBinary(data: Buffer): boolean {
  return data.subarray(0, FIRST_BYTES).includes(0);
}

export interface LfsPointer {
  readonly oid: string;
  readonly size: number;
}

/** The pointer a file is, or null (pointers are small: the spec keeps them under 1024 bytes). */
export function lfsPointer(data: Buffer): LfsPointer | null {
  if (data.length > 1024) return null;
  const text = data.toString('utf8');
  if (!text.startsWith('version https://git-lfs.github.com/spec/v1\n')) return null;
  const oid = /^oid sha256:([0-9a-f]{64})$/m.exec(text);
  const size = /^size (\d+)$/m.exec(text);
  if (oid === null || size === null) return null;
  return { oid: oid[1] as string, size: Number(size[1]) };
}

/** Types that are safe to hand a browser as they are (no script runs in them). */
const BINARY_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/vnd.microsoft.icon',
  bmp: 'image/bmp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  bz2: 'application/x-bzip2',
  xz: 'application/x-xz',
  zst: 'application/zstd',
  '7z': 'application/x-7z-compressed',
  wasm: 'application/wasm',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  wav: 'audio/wav',
  mp4: 'video/mp4',
  webm: 'video/webm',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
};

/** Images a page may show with `<img>` (SVG too: an image element never runs its scripts). */
const IMAGE_EXTENSIONS = new Set(['png', 'jpg', 'jpeg', 'gif', 'webp', 'avif', 'ico', 'bmp', 'svg']);

function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1).toLowerCase();
}

export function isImage(name: string): boolean {
  return IMAGE_EXTENSIONS.has(extensionOf(name));
}

/** The Content-Type of a file's raw bytes. */
export function rawContentType(name: string, binary: boolean): string {
  const extension = extensionOf(name);
  if (extension === 'svg') return 'image/svg+xml';
  const known = BINARY_TYPES[extension];
  if (known) return known;
  return binary ? 'application/octet-stream' : 'text/plain; charset=utf-8';
}

/**
 * Headers of every raw answer: the bytes are never sniffed into another type, and whatever a
 * browser makes of them runs sandboxed (a unique origin, no script, no plugin), loading nothing.
 */
export const RAW_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; sandbox",
  'cross-origin-resource-policy': 'same-origin',
};

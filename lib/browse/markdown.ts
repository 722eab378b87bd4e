/**
 * A README as a page shows it: Markdown rendered by markdown-it (CommonMark, with the HTML a
 * README may carry), then everything it produced sanitized by sanitize-html against an allowlist:
 * no script, style, iframe, form, SVG or MathML, no event handler or `style` attribute, links
 * only to http(s), mailto or this repository, images only from this repository (the page's
 * Content-Security-Policy loads nothing from elsewhere anyway). Relative links are made to point
 * at the repository's own pages: `docs/x.md` to the file page, an image to its raw bytes.
 *
 * Both libraries load on first use: a node that never shows a README never pays for them.
 */
import type MarkdownIt from 'markdown-it';
import type { IOptions } from 'sanitize-html';

type Sanitize = (html: string, options: IOptions) => string;

let loaded: Promise<{ markdown: MarkdownIt; sanitize: Sanitize }> | undefined;

function libraries(): Promise<{ markdown: MarkdownIt; sanitize: Sanitize }> {
  loaded ??= (async () => {
    const [{ default: MarkdownItClass }, { default: sanitize }] = await Promise.all([
      import('markdown-it'),
      import('sanitize-html'),
    ]);
    return { markdown: new MarkdownItClass({ html: true, linkify: true }), sanitize };
  })();
  return loaded;
}

/** Loads the libraries now (a node warming up), so the first README does not wait for them. */
export function preloadMarkdown(): Promise<void> {
  return libraries().then(() => {});
}

export interface LinkBase {
  /** `/REPO/-/blob/REV`: where relative links to files go. */
  readonly blob: string;
  /** `/REPO/-/raw/REV`: where relative images go. */
  readonly raw: string;
  /** The README's directory inside the repository, '' at the root. */
  readonly dir: string;
}

const ALLOWED_TAGS = [
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'p',
  'br',
  'hr',
  'blockquote',
  'pre',
  'code',
  'kbd',
  'samp',
  'var',
  'em',
  'strong',
  'b',
  'i',
  'u',
  's',
  'del',
  'ins',
  'sub',
  'sup',
  'small',
  'mark',
  'abbr',
  'a',
  'img',
  'ul',
  'ol',
  'li',
  'dl',
  'dt',
  'dd',
  'table',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'th',
  'td',
  'caption',
  'details',
  'summary',
  'div',
  'span',
  'picture',
];

export async function renderMarkdown(source: string, base: LinkBase): Promise<string> {
  const { markdown, sanitize } = await libraries();
  const rendered = markdown.render(source);
  return sanitize(rendered, {
    allowedTags: ALLOWED_TAGS,
    allowedAttributes: {
      a: ['href', 'title', 'id', 'name'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      th: ['align', 'colspan', 'rowspan'],
      td: ['align', 'colspan', 'rowspan'],
      ol: ['start'],
      code: ['class'],
      details: ['open'],
      h1: ['id'],
      h2: ['id'],
      h3: ['id'],
      h4: ['id'],
      h5: ['id'],
      h6: ['id'],
    },
    allowedClasses: { code: [/^language-[\w+-]+$/] },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesByTag: { img: [] },
    allowProtocolRelative: false,
    // Dropped with everything inside, rather than shown as text.
    nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'iframe', 'svg', 'math', 'object'],
    transformTags: {
      a: (tagName, attribs) => ({ tagName, attribs: rewrite(attribs, 'href', base, 'link') }),
      img: (tagName, attribs) => ({ tagName, attribs: rewrite(attribs, 'src', base, 'image') }),
    },
  });
}

/**
 * A relative href or src made absolute within the repository's pages. Absolute URLs are left to
 * the scheme allowlist; an image from elsewhere is dropped (it would not load under the page's
 * policy anyway, and would tell another site who reads this README).
 */
function rewrite(
  attribs: Record<string, string>,
  name: 'href' | 'src',
  base: LinkBase,
  kind: 'link' | 'image',
): Record<string, string> {
  const value = attribs[name];
  if (value === undefined) return attribs;
  const trimmed = value.trim();
  const out = { ...attribs };
  if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed) || trimmed.startsWith('//')) {
    if (kind === 'image') delete out[name];
    return out;
  }
  if (trimmed.startsWith('#') || trimmed === '') return out;
  if (trimmed.startsWith('/')) {
    out[name] = trimmed;
    return out;
  }
  const [pathPart = '', fragment] = trimmed.split('#', 2);
  const [pathOnly = ''] = pathPart.split('?', 1);
  const segments = (base.dir ? `${base.dir}/${pathOnly}` : pathOnly).split('/');
  const resolved: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') resolved.pop();
    else resolved.push(segment);
  }
  const root = kind === 'image' ? base.raw : base.blob;
  out[name] =
    `${root}/${resolved.map(encodeSegment).join('/')}${fragment !== undefined ? `#${fragment}` : ''}`;
  return out;
}

/** A path segment as a URL carries it (already-encoded input is decoded first). */
function encodeSegment(segment: string): string {
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {}
  return encodeURIComponent(decoded);
}

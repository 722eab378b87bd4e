/**
 * Syntax highlighting on the server, by highlight.js (its common languages), chosen by the file's
 * name; no guessing (highlight.js's auto-detection runs every grammar over the text). Its output
 * is the text escaped, with `<span class="hljs-...">` around tokens, so it is safe to put in a
 * page as it is. The library loads on first use.
 */
type HighlightJs = typeof import('highlight.js').default;

let loaded: Promise<HighlightJs> | undefined;

function library(): Promise<HighlightJs> {
  loaded ??= import('highlight.js/lib/common').then((m) => m.default as HighlightJs);
  return loaded;
}

export function preloadHighlighter(): Promise<void> {
  return library().then(() => {});
}

/** Names highlight.js does not know by their extension. */
const BY_NAME: Readonly<Record<string, string>> = {
  dockerfile: 'dockerfile',
  makefile: 'makefile',
  gnumakefile: 'makefile',
  'cmakelists.txt': 'cmake',
  '.gitignore': 'bash',
  '.bashrc': 'bash',
  '.profile': 'bash',
};

/** highlight.js's language for a file name, or null. */
export async function languageFor(name: string): Promise<string | null> {
  const hljs = await library();
  const lower = name.toLowerCase();
  const byName = BY_NAME[lower];
  if (byName && hljs.getLanguage(byName)) return byName;
  const dot = lower.lastIndexOf('.');
  if (dot < 0) return null;
  const extension = lower.slice(dot + 1);
  return hljs.getLanguage(extension) ? extension : null;
}

/** The text as highlighted HTML; escaped plain text when no language is known. */
export async function highlight(text: string, language: string | null): Promise<string> {
  const hljs = await library();
  if (language === null) return escapeText(text);
  return hljs.highlight(text, { language, ignoreIllegals: true }).value;
}

function escapeText(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The colours of highlight.js's classes, light and dark (after its "github" themes). */
export const HIGHLIGHT_STYLE = `
.hljs-comment, .hljs-quote { color: #6a737d; font-style: italic; }
.hljs-keyword, .hljs-selector-tag, .hljs-type, .hljs-doctag, .hljs-template-tag { color: #cf222e; }
.hljs-string, .hljs-regexp, .hljs-addition, .hljs-attribute, .hljs-meta .hljs-string { color: #0a3069; }
.hljs-number, .hljs-literal, .hljs-variable, .hljs-template-variable, .hljs-attr, .hljs-selector-attr, .hljs-selector-class, .hljs-selector-id { color: #0550ae; }
.hljs-title, .hljs-title.class_, .hljs-title.function_, .hljs-section { color: #8250df; }
.hljs-built_in, .hljs-symbol, .hljs-name, .hljs-tag { color: #116329; }
.hljs-meta { color: #953800; }
.hljs-deletion { color: #82071e; }
@media (prefers-color-scheme: dark) {
  .hljs-comment, .hljs-quote { color: #8b949e; }
  .hljs-keyword, .hljs-selector-tag, .hljs-type, .hljs-doctag, .hljs-template-tag { color: #ff7b72; }
  .hljs-string, .hljs-regexp, .hljs-addition, .hljs-attribute, .hljs-meta .hljs-string { color: #a5d6ff; }
  .hljs-number, .hljs-literal, .hljs-variable, .hljs-template-variable, .hljs-attr, .hljs-selector-attr, .hljs-selector-class, .hljs-selector-id { color: #79c0ff; }
  .hljs-title, .hljs-title.class_, .hljs-title.function_, .hljs-section { color: #d2a8ff; }
  .hljs-built_in, .hljs-symbol, .hljs-name, .hljs-tag { color: #7ee787; }
  .hljs-meta { color: #ffa657; }
}
`;

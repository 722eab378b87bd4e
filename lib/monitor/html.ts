/**
 * The monitor's HTML: plain server-rendered pages with a little CSS, readable on a phone, no
 * script and no build step. Every value reaches the page through `html` template escaping.
 */

/** Escaped text; `raw` marks markup already made safe. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export const raw = (value: string) => new Html(value);

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

type Part = Html | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** A tagged template whose interpolations are escaped unless they are Html. */
export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < parts.length; i++) out += render(parts[i] as Part) + (strings[i + 1] ?? '');
  return new Html(out);
}

const STYLE = `
:root { color-scheme: light dark; --muted: #6a737d; --line: #d0d7de; --accent: #0969da; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 0.75rem; overflow-wrap: anywhere; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: baseline; border-bottom: 1px solid var(--line); padding-bottom: 0.5rem; margin-bottom: 0.75rem; }
header a.home { font-weight: 700; text-decoration: none; }
header .user { margin-left: auto; }
h1 { font-size: 1.3rem; margin: 0.25rem 0 0.75rem; }
h1 a { color: inherit; text-decoration: none; }
h2 { font-size: 1.05rem; margin: 1.25rem 0 0.5rem; }
a { color: var(--accent); }
code, .oid { font: 0.9em ui-monospace, monospace; }
.oid { white-space: nowrap; }
.muted { color: var(--muted); }
.small { font-size: 0.85em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.35rem 0.4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 0.85em; color: var(--muted); font-weight: 600; }
td.seq { white-space: nowrap; width: 1%; }
td.ref { word-break: break-all; }
tr.checkpoint td { color: var(--muted); }
.update { margin: 0.1rem 0; }
.tag { display: inline-block; font-size: 0.8em; padding: 0 0.45em; border-radius: 0.6em; border: 1px solid var(--line); white-space: nowrap; text-decoration: none; }
.tag.checkpoint { border-color: #8250df; color: #8250df; }
.tag.rewind { border-color: #bf8700; color: #bf8700; }
.tag.forced { border-color: #cf222e; color: #cf222e; }
.tag.ff { border-color: #1a7f37; color: #1a7f37; }
.box { border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem 0.8rem; margin: 0.75rem 0; }
.box.error { border-color: #cf222e; }
.box.done { border-color: #1a7f37; }
form.inline { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: end; margin: 0.5rem 0; }
label { display: flex; flex-direction: column; font-size: 0.85em; }
input { font: inherit; padding: 0.25rem 0.4rem; max-width: 100%; }
button { font: inherit; padding: 0.3rem 0.8rem; cursor: pointer; }
nav.pager { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; margin: 0.75rem 0; }
ul.commits { margin: 0.25rem 0 0; padding-left: 1.1rem; }
@media (max-width: 40rem) { .wide { display: none; } body { padding: 0.5rem; font-size: 14px; } th, td { padding: 0.3rem 0.25rem; } }
`;

/**
 * `user`: the signed-in principal's name, null for an anonymous visitor (offered to sign in), or
 * undefined when not known (an error page).
 */
export function layout(
  title: string,
  body: Html,
  options: { user?: string | null; style?: string } = {},
): string {
  const who =
    options.user === undefined
      ? ''
      : options.user === null
        ? html`<a class="user" href="${SIGN_IN}">sign in</a>`
        : html`<span class="user muted">signed in as ${options.user}</span>`;
  return `<!doctype html>${render(html`<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · narwal</title><style>${raw(STYLE)}${raw(options.style ?? '')}</style></head>
<body><header><a class="home" href="/">narwal</a>${who}</header>
<main>${body}</main></body></html>`)}`;
}

/**
 * Where a browser signs in. Browsers send Basic credentials unasked only below the directory of
 * the URL that asked for them, so the challenge comes from `/` itself: then every page gets them.
 */
export const SIGN_IN = '/?sign-in';

export function shortOid(oid: string | undefined): string {
  return oid === undefined ? '' : oid.slice(0, 10);
}

/** An entry's ISO time, shown to the second in UTC. */
export function timeTag(iso: string | undefined): Html {
  if (iso === undefined) return html``;
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(iso);
  return match ? html`<time datetime="${iso}">${match[1]} ${match[2]}</time>` : html`${iso}`;
}

/** "1 commit", "3 commits". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

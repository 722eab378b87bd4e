/** The monitor pages, as pure functions of what History answers. */
import type { Diff, RewindResult } from '../history/History.js';
import type { LogSlice } from '../history/logPage.js';
import type { RefMove } from '../history/refMoves.js';
import { type RefValue, ZERO_OID } from '../protocol/refValue.js';
import type { Identity, LogItem, RefUpdate, RepoIndex } from '../wal/types.js';
import { type Html, html, layout, plural, SIGN_IN, settingsText, shortOid, timeTag } from './html.js';

export interface PageContext {
  readonly user: string | null;
  /** The base URL clone commands are shown with. */
  readonly publicUrl: string;
}

export interface RepoSummary {
  readonly name: string;
  readonly seq: number;
  readonly public: boolean;
  readonly time?: string;
}

/** Refs an entry page lists; the JSON API (`/-/refs?at=SEQ`) has them all. */
const MAX_LISTED_REFS = 500;
/** Updates a log row shows; the entry page has them all. */
const MAX_ROW_UPDATES = 5;

const repoLink = (repo: string) => `/${repo}`;
const entryLink = (repo: string, seq: number) => `/${repo}/-/entry/${seq}`;
const diffLink = (repo: string, from: number, to: number) => `/${repo}/-/diff?from=${from}&to=${to}`;
const whoLink = (repo: string, ref: string) => `/${repo}/-/who?ref=${encodeURIComponent(ref)}`;

const repoTitle = (repo: string, suffix: Html | string = '') =>
  html`<h1><a href="${repoLink(repo)}">${repo}</a> <span class="muted">${suffix}</span></h1>`;

const oid = (value: string | undefined, none: string) =>
  html`<span class="oid">${value === undefined || value === ZERO_OID ? none : shortOid(value)}</span>`;

export function repoListPage(ctx: PageContext, repos: readonly RepoSummary[]): string {
  const rows = repos.map(
    (r) =>
      html`<tr><td class="ref"><a href="${repoLink(r.name)}">${r.name}</a>${
        r.public ? html` <span class="tag">public</span>` : ''
      }</td><td>${r.seq}</td><td class="muted wide">${timeTag(r.time)}</td></tr>`,
  );
  const signIn = ctx.user ? '' : html` <a href="${SIGN_IN}">Sign in</a> to see private ones.`;
  const body = html`<h1>Repositories</h1>
${
  repos.length === 0
    ? html`<p class="muted">No repositories you can read.${signIn} Push one: <code>git push ${ctx.publicUrl}/OWNER/NAME.git main</code></p>`
    : html`<table class="repos"><thead><tr><th>Repository</th><th>Entries</th><th class="wide">Last entry (UTC)</th></tr></thead><tbody>${rows}</tbody></table>${
        ctx.user ? '' : html`<p class="muted">Public repositories only.${signIn}</p>`
      }`
}`;
  return layout('Repositories', body, ctx);
}

function kindTags(repo: string, item: LogItem): Html {
  const rewind = item.rewind;
  const lock = item.lock;
  return html`${item.kind === 'checkpoint' ? html`<span class="tag checkpoint">checkpoint</span> ` : ''}${
    lock
      ? html`<span class="tag lock">${lock.action}</span> <code>${lock.path}</code>${lock.forced ? ` held by ${lock.owner.name}, forced` : ''} `
      : ''
  }${item.settings ? html`<span class="tag">settings</span> ${settingsText(item.settings)} ` : ''}${
    rewind
      ? html`<a class="tag rewind" href="${entryLink(repo, rewind.to)}">rewind to #${rewind.to}${rewind.refs ? ` (${rewind.refs})` : ''}</a> `
      : ''
  }${item.atomic && !rewind ? html`<span class="tag">atomic</span> ` : ''}`;
}

function change(u: Pick<RefUpdate, 'old' | 'new'>): Html {
  if (u.old === ZERO_OID) return html`created at ${oid(u.new, '')}`;
  if (u.new === ZERO_OID) return html`deleted (was ${oid(u.old, '')})`;
  return html`${oid(u.old, '')} → ${oid(u.new, '')}`;
}

function updateLine(repo: string, u: RefUpdate): Html {
  return html`<div class="update"><a class="ref" href="${whoLink(repo, u.ref)}">${u.ref}</a> ${change(u)}</div>`;
}

function whoText(who: Identity): string {
  return who.owner ? `${who.token} (${who.owner})` : who.token;
}

/** Log items as the log page's table rows (the repository home shows the newest too). */
export function logRows(repo: string, items: readonly LogItem[]): Html[] {
  return items.map((item) => {
    const shown = item.updates.slice(0, MAX_ROW_UPDATES).map((u) => updateLine(repo, u));
    const more = (item.count ?? item.updates.length) - shown.length;
    const checkpoint = item.checkpoint
      ? html`<span class="small">of the ${plural(item.checkpoint.count, 'ref')} after #${item.checkpoint.seq}</span>`
      : '';
    return html`<tr class="${item.kind ?? 'push'}"><td class="seq"><a href="${entryLink(repo, item.seq)}">#${item.seq}</a></td>
<td>${whoText(item.who)}<div class="muted small">${timeTag(item.time)}</div></td>
<td class="ref">${kindTags(repo, item)}${checkpoint}${shown}${more > 0 ? html`<div class="muted small">and ${more} more</div>` : ''}</td></tr>`;
  });
}

export function logPageView(ctx: PageContext, index: RepoIndex, slice: LogSlice): string {
  const repo = index.repo;
  const rows = logRows(repo, slice.items);
  const newest = slice.items[0]?.seq;
  const body = html`${repoTitle(repo, index.public ? html`<span class="tag">public</span>` : '')}
<p>Clone: <code>git clone ${ctx.publicUrl}/${repo}.git</code></p>
<form class="inline" method="get" action="/${repo}/-/diff"><label>from entry<input name="from" inputmode="numeric" size="6" value="${Math.max(0, index.seq - 1)}"></label>
<label>to entry<input name="to" inputmode="numeric" size="6" value="${index.seq}"></label><button>Compare</button></form>
<h2>Log <span class="muted">(${index.seq} ${index.seq === 1 ? 'entry' : 'entries'}, newest first)</span></h2>
${
  slice.items.length === 0
    ? html`<p class="muted">Nothing pushed yet.</p>`
    : html`<table class="log"><thead><tr><th>Entry</th><th>Who, when (UTC)</th><th>Refs</th></tr></thead><tbody>${rows}</tbody></table>`
}
<nav class="pager">${
    newest !== undefined && newest < index.seq ? html`<a href="/${repo}/-/log" rel="first">newest</a>` : ''
  }${slice.next !== null ? html`<a href="/${repo}/-/log?before=${slice.next}" rel="next">older</a>` : ''}</nav>`;
  return layout(repo, body, ctx);
}

export function entryPageView(
  ctx: PageContext,
  index: RepoIndex,
  item: LogItem,
  refs: ReadonlyMap<string, RefValue>,
  canWrite: boolean,
): string {
  const repo = index.repo;
  const refRows = [...refs]
    .slice(0, MAX_LISTED_REFS)
    .map(
      ([name, v]) =>
        html`<tr><td class="ref"><a href="${whoLink(repo, name)}">${name}</a></td><td>${oid(v.oid, '')}</td></tr>`,
    );
  const { rewind, checkpoint } = item;
  const rewindForm =
    canWrite && item.seq < index.seq
      ? html`<h2>Rewind</h2>
<p class="muted">Publishes a new entry that restores the refs of this entry (all, or those a pattern
matches: <code>refs/heads/main</code>, <code>refs/heads/*</code>, <code>refs/tags/**</code>). You see exactly what changes before anything is written; nothing is ever deleted from the log.</p>
<form class="inline" method="get" action="/${repo}/-/rewind"><input type="hidden" name="to" value="${item.seq}"><label>refs (optional pattern)<input name="refs" placeholder="all refs"></label><button>Rewind to this entry…</button></form>`
      : '';
  const body = html`${repoTitle(repo, `entry #${item.seq}`)}
<div class="box">${kindTags(repo, item)}
<div>By <strong>${whoText(item.who)}</strong> at ${timeTag(item.time)} UTC</div>
${item.who.agent ? html`<div class="muted small">client ${item.who.agent}${item.who.ip ? ` from ${item.who.ip}` : ''}</div>` : ''}
${rewind ? html`<div>Restores the refs of <a href="${entryLink(repo, rewind.to)}">entry #${rewind.to}</a>${rewind.refs ? html` matching <code>${rewind.refs}</code>` : ''}.</div>` : ''}
${checkpoint ? html`<div class="muted">Checkpoint of the state after <a href="${entryLink(repo, checkpoint.seq)}">#${checkpoint.seq}</a>: ${plural(checkpoint.count, 'ref')}, ${plural(checkpoint.bytes, 'byte')} of packs.</div>` : ''}
</div>
<nav class="pager">${item.seq > 1 ? html`<a href="${entryLink(repo, item.seq - 1)}" rel="prev">previous</a>` : ''}${
    item.seq < index.seq ? html`<a href="${entryLink(repo, item.seq + 1)}" rel="next">next</a>` : ''
  }<a href="${diffLink(repo, item.seq - 1, item.seq)}">diff with #${item.seq - 1}</a>${
    item.seq < index.seq ? html`<a href="${diffLink(repo, item.seq, index.seq)}">diff to newest</a>` : ''
  }<a href="/${repo}/-/tree/@${item.seq}">files at this entry</a></nav>
<h2>Ref updates (${item.updates.length})</h2>
${item.updates.length === 0 ? html`<p class="muted">None.</p>` : item.updates.map((u) => updateLine(repo, u))}
${rewindForm}
<h2>Refs after this entry (${refs.size})</h2>
<p>Clone this state: <code>git clone ${ctx.publicUrl}/${repo}.git@${item.seq}</code></p>
${refs.size === 0 ? html`<p class="muted">None.</p>` : html`<table class="refs"><tbody>${refRows}</tbody></table>`}${
  refs.size > MAX_LISTED_REFS
    ? html`<p class="muted">and ${refs.size - MAX_LISTED_REFS} more (all of them: <code>/api/v1/repos/${repo}/-/refs?at=${item.seq}</code>)</p>`
    : ''
}`;
  return layout(`${repo} #${item.seq}`, body, ctx);
}

export function diffPageView(ctx: PageContext, index: RepoIndex, diff: Diff): string {
  const repo = index.repo;
  const details = new Map(diff.details.map((d) => [d.ref, d]));
  const moved = diff.moved.map((m) => {
    const d = details.get(m.ref);
    const commits = d?.commits
      ? html`<ul class="commits">${d.added.map((c) => html`<li><span class="oid">${shortOid(c.oid)}</span> ${c.subject} <span class="muted small">${c.author}</span></li>`)}</ul>${
          d.addedCount > d.added.length
            ? html`<div class="muted small">and ${plural(d.addedCount - d.added.length, 'more commit')}</div>`
            : ''
        }${d.removedCount > 0 ? html`<div class="muted small">${plural(d.removedCount, 'commit')} dropped (no longer reachable from this ref)</div>` : ''}`
      : '';
    const tag = d
      ? d.fastForward
        ? html`<span class="tag ff">fast-forward</span>`
        : html`<span class="tag forced">forced</span>`
      : '';
    return html`<tr><td class="ref"><a href="${whoLink(repo, m.ref)}">${m.ref}</a> ${tag}<div>${oid(m.old, '')} → ${oid(m.new, '')}</div>${commits}</td></tr>`;
  });
  const list = (title: string, items: readonly { ref: string; old?: string; new?: string }[]) =>
    html`<h2>${title} (${items.length})</h2>${
      items.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table><tbody>${items.map((c) => html`<tr><td class="ref"><a href="${whoLink(repo, c.ref)}">${c.ref}</a></td><td>${oid(c.new ?? c.old, '')}</td></tr>`)}</tbody></table>`
    }`;
  const body = html`${repoTitle(
    repo,
    html`<a href="${entryLink(repo, diff.from)}">#${diff.from}</a> → <a href="${entryLink(repo, diff.to)}">#${diff.to}</a>`,
  )}
<form class="inline" method="get" action="/${repo}/-/diff"><label>from entry<input name="from" inputmode="numeric" size="6" value="${diff.from}"></label>
<label>to entry<input name="to" inputmode="numeric" size="6" value="${diff.to}"></label><button>Compare</button></form>
${list('Added', diff.added)}${list('Removed', diff.removed)}
<h2>Moved (${diff.moved.length})</h2>${diff.moved.length === 0 ? html`<p class="muted">None.</p>` : html`<table class="moved"><tbody>${moved}</tbody></table>`}${
    diff.moved.length > diff.details.length && diff.details.length > 0
      ? html`<p class="muted">Commits are listed for the first ${diff.details.length} moved refs.</p>`
      : ''
  }`;
  return layout(`${repo} diff #${diff.from} → #${diff.to}`, body, ctx);
}

export function whoPageView(
  ctx: PageContext,
  index: RepoIndex,
  ref: string,
  moves: readonly RefMove[],
): string {
  const repo = index.repo;
  const rows = moves.map(
    (m) => html`<tr><td class="seq"><a href="${entryLink(repo, m.seq)}">#${m.seq}</a></td>
<td>${whoText(m.who)}<div class="muted small">${timeTag(m.time)}</div></td>
<td>${m.kind === 'rewind' ? html`<a class="tag rewind" href="${entryLink(repo, m.rewindTo ?? m.seq)}">rewind to #${m.rewindTo ?? '?'}</a> ` : ''}${change(m)}</td></tr>`,
  );
  const body = html`${repoTitle(repo)}
<h2 class="ref">${ref}</h2>
<p class="muted">Every move, newest first (${moves.length}).</p>
${moves.length === 0 ? html`<p class="muted">This ref never moved.</p>` : html`<table class="moves"><thead><tr><th>Entry</th><th>Who, when (UTC)</th><th>Move</th></tr></thead><tbody>${rows}</tbody></table>`}`;
  return layout(`${repo} ${ref}`, body, ctx);
}

export function rewindPageView(
  ctx: PageContext,
  index: RepoIndex,
  result: RewindResult,
  options: { done: boolean },
): string {
  const repo = index.repo;
  const { plan } = result;
  const rows = plan.commands.map(
    (c) =>
      html`<tr><td class="ref">${c.ref}</td><td>${oid(c.oldOid, 'absent')}</td><td>${oid(c.newOid, 'deleted')}</td></tr>`,
  );
  const refused = result.outcomes.filter((o) => !o.ok);
  const target = html`<a href="${entryLink(repo, plan.to)}">entry #${plan.to}</a>${
    plan.refs ? html` for refs matching <code>${plan.refs}</code>` : ''
  }`;
  const head = options.done
    ? result.seq !== null
      ? html`<div class="box done">Rewound to ${target}: published as <a href="${entryLink(repo, result.seq)}">entry #${result.seq}</a>.</div>`
      : refused.length > 0
        ? html`<div class="box error">Refused, nothing changed: ${refused.map((o) => (o.ok ? '' : `${o.ref}: ${o.reason}. `))}</div>`
        : html`<div class="box">Nothing to change.</div>`
    : html`<div class="box">Dry run: nothing has been written. Rewinding to ${target} publishes a new entry with ${plural(plan.commands.length, 'update')}.</div>`;
  const confirm =
    !options.done && plan.commands.length > 0
      ? html`<form method="post" action="/${repo}/-/rewind"><input type="hidden" name="to" value="${plan.to}">${
          plan.refs ? html`<input type="hidden" name="refs" value="${plan.refs}">` : ''
        }<input type="hidden" name="expect" value="${plan.at}"><p><button>Confirm rewind</button> <span class="muted small">(refused if the log moves past #${plan.at} first)</span></p></form>`
      : '';
  const body = html`${repoTitle(repo, `rewind to #${plan.to}`)}${head}
${
  plan.commands.length > 0
    ? html`<table class="plan"><thead><tr><th>Ref</th><th>${options.done ? 'Was' : 'Now'}</th><th>${options.done ? 'Now' : 'After'}</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="muted">The refs already match entry #${plan.to}.</p>`
}${confirm}
<p><a href="/${repo}/-/log">back to the log</a></p>`;
  return layout(`${repo} rewind`, body, ctx);
}

/** An error, for a browser: the same status and message git or curl get as text. */
export function errorPageView(status: number, message: string): string {
  const body = html`<h1>${status === 401 ? 'Sign in' : `Error ${status}`}</h1>
<div class="box error">${message.replace(/^narwal: /, '')}</div>
<p>${status === 401 ? html`<a href="${SIGN_IN}">Sign in</a> with any user name and a narwal token as the password, or go ` : ''}<a href="/">back to the repositories</a>.</p>`;
  return layout(`Error ${status}`, body);
}

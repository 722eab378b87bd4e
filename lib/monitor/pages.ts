/** The monitor pages, as pure functions of what History answers. */
import type { Diff, RewindResult } from '../history/History.js';
import type { LogSlice } from '../history/logPage.js';
import type { RefMove } from '../history/refMoves.js';
import type { LogItem, RefUpdate, RefValue, RepoIndex } from '../wal/types.js';
import { ZERO_OID } from '../wal/types.js';
import { type Html, html, layout, shortOid } from './html.js';

export interface PageContext {
  readonly user: string | null;
  readonly publicUrl: string;
}

export interface RepoSummary {
  readonly name: string;
  readonly seq: number;
  readonly public: boolean;
  readonly time?: string;
}

const repoLink = (repo: string) => `/${repo}`;
const entryLink = (repo: string, seq: number) => `/${repo}/-/entry/${seq}`;
const diffLink = (repo: string, from: number, to: number) => `/${repo}/-/diff?from=${from}&to=${to}`;
const whoLink = (repo: string, ref: string) => `/${repo}/-/who?ref=${encodeURIComponent(ref)}`;

export function repoListPage(ctx: PageContext, repos: readonly RepoSummary[]): string {
  const rows = repos.map(
    (
      r,
    ) => html`<tr><td><a href="${repoLink(r.name)}">${r.name}</a>${r.public ? html` <span class="tag">public</span>` : ''}</td>
<td>${r.seq}</td><td class="muted wide">${r.time ?? ''}</td></tr>`,
  );
  const body = html`<h1>Repositories</h1>
${
  repos.length === 0
    ? html`<p class="muted">No repositories you can read${ctx.user ? '' : html` (<a href="/-/login">sign in</a> to see private ones)`}. Push one: <code>git push ${ctx.publicUrl}/OWNER/NAME.git main</code></p>`
    : html`<table><thead><tr><th>Repository</th><th>Entries</th><th class="wide">Last entry</th></tr></thead><tbody>${rows}</tbody></table>`
}`;
  return layout('Repositories', body, ctx);
}

function kindTags(item: LogItem): Html {
  return html`${item.kind === 'checkpoint' ? html`<span class="tag checkpoint">checkpoint</span> ` : ''}${
    item.rewind
      ? html`<span class="tag rewind">rewind to #${item.rewind.to}${item.rewind.refs ? ` (${item.rewind.refs})` : ''}</span> `
      : ''
  }${item.atomic ? html`<span class="tag">atomic</span> ` : ''}`;
}

function updateLine(repo: string, u: RefUpdate): Html {
  const what =
    u.old === ZERO_OID
      ? html`created at <span class="oid">${shortOid(u.new)}</span>`
      : u.new === ZERO_OID
        ? html`deleted (was <span class="oid">${shortOid(u.old)}</span>)`
        : html`<span class="oid">${shortOid(u.old)}</span> → <span class="oid">${shortOid(u.new)}</span>`;
  return html`<div><a href="${whoLink(repo, u.ref)}">${u.ref}</a> ${what}</div>`;
}

function whoText(item: Pick<LogItem, 'who'>): string {
  return item.who.owner ? `${item.who.token} (${item.who.owner})` : item.who.token;
}

export function logPageView(ctx: PageContext, index: RepoIndex, slice: LogSlice): string {
  const repo = index.repo;
  const rows = slice.items.map((item) => {
    const shown = item.updates.slice(0, 5).map((u) => updateLine(repo, u));
    const more = (item.count ?? item.updates.length) - shown.length;
    return html`<tr><td><a href="${entryLink(repo, item.seq)}">#${item.seq}</a></td>
<td class="muted wide">${item.time}</td><td>${whoText(item)}</td>
<td class="ref">${kindTags(item)}${shown}${more > 0 ? html`<div class="muted">and ${more} more</div>` : ''}</td></tr>`;
  });
  const newest = slice.items[0]?.seq;
  const body = html`<h1>${repo}</h1>
<p>Clone: <code>git clone ${ctx.publicUrl}/${repo}.git</code>${index.public ? html` <span class="tag">public</span>` : ''}</p>
<form class="inline" method="get" action="/${repo}/-/diff"><label>from<input name="from" inputmode="numeric" size="6" value="${Math.max(0, index.seq - 1)}"></label>
<label>to<input name="to" inputmode="numeric" size="6" value="${index.seq}"></label><button>Compare</button></form>
<h2>Log <span class="muted">(${index.seq} entries)</span></h2>
${
  slice.items.length === 0
    ? html`<p class="muted">Nothing pushed yet.</p>`
    : html`<table><thead><tr><th>Entry</th><th class="wide">Time</th><th>Who</th><th>Refs</th></tr></thead><tbody>${rows}</tbody></table>`
}
<nav class="pager">${
    newest !== undefined && newest < index.seq ? html`<a href="/${repo}" rel="first">newest</a>` : ''
  }${slice.next !== null ? html`<a href="/${repo}?before=${slice.next}" rel="next">older</a>` : ''}</nav>`;
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
    .slice(0, 500)
    .map(([name, v]) => html`<tr><td class="ref">${name}</td><td class="oid">${shortOid(v.oid)}</td></tr>`);
  const body = html`<h1>${repo} <span class="muted">entry #${item.seq}</span></h1>
<div class="box"><div>${kindTags(item)}</div>
<div>By <strong>${whoText(item)}</strong> at ${item.time}</div>
${item.who.agent ? html`<div class="muted">client ${item.who.agent}${item.who.ip ? ` from ${item.who.ip}` : ''}</div>` : ''}
${item.checkpoint ? html`<div class="muted">checkpoint of the state after #${item.checkpoint.seq}: ${item.checkpoint.count} refs, ${item.checkpoint.bytes} bytes of packs</div>` : ''}
</div>
<h2>Ref updates (${item.updates.length})</h2>
${item.updates.length === 0 ? html`<p class="muted">None.</p>` : item.updates.map((u) => updateLine(repo, u))}
<nav class="pager">${item.seq > 1 ? html`<a href="${entryLink(repo, item.seq - 1)}">previous</a>` : ''}
<a href="${diffLink(repo, item.seq - 1, item.seq)}">diff with #${item.seq - 1}</a>
${item.seq < index.seq ? html`<a href="${diffLink(repo, item.seq, index.seq)}">diff to newest</a><a href="${entryLink(repo, item.seq + 1)}">next</a>` : ''}</nav>
<h2>Refs after this entry (${refs.size})</h2>
<p>Clone this state: <code>git clone ${ctx.publicUrl}/${repo}.git@${item.seq}</code></p>
${canWrite && item.seq < index.seq ? html`<form class="inline" method="get" action="/${repo}/-/rewind"><input type="hidden" name="to" value="${item.seq}"><label>refs (optional pattern)<input name="refs" placeholder="refs/heads/main"></label><button>Rewind to this entry…</button></form>` : ''}
<table><tbody>${refRows}</tbody></table>${refs.size > 500 ? html`<p class="muted">and ${refs.size - 500} more</p>` : ''}`;
  return layout(`${repo} #${item.seq}`, body, ctx);
}

export function diffPageView(ctx: PageContext, index: RepoIndex, diff: Diff): string {
  const repo = index.repo;
  const details = new Map(diff.details.map((d) => [d.ref, d]));
  const moved = diff.moved.map((m) => {
    const d = details.get(m.ref);
    const commits = d?.commits
      ? html`<ul class="commits">${d.added.map((c) => html`<li><span class="oid">${shortOid(c.oid)}</span> ${c.subject} <span class="muted">${c.author}</span></li>`)}</ul>${
          d.addedCount > d.added.length
            ? html`<div class="muted">and ${d.addedCount - d.added.length} more commits</div>`
            : ''
        }${d.removedCount > 0 ? html`<div class="muted">${d.removedCount} commits dropped</div>` : ''}`
      : '';
    const tag = d
      ? d.fastForward
        ? html`<span class="tag">fast-forward</span>`
        : html`<span class="tag forced">forced</span>`
      : '';
    return html`<tr><td class="ref">${m.ref} ${tag}<div><span class="oid">${shortOid(m.old)}</span> → <span class="oid">${shortOid(m.new)}</span></div>${commits}</td></tr>`;
  });
  const list = (title: string, items: readonly { ref: string; old?: string; new?: string }[]) =>
    html`<h2>${title} (${items.length})</h2>${items.length === 0 ? html`<p class="muted">None.</p>` : html`<table><tbody>${items.map((c) => html`<tr><td class="ref">${c.ref}</td><td class="oid">${shortOid(c.new ?? c.old)}</td></tr>`)}</tbody></table>`}`;
  const body = html`<h1>${repo} <span class="muted">#${diff.from} → #${diff.to}</span></h1>
<form class="inline" method="get" action="/${repo}/-/diff"><label>from<input name="from" inputmode="numeric" size="6" value="${diff.from}"></label>
<label>to<input name="to" inputmode="numeric" size="6" value="${diff.to}"></label><button>Compare</button></form>
${list('Added', diff.added)}${list('Removed', diff.removed)}
<h2>Moved (${diff.moved.length})</h2>${diff.moved.length === 0 ? html`<p class="muted">None.</p>` : html`<table><tbody>${moved}</tbody></table>`}`;
  return layout(`${repo} diff`, body, ctx);
}

export function whoPageView(
  ctx: PageContext,
  index: RepoIndex,
  ref: string,
  moves: readonly RefMove[],
): string {
  const repo = index.repo;
  const rows = moves.map(
    (
      m,
    ) => html`<tr><td><a href="${entryLink(repo, m.seq)}">#${m.seq}</a></td><td class="muted wide">${m.time}</td>
<td>${m.who.owner ? `${m.who.token} (${m.who.owner})` : m.who.token}${m.kind === 'rewind' ? html` <span class="tag rewind">rewind to #${m.rewindTo ?? '?'}</span>` : ''}</td>
<td><span class="oid">${m.old === ZERO_OID ? 'created' : shortOid(m.old)}</span> → <span class="oid">${m.new === ZERO_OID ? 'deleted' : shortOid(m.new)}</span></td></tr>`,
  );
  const body = html`<h1>${repo} <span class="muted">${ref}</span></h1>
<h2>Every move, newest first (${moves.length})</h2>
${moves.length === 0 ? html`<p class="muted">This ref never moved.</p>` : html`<table><tbody>${rows}</tbody></table>`}`;
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
      html`<tr><td class="ref">${c.ref}</td><td><span class="oid">${c.oldOid === ZERO_OID ? 'absent' : shortOid(c.oldOid)}</span> → <span class="oid">${c.newOid === ZERO_OID ? 'deleted' : shortOid(c.newOid)}</span></td></tr>`,
  );
  const refused = result.outcomes.filter((o) => !o.ok);
  const head = options.done
    ? result.seq !== null
      ? html`<div class="box">Rewound: published as <a href="${entryLink(repo, result.seq)}">entry #${result.seq}</a>.</div>`
      : refused.length > 0
        ? html`<div class="box error">Refused, nothing changed: ${refused.map((o) => (o.ok ? '' : `${o.ref}: ${o.reason}. `))}</div>`
        : html`<div class="box">Nothing to change.</div>`
    : html`<div class="box">Dry run: nothing has been written. Rewinding to <a href="${entryLink(repo, plan.to)}">#${plan.to}</a>${plan.refs ? ` for refs matching ${plan.refs}` : ''} publishes a new entry with these ${plan.commands.length} updates.</div>`;
  const confirm =
    !options.done && plan.commands.length > 0
      ? html`<form method="post" action="/${repo}/-/rewind"><input type="hidden" name="to" value="${plan.to}">${
          plan.refs ? html`<input type="hidden" name="refs" value="${plan.refs}">` : ''
        }<input type="hidden" name="expect" value="${plan.at}"><button>Confirm rewind</button></form>`
      : '';
  const body = html`<h1>${repo} <span class="muted">rewind to #${plan.to}</span></h1>${head}
${plan.commands.length > 0 ? html`<table><tbody>${rows}</tbody></table>` : html`<p class="muted">The refs already match entry #${plan.to}.</p>`}${confirm}
<p><a href="/${repo}">back to the log</a></p>`;
  return layout(`${repo} rewind`, body, ctx);
}

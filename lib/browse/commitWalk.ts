/**
 * The commit list, a page at a time, with work bounded by the page and not by how deep it is.
 *
 * git's default walk (`git log`, `git rev-list` without a sort option) pops the newest commit by
 * committer date from a queue of commits seen but not yet shown, shows it and queues its parents;
 * ties go in the order they were queued (revision.c, commit_list_insert_by_date). This is that
 * walk, over objects read one by one. A page stops after `limit` commits, and the queue left
 * over - usually a handful of commits, one per line of history still open - is the next page's
 * start: resuming the walk from it shows exactly what git would show next, for any depth, at
 * the cost of one page. (Like git's own walk it assumes a commit is not dated before its parents;
 * where clocks were wrong, a commit reachable from two queued commits may show on two pages.)
 */
import type { Commit } from './gitObjects.js';

export interface WalkPage {
  readonly commits: readonly Commit[];
  /** Where the next page starts (oids in queue order), or null when the history ends here. */
  readonly next: readonly string[] | null;
}

interface Queued {
  readonly commit: Commit;
  readonly order: number;
}

/** Newer first; among equal dates, the one queued first. */
function before(a: Queued, b: Queued): boolean {
  const at = a.commit.committer.time;
  const bt = b.commit.committer.time;
  return at > bt || (at === bt && a.order < b.order);
}

/** A binary heap on `before`. */
class Queue {
  readonly #items: Queued[] = [];
  #order = 0;

  get size(): number {
    return this.#items.length;
  }

  push(commit: Commit): void {
    const items = this.#items;
    items.push({ commit, order: this.#order++ });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i] as Queued, items[parent] as Queued)) break;
      [items[i], items[parent]] = [items[parent] as Queued, items[i] as Queued];
      i = parent;
    }
  }

  pop(): Commit | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined) return undefined;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let best = i;
        if (l < items.length && before(items[l] as Queued, items[best] as Queued)) best = l;
        if (r < items.length && before(items[r] as Queued, items[best] as Queued)) best = r;
        if (best === i) break;
        [items[i], items[best]] = [items[best] as Queued, items[i] as Queued];
        i = best;
      }
    }
    return top.commit;
  }

  /** What is left, in the order it would be popped. */
  drain(): Commit[] {
    const out: Commit[] = [];
    for (let c = this.pop(); c !== undefined; c = this.pop()) out.push(c);
    return out;
  }
}

/**
 * Up to `limit` commits of git's default walk from `starts` (in queue order), reading each
 * commit through `read` (parents of one commit are read together).
 */
export async function walkCommits(
  read: (oid: string) => Promise<Commit>,
  starts: readonly string[],
  limit: number,
): Promise<WalkPage> {
  const seen = new Set<string>();
  const queue = new Queue();
  const first = [...new Set(starts)];
  for (const oid of first) seen.add(oid);
  for (const commit of await Promise.all(first.map(read))) queue.push(commit);
  const commits: Commit[] = [];
  while (commits.length < limit) {
    const commit = queue.pop();
    if (commit === undefined) break;
    commits.push(commit);
    const parents = commit.parents.filter((p) => !seen.has(p));
    for (const p of parents) seen.add(p);
    for (const parent of await Promise.all(parents.map(read))) queue.push(parent);
  }
  const rest = queue.drain().map((c) => c.oid);
  return { commits, next: rest.length === 0 ? null : rest };
}

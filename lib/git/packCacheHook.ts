/**
 * A pack cache for repeatable fetches, as git's `uploadpack.packObjectsHook` (git-config(1)):
 * upload-pack runs the hook as `HOOK git pack-objects ARGS...` (or `HOOK git --shallow-file ""
 * pack-objects ARGS...` when the answer has a shallow boundary) in the repository directory, with
 * the objects wanted (and those the client has, after `--not`) on stdin, preceded by a
 * `--shallow <oid>` line per boundary commit, and sends what it writes as the pack
 * (upload-pack.c, create_pack_file).
 *
 * A fetch with no haves - only wants, then a bare `--not` - asks for the same objects every time
 * it names the same wants, boundary, filter and options, and a generation is immutable, so the
 * first such pack is kept inside the generation (it goes when the generation is evicted) and
 * later identical requests are served from the file: a storm of full clones or of CI checkouts
 * (`--depth=1`, `--filter=blob:none`) costs one pack-objects, not one per fetch. The key is the
 * hook's whole input (arguments and stdin), so only requests git would pack alike share a pack.
 * Identical requests arriving while the first is packing wait for it (a lock file) rather than
 * pack the same objects again. A fetch with haves (anything after `--not`) runs pack-objects as
 * usual and keeps nothing.
 *
 * The lock is kept fresh by its holder (its modification time, every second) for as long as it
 * packs, and one not refreshed for STALE_SECONDS is taken over. Its holder may run on another
 * node, in another PID namespace (a pid in the lock would name some other process there, or
 * none), or be frozen with its sandbox: only the file's age says anything about it.
 *
 * When narwal has recognised the request as a repeatable fetch too, it passes its own name for
 * it in NARWAL_CLONE_KEY (protocol/repeatableFetch.ts), which names the pack (git answers two
 * fetches of one name alike, and narwal already relies on that), and the hook links the pack
 * under `<key>.clone` as well: from then on narwal answers identical fetches from the file itself
 * (transfer/clonePack.ts), and upload-pack and this hook run only for the first.
 *
 * A shell script because upload-pack starts it for every fetch, and one that starts as few
 * processes as it can: each costs some 5-10 ms of CPU and wait on a small virtual machine (two
 * CPUs, measured with strace and time), where a runtime would cost more than the pack. A fetch
 * with haves costs one `cat` besides pack-objects; the first repeatable fetch of a name `cat`,
 * the lock keeper's `sleep`, `mv`, `ln`, `rm` and the `cat` that sends the pack.
 */
import { join } from 'node:path';
import { ensureScript, installScript } from './installScript.js';

/** The directory, inside a generation, that holds its cached packs. */
export const PACK_CACHE_DIR = 'narwal-packs';

/** The suffix of the second name a repeatable fetch's pack gets, `<key>.clone` (repeatableFetch.ts). */
export const CLONE_SUFFIX = '.clone';

/** How long a clone waits for an identical one to finish packing before it packs on its own. */
export const WAIT_SECONDS = 120;

/** A lock its holder has not refreshed for this long is taken over (its holder died or froze). */
export const STALE_SECONDS = 10;

const SCRIPT = `#!/bin/sh
# narwal: uploadpack.packObjectsHook; caches the pack of a fetch with no haves inside the generation.
# upload-pack puts "--shallow-file ''" before pack-objects when the answer has a shallow boundary.
case "$1 $2" in
"git pack-objects") ;;
"git --shallow-file") [ -z "$3" ] && [ "$4" = pack-objects ] || exec "$@" ;;
*) exec "$@" ;;
esac
cache=${PACK_CACHE_DIR}
[ -d "$cache" ] || mkdir -p "$cache" 2>/dev/null || exec "$@"
# The list is read once, into the shell, and given to pack-objects from there (a here-document):
# each process this script starts costs several milliseconds on a small virtual machine, and it
# runs for every fetch. Command substitution drops the list's trailing newlines, and upload-pack
# ends it with exactly one empty line, which the here-documents below put back.
list=$(cat) || exit 1
# Only "boundary commits, object ids, then --not and no more ids" is a fetch with no haves
# (upload-pack writes the boundary first and ends the list with an empty line); anything else
# packs as usual. The shell checks it itself, with no process per test.
rest=$list
while :; do
  case "$rest" in
  "--shallow "*"
"*) rest=\${rest#*"
"} ;;
  *) break ;;
  esac
done
wants=\${rest%"
--not"}
case "$rest" in
*"
--not") case "$wants" in -* | *"
-"*) wants= ;; esac ;;
*) wants= ;;
esac
# Packs as upload-pack would have without this hook, keeping nothing.
uncached() {
  exec "$@" <<EOF
$list

EOF
}
[ -n "$wants" ] || uncached "$@"
# A fetch narwal recognised as repeatable comes with narwal's name for it (NARWAL_CLONE_KEY,
# repeatableFetch.ts), which names the pack here too; any other is named by this hook's whole
# input. narwal answers identical fetches from a second name of the same file, \`<key>${CLONE_SUFFIX}\`,
# itself, without running upload-pack; should that name be damaged, git comes here again and
# this pack names it anew.
case "$NARWAL_CLONE_KEY" in
"" | *[!0-9a-f]*)
  key=$(printf '%s\\n' "$@" "$list" | sha256sum)
  key=\${key%% *}
  alias=
  ;;
*)
  key=$NARWAL_CLONE_KEY
  alias="$cache/$key${CLONE_SUFFIX}"
  ;;
esac
pack="$cache/$key.pack"
lock="$cache/$key.lock"
alias_pack() {
  [ -n "$alias" ] && ln -f "$pack" "$alias" 2>/dev/null
  return 0
}
# The cache may be deleted at any point (evicted under a stale lease, or the whole directory by
# an operator): a file is opened once and read from its descriptor, which keeps its contents
# whatever happens to its name, and a fetch that can no longer use the cache packs without it.
# Either way git's client gets its pack and no word from here on the sideband.
waited=0
while :; do
  if [ -f "$pack" ] && { command exec 4<"$pack"; } 2>/dev/null; then alias_pack; exec cat <&4; fi
  [ -d "$cache" ] || uncached "$@"
  set -C
  if { echo "$$" >"$lock"; } 2>/dev/null; then set +C; break; fi
  set +C
  # Someone else packs the same objects: wait for the file, unless (checked once a second) its
  # holder stopped keeping the lock fresh - it died, or froze with its sandbox.
  if [ $((waited % 20)) = 0 ] && changed=$(stat -c %Y "$lock" 2>/dev/null) &&
    [ $(($(date +%s) - changed)) -ge ${STALE_SECONDS} ]; then
    rm -f "$lock"; waited=$((waited + 1)); continue
  fi
  [ "$waited" -lt ${WAIT_SECONDS * 20} ] || uncached "$@"
  sleep 0.05; waited=$((waited + 1))
done
part="$cache/.$key.$$"
# Written through descriptor 3 and sent from descriptor 4, both opened before packing.
if ! { command exec 3>"$part" 4<"$part"; } 2>/dev/null; then rm -f "$part" "$lock"; uncached "$@"; fi
# Keeps the lock fresh while this shell lives ($$ is this shell, also in the subshell), on its
# own stdio so that upload-pack's read of the pack ends when the pack does.
(while sleep 1 && kill -0 $$ 2>/dev/null; do touch -c "$lock" || exit 0; done) </dev/null >/dev/null 2>&1 &
keeper=$!
# Packed into the file first, then sent: packing at the pace of this fetch's client (a pipe
# through tee) would keep every identical fetch waiting for the slowest first reader.
"$@" >&3 3>&- 4<&- <<EOF
$list

EOF
status=$?
exec 3>&-
kill "$keeper" 2>/dev/null
if [ "$status" != 0 ]; then rm -f "$part" "$lock"; exit "$status"; fi
if mv -f "$part" "$pack" 2>/dev/null; then alias_pack; else rm -f "$part"; fi
rm -f "$lock"
exec cat <&4
`;

/** Installs the hook into `dir` (see installScript.ts) and answers its path. */
export async function installPackCacheHook(dir: string): Promise<string> {
  const path = join(dir, 'pack-objects');
  await installScript(path, SCRIPT);
  return path;
}

/** Puts the hook back at `path` if it has gone; called before each upload-pack that may use it. */
export function ensurePackCacheHook(path: string): Promise<void> {
  return ensureScript(path, SCRIPT);
}

/**
 * How this process talks to the proc-receive hook of a receive-pack it started. receive-pack runs
 * the hook with its protocol on the hook's stdin and stdout (two pipes), and the hook inherits fd 3,
 * a socketpair to this process. The hook (hookScript.ts) sends its pid on fd 3 and waits for one
 * word back:
 *
 * - `direct`: this process opened the hook's two pipes itself, through /proc/<pid>/fd (opening a
 *   pipe there gives a new open file description of the same pipe), and talks to receive-pack on
 *   them; the hook exits at once. One shell per push, and no byte copied by another process.
 * - `relay`: where /proc cannot do that, two `cat`s in the hook copy the pipes to fd 3 and back.
 *
 * The hook waits for the word, so its pipes are open in this process before it exits: a pipe whose
 * every reader has closed would kill receive-pack's next write with SIGPIPE.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { Duplex } from 'node:stream';

/**
 * Where the hook keeps copies of its stdin and stdout while it waits (hookScript.ts): a shell
 * moves fds 0 and 1 about while it runs a builtin with a redirection, as the hook's `read <&3`.
 */
export const HOOK_STDIN = 5;
export const HOOK_STDOUT = 6;

/** What a hook may send before its pid line ends: a pid is a few digits. */
const MAX_PID_LINE = 16;

export interface HookChannelOptions {
  /** Where /proc is (tests point it elsewhere to take the relay path). */
  readonly procRoot?: string;
}

/**
 * The proc-receive protocol's channel for the hook that connects on `control`, or null when
 * `control` ends without one (receive-pack refused the push before running the hook).
 */
export async function hookChannel(control: Duplex, options: HookChannelOptions = {}): Promise<Duplex | null> {
  const line = await readPidLine(control);
  if (line === null) return null;
  const pid = Number(line);
  if (!/^[1-9][0-9]*$/.test(line) || !Number.isSafeInteger(pid))
    throw new Error(`proc-receive hook sent ${JSON.stringify(line)} instead of its pid`);
  const pipes = openHookPipes(options.procRoot ?? '/proc', pid);
  if (pipes === null) {
    control.write('relay\n');
    return control;
  }
  control.end('direct\n');
  return pipes;
}

/** Reads `<digits>\n` from `control`, and nothing after it. */
async function readPidLine(control: Duplex): Promise<string | null> {
  let text = '';
  for (;;) {
    const chunk = control.read() as Buffer | null;
    if (chunk !== null) {
      const end = chunk.indexOf(10);
      if (end >= 0) {
        // The hook sends nothing more before the answer; anything after is not ours to take.
        if (end + 1 < chunk.length) control.unshift(chunk.subarray(end + 1));
        return text + chunk.toString('latin1', 0, end);
      }
      text += chunk.toString('latin1');
      if (text.length > MAX_PID_LINE) throw new Error('proc-receive hook sent no pid line');
      continue;
    }
    if (control.readableEnded || control.destroyed) return text === '' ? null : text;
    const ended = await new Promise<boolean>((resolve) => {
      const onReadable = () => done(false);
      const onEnd = () => done(true);
      const done = (end: boolean) => {
        control.off('readable', onReadable);
        control.off('end', onEnd);
        control.off('close', onEnd);
        resolve(end);
      };
      control.once('readable', onReadable);
      control.once('end', onEnd);
      control.once('close', onEnd);
    });
    if (ended && control.readableLength === 0) return text === '' ? null : text;
  }
}

/** The hook's stdin (read end) and stdout (write end) as one stream, or null if /proc cannot. */
function openHookPipes(procRoot: string, pid: number): Duplex | null {
  let input: number | undefined;
  try {
    input = openSync(`${procRoot}/${pid}/fd/${HOOK_STDIN}`, constants.O_RDONLY | constants.O_NONBLOCK);
    const output = openSync(
      `${procRoot}/${pid}/fd/${HOOK_STDOUT}`,
      constants.O_WRONLY | constants.O_NONBLOCK,
    );
    const readable = new Socket({ fd: input, readable: true, writable: false });
    const writable = new Socket({ fd: output, readable: false, writable: true });
    return Duplex.from({ readable, writable });
  } catch {
    if (input !== undefined) closeSync(input);
    return null;
  }
}

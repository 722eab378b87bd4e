/**
 * The hook side of git's proc-receive protocol. githooks(5), "proc-receive" (S is receive-pack,
 * H is this hook):
 *
 *   # Version negotiation
 *   S: PKT-LINE(version=1\0push-options atomic...)
 *   S: flush-pkt
 *   H: PKT-LINE(version=1\0push-options...)
 *   H: flush-pkt
 *   # Send commands from server to the hook
 *   S: PKT-LINE(<old-oid> <new-oid> <ref>)
 *   S: flush-pkt
 *   # Send push-options only if the 'push-options' feature is enabled.
 *   S: PKT-LINE(push-option)
 *   S: flush-pkt
 *   # Receive result from the hook.
 *   H: PKT-LINE(ok <ref>)
 *   H: PKT-LINE(ng <ref> <reason>)
 *   H: flush-pkt
 *
 * Checked against builtin/receive-pack.c (run_proc_receive_hook, read_proc_receive_report),
 * t/helper/test-proc-receive.c and git 2.39.5 itself:
 * - receive-pack offers "atomic" and/or "push-options" after the NUL only when the client asked
 *   for them (and push-options only when advertised); otherwise it sends a bare "version=1".
 * - From the hook's answer it reads only the version (0 or 1 accepted) and whether the feature
 *   list names "push-options"; "atomic" in the answer is ignored, so it is not echoed.
 * - It sends the push-options section only when the hook's answer named push-options.
 * - It reads every line with CHOMP_NEWLINE, so the LF we end lines with is optional to it.
 * - It finds the ref of an "ok"/"ng" line by cutting at the first space, and an "ng" without a
 *   reason becomes "failed"; a ref it sent but we do not report fails with "proc-receive failed
 *   to report status", and an EOF before any report line fails every ref. A ref containing a
 *   space can therefore not be reported; it fails safely.
 * - receive-pack starts the hook only when some command is still alive after connectivity
 *   checks and pre-receive. If it never runs, the channel ends without a byte: that is not an
 *   error here, serveProcReceive just returns without calling `decide`.
 */
import type { Duplex } from 'node:stream';
import { ProtocolError, printable } from './ProtocolError.js';
import { encodePktLine, FLUSH_PKT, MAX_PKT_PAYLOAD, type PktLine, PktLineReader } from './pktLine.js';

export interface ProcReceiveCommand {
  oldOid: string;
  newOid: string;
  ref: string;
}

export type ProcReceiveResult = { ref: string; ok: true } | { ref: string; ok: false; reason: string };

/** narwal's verdict on every command, given the push options and the features receive-pack offered. */
export type ProcReceiveDecide = (
  commands: ProcReceiveCommand[],
  pushOptions: string[],
  capabilities: string[],
) => Promise<ProcReceiveResult[]>;

/** Long enough for any useful message; keeps a report line well inside one pkt-line. */
const MAX_REASON_BYTES = 1024;

const COMMAND = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) (.+)$/s;

/** Pulls whole packets from a stream; `undefined` at a clean end of input. */
class PacketSource {
  readonly #reader = new PktLineReader();
  #received = 0;
  #ended = false;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;
  readonly #onData = (chunk: Buffer) => {
    this.#received += chunk.length;
    this.#reader.push(chunk);
    this.#wake?.();
  };
  readonly #onEnd = () => {
    this.#ended = true;
    this.#wake?.();
  };
  readonly #onError = (error: Error) => {
    this.#failure = error;
    this.#wake?.();
  };

  readonly #stream: Duplex;

  constructor(stream: Duplex) {
    this.#stream = stream;
    stream.on('data', this.#onData);
    stream.on('end', this.#onEnd);
    stream.on('close', this.#onEnd);
    stream.on('error', this.#onError);
  }

  get received(): number {
    return this.#received;
  }

  async next(): Promise<PktLine | undefined> {
    for (;;) {
      const pkt = this.#reader.next();
      if (pkt !== undefined) return pkt;
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#ended) {
        if (this.#reader.buffered > 0) throw new ProtocolError('proc-receive: input ended inside a pkt-line');
        return undefined;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  dispose(): void {
    this.#stream.off('data', this.#onData);
    this.#stream.off('end', this.#onEnd);
    this.#stream.off('close', this.#onEnd);
    this.#stream.off('error', this.#onError);
  }
}

/** The text lines of one section, up to its flush-pkt; LF-terminated or not. */
async function readSection(source: PacketSource, section: string, first?: PktLine): Promise<Buffer[]> {
  const lines: Buffer[] = [];
  for (let pkt = first ?? (await source.next()); ; pkt = await source.next()) {
    if (pkt === undefined) throw new ProtocolError(`proc-receive: input ended while reading ${section}`);
    if (pkt.kind === 'flush') return lines;
    if (pkt.kind !== 'data') {
      throw new ProtocolError(`proc-receive: unexpected ${pkt.kind}-pkt in ${section}`);
    }
    const { payload } = pkt;
    lines.push(payload.at(-1) === 0x0a ? payload.subarray(0, -1) : payload);
  }
}

/** receive-pack's offered features, from its `version=1[\0features]` line. */
function parseVersion(lines: Buffer[]): string[] {
  for (const line of lines) {
    const nul = line.indexOf(0);
    const head = (nul < 0 ? line : line.subarray(0, nul)).toString('latin1');
    if (!head.startsWith('version=')) continue;
    if (head !== 'version=1') throw new ProtocolError(`proc-receive: unsupported '${printable(head)}'`);
    return nul < 0
      ? []
      : line
          .subarray(nul + 1)
          .toString('utf8')
          .split(' ')
          .filter(Boolean);
  }
  throw new ProtocolError('proc-receive: receive-pack sent no version');
}

function parseCommand(line: Buffer): ProcReceiveCommand {
  const match = COMMAND.exec(line.toString('utf8'));
  const [, oldOid, newOid, ref] = match ?? [];
  if (oldOid === undefined || newOid === undefined || ref === undefined || oldOid.length !== newOid.length) {
    throw new ProtocolError(`proc-receive: expected '<old-oid> <new-oid> <ref>', got '${printable(line)}'`);
  }
  return { oldOid, newOid, ref };
}

/** A reason git can carry: one line (control characters become spaces), at most `maxBytes`. */
function oneLine(reason: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const char of reason) {
    const code = char.charCodeAt(0);
    const safe = code < 0x20 || code === 0x7f ? ' ' : char;
    bytes += Buffer.byteLength(safe);
    if (bytes > maxBytes) break;
    out += safe;
  }
  return out.trim();
}

/** One report line, LF-terminated like git's own test helper writes them. */
function reportLine(result: ProcReceiveResult): Buffer {
  if (result.ok) return encodePktLine(`ok ${result.ref}\n`);
  const prefix = `ng ${result.ref} `;
  const room = Math.min(MAX_REASON_BYTES, MAX_PKT_PAYLOAD - Buffer.byteLength(prefix) - 1);
  return encodePktLine(`${prefix}${oneLine(result.reason, room) || 'failed'}\n`);
}

/**
 * Results are matched to commands by ref name (receive-pack itself finds a report's command by
 * its ref), so two commands for one ref could not be told apart: such a run is refused before
 * anything is decided, and receive-pack then fails every ref.
 */
function refuseDuplicates(commands: readonly ProcReceiveCommand[]): void {
  const seen = new Set<string>();
  for (const { ref } of commands) {
    if (seen.has(ref))
      throw new ProtocolError(`proc-receive: receive-pack sent ${printable(ref, 256)} more than once`);
    seen.add(ref);
  }
}

/** The results in command order: one per command, matched by ref, nothing extra. */
function orderResults(commands: ProcReceiveCommand[], results: ProcReceiveResult[]): ProcReceiveResult[] {
  const pending = [...results];
  const ordered = commands.map((command) => {
    const index = pending.findIndex((result) => result.ref === command.ref);
    const [result] = index < 0 ? [] : pending.splice(index, 1);
    if (result === undefined) throw new Error(`proc-receive: no result for ${command.ref}`);
    return result;
  });
  const [extra] = pending;
  if (extra !== undefined) {
    throw new Error(`proc-receive: result for a ref that was not pushed: ${extra.ref}`);
  }
  return ordered;
}

function endAndFlush(channel: Duplex, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    channel.once('error', onError);
    channel.end(data, (error?: Error | null) => {
      channel.off('error', onError);
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * Serves one proc-receive hook run over `channel` (the relay's stdin/stdout): negotiates, reads
 * the commands and push options, asks `decide`, reports `ok`/`ng` per command in receive-pack's
 * order and ends the channel. On any failure the channel is destroyed (receive-pack then fails
 * every ref with "fail to run proc-receive hook") and the error is rethrown.
 */
export async function serveProcReceive(channel: Duplex, decide: ProcReceiveDecide): Promise<void> {
  const source = new PacketSource(channel);
  try {
    const first = await source.next();
    if (first === undefined && source.received === 0) {
      channel.end();
      return;
    }
    const capabilities = parseVersion(await readSection(source, 'the version negotiation', first));
    const usePushOptions = capabilities.includes('push-options');
    channel.write(
      Buffer.concat([encodePktLine(usePushOptions ? 'version=1\0push-options\n' : 'version=1\n'), FLUSH_PKT]),
    );
    const commands = (await readSection(source, 'the commands')).map(parseCommand);
    refuseDuplicates(commands);
    const pushOptions = usePushOptions
      ? (await readSection(source, 'the push options')).map((line) => line.toString('utf8'))
      : [];
    const results = orderResults(commands, await decide(commands, pushOptions, capabilities));
    source.dispose();
    await endAndFlush(channel, Buffer.concat([...results.map(reportLine), FLUSH_PKT]));
  } catch (error) {
    // Some Duplex implementations report their own destruction as an 'error' (AbortError);
    // the failure that matters is the one rethrown here.
    channel.on('error', () => {});
    channel.destroy();
    throw error;
  } finally {
    source.dispose();
  }
}

/**
 * The head of a git-receive-pack request. Documentation/technical/pack-protocol.txt,
 * "Reference Update Request and Packfile Transfer":
 *
 *   update-requests   =  *shallow ( command-list | push-cert )
 *   shallow           =  PKT-LINE("shallow" SP obj-id LF)
 *   command-list      =  PKT-LINE(command NUL capability-list)
 *                        *PKT-LINE(command)
 *                        flush-pkt
 *   command           =  create / delete / update
 *   create            =  zero-id SP new-id  SP name
 *   delete            =  old-id  SP zero-id SP name
 *   update            =  old-id  SP new-id  SP name
 *   push-options      =  *PKT-LINE(push-option) flush-pkt
 *   [...] If the update-request sent the push-options capability, the client sends
 *   push-options after the command-list. [...] The packfile is not sent if the only command
 *   used is 'delete'.
 *
 * Parsed as git 2.39's builtin/receive-pack.c (read_head_info, read_push_options) does: one
 * trailing LF is dropped from every line; a "shallow " line may come anywhere before the flush;
 * capabilities are read after the NUL of any command line (git 2.39 sends them on the first only,
 * with a leading space: "\0 report-status-v2 side-band-64k ..."); the ref name is the rest of
 * the line and is not checked here; push options are read only when the client asked for them
 * and the server advertised them. A body that is empty or only "0000" has no commands.
 *
 * One departure from git: a command list that names a ref twice is refused whole. git's CLI never
 * sends one (it dies with "multiple updates for ref ... not allowed"); stock receive-pack applies
 * such commands one at a time without `atomic` and fails them all with it. narwal decides a
 * push's commands together and reports them by ref name (proc-receive), so a second command for
 * a ref could be reported against the first: refusing the push is the only answer that can never
 * differ from what is stored.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { ProtocolError, printable } from './ProtocolError.js';
import { type PktLine, PktLineReader } from './pktLine.js';

export interface RefCommand {
  oldOid: string;
  newOid: string;
  ref: string;
}

export interface ReceivePackHead {
  commands: RefCommand[];
  capabilities: string[];
  shallow: string[];
  pushOptions: string[];
  /** Length of the head in the body: the packfile (if any) starts at this offset. */
  headBytes: number;
}

export interface ReceivePackHeadLimits {
  maxHeadBytes: number;
  maxCommands: number;
  /**
   * Whether the ref advertisement offered `push-options` (receive.advertisePushOptions). git
   * reads a push-options section only when both sides agreed. Defaults to true.
   */
  pushOptionsAdvertised?: boolean;
}

/** A push whose command list names one ref more than once: refused whole, nothing changes. */
export class DuplicateRef extends ProtocolError {
  constructor(ref: Buffer | string) {
    super(
      `the push names ${printable(ref, 256)} more than once; each ref may be updated once per push, so nothing was changed`,
    );
  }
}

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const OID_LENGTH_OF_FORMAT: Record<string, number> = { sha1: 40, sha256: 64 };

function chomp(payload: Buffer): Buffer {
  return payload.at(-1) === 0x0a ? payload.subarray(0, -1) : payload;
}

/** Feeds packets of a request body one at a time; `head` is set once the head is complete. */
class HeadBuilder {
  head: ReceivePackHead | undefined;
  #state: 'commands' | 'push-options' = 'commands';
  #oidLength: number | undefined;
  readonly #commands: RefCommand[] = [];
  readonly #capabilities: string[] = [];
  /** The same capabilities, for the duplicate check: a list scan made a 1 MiB head take minutes. */
  readonly #seenCapabilities = new Set<string>();
  /** The refs named so far (as raw bytes): a ref named twice refuses the push. */
  readonly #refs = new Set<string>();
  readonly #shallow: string[] = [];
  readonly #pushOptions: string[] = [];
  readonly #limits: ReceivePackHeadLimits;

  constructor(limits: ReceivePackHeadLimits) {
    this.#limits = limits;
  }

  accept(pkt: PktLine, endOffset: number): void {
    if (pkt.kind === 'flush') {
      this.#flush(endOffset);
    } else if (pkt.kind !== 'data') {
      throw new ProtocolError(`malformed receive-pack request: unexpected ${pkt.kind}-pkt`);
    } else if (this.#state === 'push-options') {
      this.#pushOptions.push(chomp(pkt.payload).toString('utf8'));
    } else {
      this.#line(chomp(pkt.payload));
    }
  }

  #flush(endOffset: number): void {
    const wantsOptions = this.#limits.pushOptionsAdvertised !== false;
    if (this.#state === 'commands' && wantsOptions && this.#capabilities.includes('push-options')) {
      this.#state = 'push-options';
      return;
    }
    this.head = {
      commands: this.#commands,
      capabilities: this.#capabilities,
      shallow: this.#shallow,
      pushOptions: this.#pushOptions,
      headBytes: endOffset,
    };
  }

  #line(line: Buffer): void {
    if (line.length > 8 && line.subarray(0, 8).toString('latin1') === 'shallow ') {
      this.#shallow.push(this.#oid(line.subarray(8), line));
      return;
    }
    const nul = line.indexOf(0);
    const command = nul < 0 ? line : line.subarray(0, nul);
    if (command.toString('latin1') === 'push-cert') {
      throw new ProtocolError('signed pushes are not supported (push-cert)');
    }
    if (nul >= 0) this.#addCapabilities(line.subarray(nul + 1).toString('utf8'));
    const firstSpace = command.indexOf(0x20);
    const secondSpace = firstSpace < 0 ? -1 : command.indexOf(0x20, firstSpace + 1);
    if (secondSpace < 0) {
      throw new ProtocolError(
        `malformed receive-pack request: expected old/new/ref, got '${printable(command)}'`,
      );
    }
    if (this.#commands.length >= this.#limits.maxCommands) {
      throw new ProtocolError(`too many ref updates in one push (the limit is ${this.#limits.maxCommands})`);
    }
    const ref = command.subarray(secondSpace + 1);
    const key = ref.toString('latin1');
    if (this.#refs.has(key)) throw new DuplicateRef(ref);
    this.#refs.add(key);
    this.#commands.push({
      oldOid: this.#oid(command.subarray(0, firstSpace), command),
      newOid: this.#oid(command.subarray(firstSpace + 1, secondSpace), command),
      ref: ref.toString('utf8'),
    });
  }

  #addCapabilities(list: string): void {
    for (const capability of list.split(' ')) {
      if (capability === '' || this.#seenCapabilities.has(capability)) continue;
      this.#seenCapabilities.add(capability);
      this.#capabilities.push(capability);
      if (capability.startsWith('object-format=')) {
        const expected = OID_LENGTH_OF_FORMAT[capability.slice('object-format='.length)];
        if (expected === undefined) throw new ProtocolError(`unsupported ${printable(capability)}`);
        this.#checkOidLength(expected);
      }
    }
  }

  #oid(bytes: Buffer, line: Buffer): string {
    const oid = bytes.toString('latin1');
    if (!OID.test(oid)) {
      throw new ProtocolError(`malformed receive-pack request: bad object id in '${printable(line)}'`);
    }
    this.#checkOidLength(oid.length);
    return oid;
  }

  #checkOidLength(length: number): void {
    this.#oidLength ??= length;
    if (this.#oidLength !== length) {
      throw new ProtocolError('malformed receive-pack request: object ids of different hash algorithms');
    }
  }
}

/** Feeds `reader` into `builder` until the head is complete or more bytes are needed. */
function drain(reader: PktLineReader, builder: HeadBuilder, maxHeadBytes: number): void {
  while (builder.head === undefined) {
    const pkt = reader.next();
    if (pkt === undefined) break;
    builder.accept(pkt, reader.consumed);
  }
  const headSoFar = builder.head?.headBytes ?? reader.consumed + reader.buffered;
  if (headSoFar > maxHeadBytes) {
    throw new ProtocolError(`receive-pack request head exceeds ${maxHeadBytes} bytes`);
  }
}

const truncated = () =>
  new ProtocolError('truncated receive-pack request: the body ended before the ref update commands did');

/** Parses the head of a complete (or at least head-complete) body; `rest` is the packfile. */
export function parseReceivePackHead(
  buf: Buffer,
  limits: Partial<ReceivePackHeadLimits> = {},
): { head: ReceivePackHead; rest: Buffer } {
  const full: ReceivePackHeadLimits = {
    maxHeadBytes: limits.maxHeadBytes ?? Number.POSITIVE_INFINITY,
    maxCommands: limits.maxCommands ?? Number.POSITIVE_INFINITY,
    pushOptionsAdvertised: limits.pushOptionsAdvertised,
  };
  if (buf.length === 0) {
    return {
      head: { commands: [], capabilities: [], shallow: [], pushOptions: [], headBytes: 0 },
      rest: buf,
    };
  }
  const reader = new PktLineReader();
  const builder = new HeadBuilder(full);
  reader.push(buf);
  drain(reader, builder, full.maxHeadBytes);
  if (builder.head === undefined) throw truncated();
  return { head: builder.head, rest: buf.subarray(builder.head.headBytes) };
}

/**
 * Passes a receive-pack request body through unchanged while parsing its head, so it can sit
 * between the HTTP request and `git receive-pack`'s stdin. Emits `'head'` (a ReceivePackHead)
 * exactly once, before the bytes that complete the head are pushed on; fails with a
 * ProtocolError on a malformed, oversized or truncated head.
 */
export class ReceivePackHeadParser extends Transform {
  #reader: PktLineReader | undefined = new PktLineReader();
  readonly #builder: HeadBuilder;
  readonly #maxHeadBytes: number;
  #sawBytes = false;

  constructor(limits: ReceivePackHeadLimits) {
    super();
    this.#builder = new HeadBuilder(limits);
    this.#maxHeadBytes = limits.maxHeadBytes;
  }

  /** The parsed head, once `'head'` has been emitted. */
  get head(): ReceivePackHead | undefined {
    return this.#builder.head;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const reader = this.#reader;
    if (reader !== undefined && chunk.length > 0) {
      this.#sawBytes = true;
      reader.push(chunk);
      try {
        drain(reader, this.#builder, this.#maxHeadBytes);
      } catch (error) {
        callback(error instanceof Error ? error : new ProtocolError(String(error)));
        return;
      }
      if (this.#builder.head !== undefined) this.#finish();
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#reader === undefined) {
      callback();
    } else if (this.#sawBytes) {
      callback(truncated());
    } else {
      this.#builder.accept({ kind: 'flush' }, 0);
      this.#finish();
      callback();
    }
  }

  #finish(): void {
    this.#reader = undefined;
    this.emit('head', this.#builder.head);
  }
}

/**
 * receive-pack's answer for a push narwal refuses whole before git has read it (the cache it
 * needed was deleted under it, the store failed): the report git would send had every command
 * failed, so that git prints the reason beside each ref. A failed POST's body is never shown
 * (git 2.39 prints only `RPC failed; HTTP 500`), a report is.
 *
 * The report (gitprotocol-pack(5), "Report Status"; report-status-v2 has the same lines when no
 * option follows them): `unpack <reason>`, then `ng <ref> <reason>` per command, then a flush-pkt;
 * git prints `error: remote unpack failed: <reason>` and ` ! [remote rejected] <ref> (<reason>)`.
 * With `side-band-64k` the report travels in band 1, closed by a flush-pkt. A client that asked
 * for no report gets the reason on band 2 (printed as `remote: <reason>`) when it takes sidebands,
 * else an empty answer, as receive-pack gives it.
 */
import { encodePktLine, encodeSideband, FLUSH_PKT } from './pktLine.js';
import type { ReceivePackHead } from './receivePackRequest.js';

export function pushRefusalReport(
  head: Pick<ReceivePackHead, 'commands' | 'capabilities'>,
  reason: string,
): Buffer {
  const line = reason.replace(/\s+/g, ' ').trim();
  const reports =
    head.capabilities.includes('report-status') || head.capabilities.includes('report-status-v2');
  const sideband = head.capabilities.includes('side-band-64k');
  if (!reports)
    return sideband ? Buffer.concat([...encodeSideband(2, `${line}\n`), FLUSH_PKT]) : Buffer.alloc(0);
  const report = Buffer.concat([
    encodePktLine(`unpack ${line}\n`),
    ...head.commands.map((command) => encodePktLine(`ng ${command.ref} ${line}\n`)),
    FLUSH_PKT,
  ]);
  return sideband ? Buffer.concat([...encodeSideband(1, report), FLUSH_PKT]) : report;
}

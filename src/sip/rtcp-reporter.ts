/**
 * A call's RTCP state between reports (RFC 3550 §6.4): what our next compound report says and what
 * the far end's reports tell us. A report block needs the receive counts at the previous report (for
 * the fraction lost over the interval) and the last SR the far end sent with the time it came (LSR and
 * DLSR, from which the far end works out the round trip); reading a block on our own stream gives the
 * far end's loss and jitter, and, when it echoes an SR of ours, the round trip A − LSR − DLSR. It owns
 * no socket and no timer: RtpSession decides when and where the bytes go.
 */
import {
  decodeRtcp,
  encodeRtcpBye,
  encodeRtcpReport,
  ntpMiddle,
  type ReceptionCounts,
  type ReportBlock,
  reportBlock,
  type SenderInfo,
} from './rtcp.js';

/** How the far end receives our stream, from its last report block about us. */
export interface RemoteReport {
  /** Lost since its previous report, 0-1. */
  fractionLost: number;
  cumulativeLost: number;
  jitterMs: number;
  /** From the echo of our last SR (RFC 3550 §6.4.1), when it had one. */
  roundTripMs?: number;
}

/** What one RTCP datagram from the far end held that matters to us. */
export interface RtcpReading {
  /** Its report block on our stream, if it had one. */
  remoteReport?: RemoteReport;
  /** It said BYE. */
  bye: boolean;
}

export interface RtcpReporterOptions {
  ssrc: number;
  cname: string;
  /** The RTP clock rate (8000 for G.711): jitter is counted in its units. */
  clockRate: number;
  /** Unix ms, for the NTP times. */
  wallClock: () => number;
}

/** Units of LSR, DLSR and the NTP middle 32 bits: 1/65536 s. */
const UNITS_PER_SECOND = 65536;

export class RtcpReporter {
  readonly #options: RtcpReporterOptions;
  #previousReception: ReceptionCounts | undefined;
  #lastSenderReport: { middle: number; arrivedMs: number } | undefined;
  #remoteReport: RemoteReport | undefined;

  constructor(options: RtcpReporterOptions) {
    this.#options = options;
  }

  /**
   * Our compound report at `nowMs` (monotonic): an SR when `sender` is given (we send), else an RR;
   * with a block on the far end's stream once it has sent (`reception`).
   */
  report(nowMs: number, reception: ReceptionCounts | undefined, sender: SenderInfo | undefined): Uint8Array {
    const reports: ReportBlock[] = [];
    if (reception) {
      const last = this.#lastSenderReport;
      const echo = last
        ? {
            middle: last.middle,
            delay: Math.round(((nowMs - last.arrivedMs) / 1000) * UNITS_PER_SECOND),
          }
        : undefined;
      reports.push(reportBlock(reception, this.#previousReception, echo));
      this.#previousReception = reception;
    }
    return encodeRtcpReport({ ssrc: this.#options.ssrc, cname: this.#options.cname, sender, reports });
  }

  bye(sender: SenderInfo | undefined, reason?: string): Uint8Array {
    return encodeRtcpBye({ ssrc: this.#options.ssrc, cname: this.#options.cname, sender, reason });
  }

  /** Reads a datagram that came at `nowMs` (monotonic); null if it is not RTCP. Never throws. */
  read(data: Uint8Array, nowMs: number): RtcpReading | null {
    const decoded = decodeRtcp(data);
    if (!decoded.ok) return null;
    const reading: RtcpReading = { bye: false };
    for (const packet of decoded.packets) {
      if (packet.type === 'sr')
        this.#lastSenderReport = { middle: packet.sender.ntpMiddle, arrivedMs: nowMs };
      if (packet.type === 'sr' || packet.type === 'rr') {
        const block = packet.reports.find((report) => report.ssrc === this.#options.ssrc);
        if (block) reading.remoteReport = this.#readBlock(block);
      }
      if (packet.type === 'bye') reading.bye = true;
    }
    if (reading.remoteReport) this.#remoteReport = reading.remoteReport;
    return reading;
  }

  /** The far end's latest report on our stream. */
  get remoteReport(): RemoteReport | undefined {
    return this.#remoteReport && { ...this.#remoteReport };
  }

  #readBlock(block: ReportBlock): RemoteReport {
    const report: RemoteReport = {
      fractionLost: block.fractionLost / 256,
      cumulativeLost: block.cumulativeLost,
      jitterMs: (block.jitter * 1000) / this.#options.clockRate,
    };
    if (block.lastSenderReport !== 0) {
      // RFC 3550 §6.4.1: A − LSR − DLSR, all in 1/65536 s, modulo 2^32.
      const now = ntpMiddle(this.#options.wallClock());
      const units = (now - block.lastSenderReport - block.delaySinceLastSenderReport) | 0;
      // A few units below zero are the rounding of the three NTP fractions, not a time machine.
      if (units >= -16) report.roundTripMs = (Math.max(0, units) / UNITS_PER_SECOND) * 1000;
    }
    return report;
  }
}

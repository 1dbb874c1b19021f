/**
 * The send side's clock: one RTP packet every packet time (20 ms), stamped. A far end plays what it
 * gets at its own steady rate, so packets must leave at that rate over a whole call: `setInterval`
 * drifts (each late wake-up pushes every later one), so packet n is due at `start + n × 20 ms` on
 * the monotonic clock, whenever the timer actually wakes.
 *
 * Each packet time the pacer pulls one frame from its source: audio, a key event (RFC 4733, from
 * `rtp-events.ts`), or nothing, which is sent as silence (trunks and NATs expect a steady stream;
 * `sendSilence: false` sends nothing instead). The sequence goes up by one per packet sent; the
 * timestamp goes up by 160 per 20 ms at 8 kHz whether or not a packet was sent, so it keeps real
 * time across silence and skips. The marker bit marks the first packet of a talk spurt: the first
 * packet, audio after silence or after a key, and the first packet of each key event (whose packets
 * all carry the timestamp of its start).
 *
 * After a stall of the event loop, the packets due are sent at once up to `maxCatchUp`; older
 * packet times are skipped (their timestamps pass unused) rather than sent as a long burst the far
 * end could not play in time. The clock and the timers are injected, so a test runs ten thousand
 * packets in a moment; `tick(now)` is public so that one shared clock can drive many pacers.
 */
import { encodeRtp, randomUint32 } from './rtp.js';

/** What the source gives for one packet time. */
export type PacerFrame =
  | { kind: 'audio'; payload: Uint8Array }
  /** One packet of a key event; `start` on its first, which sets the event's timestamp. */
  | { kind: 'event'; payloadType: number; payload: Uint8Array; start: boolean };

/** The clock and the timers the pacer runs on (`systemTimers` outside tests). */
export interface PacerTimers {
  /** A monotonic time, ms. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: PacerTimers = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RtpPacerOptions {
  /** The negotiated audio payload type. */
  payloadType: number;
  /** Our SSRC (random by default). */
  ssrc?: number;
  /** The payload of a packet time with nothing to say: `silence(format, packetMs)`. */
  silence: Uint8Array;
  /** Pulled once per packet time: what to send then, or null for silence. */
  next: () => PacerFrame | null;
  send: (packet: Uint8Array) => void;
  /** Default 20 ms. */
  packetMs?: number;
  /** Default 8000 Hz (G.711). */
  clockRate?: number;
  /** The first sequence number and timestamp (random by default, RFC 3550 §5.1). */
  sequence?: number;
  timestamp?: number;
  timers?: PacerTimers;
  /** Packets sent at once to catch up after a stall (default 5: 100 ms); older ones are skipped. */
  maxCatchUp?: number;
  /** Send the silence payload when the source has nothing (default true); false sends nothing. */
  sendSilence?: boolean;
}

export interface PacerStats {
  /** Packets and payload octets sent (an RTCP sender report's counts). */
  packets: number;
  octets: number;
  /** Packet times skipped after stalls. */
  skipped: number;
}

/** Slack for floating-point times: a timer that wakes at the due time counts as on time. */
const EPSILON_MS = 1e-6;

export class RtpPacer {
  readonly ssrc: number;
  readonly #options: RtpPacerOptions;
  readonly #timers: PacerTimers;
  readonly #packetMs: number;
  readonly #samplesPerPacket: number;
  readonly #firstTimestamp: number;
  #sequence: number;
  #epochMs = 0;
  /** The index of the next packet time to serve. */
  #index = 0;
  #running = false;
  #timer: unknown;
  /** Whether the last packet time carried audio (the next audio continues its talk spurt). */
  #inSpurt = false;
  #eventTimestamp: number | undefined;
  #stats: PacerStats = { packets: 0, octets: 0, skipped: 0 };

  constructor(options: RtpPacerOptions) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
    this.#packetMs = options.packetMs ?? 20;
    const clockRate = options.clockRate ?? 8000;
    this.#samplesPerPacket = (clockRate * this.#packetMs) / 1000;
    if (!Number.isInteger(this.#samplesPerPacket) || this.#samplesPerPacket <= 0) {
      throw new RangeError(`a packet time of ${this.#packetMs} ms is not a whole number of samples`);
    }
    this.ssrc = options.ssrc ?? randomUint32();
    this.#sequence = options.sequence ?? randomUint32() & 0xffff;
    this.#firstTimestamp = options.timestamp ?? randomUint32();
  }

  /** Starts the clock: the first packet goes now, then one every packet time. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#epochMs = this.#timers.now();
    this.#index = 0;
    this.#schedule();
    this.tick(this.#epochMs);
  }

  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Sends every packet due by `nowMs` (the timer calls it; a shared clock may too). */
  tick(nowMs: number): void {
    if (!this.#running) return;
    const due = Math.floor((nowMs - this.#epochMs + EPSILON_MS) / this.#packetMs);
    const maxCatchUp = this.#options.maxCatchUp ?? 5;
    if (due - this.#index + 1 > maxCatchUp) {
      const skip = due - this.#index + 1 - maxCatchUp;
      this.#stats.skipped += skip;
      this.#index += skip;
      // The far end hears a gap: what follows starts a new talk spurt.
      this.#inSpurt = false;
    }
    for (; this.#index <= due; this.#index++) this.#serve(this.#index);
  }

  /** The RTP timestamp of an instant (for the RTCP sender report's pair of clocks). */
  timestampAt(nowMs: number): number {
    const samples = Math.round(((nowMs - this.#epochMs) * this.#samplesPerPacket) / this.#packetMs);
    return (this.#firstTimestamp + samples) % 2 ** 32;
  }

  get stats(): PacerStats {
    return { ...this.#stats };
  }

  #schedule(): void {
    const now = this.#timers.now();
    const due = Math.floor((now - this.#epochMs + EPSILON_MS) / this.#packetMs);
    // The next packet time on the grid that is still ahead: late wake-ups never move the grid.
    const at = this.#epochMs + Math.max(this.#index, due + 1) * this.#packetMs;
    this.#timer = this.#timers.setTimeout(() => this.#wake(), Math.max(0, Math.ceil(at - now)));
  }

  #wake(): void {
    if (!this.#running) return;
    // Scheduled before sending, so that a source that throws cannot stop the clock.
    this.#schedule();
    this.tick(this.#timers.now());
  }

  /** Sends (or not) the packet of packet time `index`. */
  #serve(index: number): void {
    const timestamp = (this.#firstTimestamp + index * this.#samplesPerPacket) % 2 ** 32;
    const frame = this.#options.next();
    const first = this.#stats.packets === 0;
    if (!frame) {
      this.#inSpurt = false;
      if (this.#options.sendSilence === false) return;
      this.#send(this.#options.payloadType, timestamp, first, this.#options.silence);
    } else if (frame.kind === 'audio') {
      const marker = first || !this.#inSpurt;
      this.#inSpurt = true;
      this.#send(this.#options.payloadType, timestamp, marker, frame.payload);
    } else {
      if (frame.start || this.#eventTimestamp === undefined) this.#eventTimestamp = timestamp;
      this.#inSpurt = false;
      this.#send(frame.payloadType, this.#eventTimestamp, frame.start, frame.payload);
    }
  }

  #send(payloadType: number, timestamp: number, marker: boolean, payload: Uint8Array): void {
    const packet = encodeRtp({
      payloadType,
      sequence: this.#sequence,
      timestamp,
      ssrc: this.ssrc,
      marker,
      payload,
    });
    this.#sequence = (this.#sequence + 1) & 0xffff;
    this.#stats.packets += 1;
    this.#stats.octets += payload.length;
    this.#options.send(packet);
  }
}

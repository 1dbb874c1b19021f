/**
 * One call's media over RTP: the endpoint that puts the pure pieces (pacer, send queue, key sender
 * and receiver, jitter buffer, RTCP) on a pair of UDP sockets, and speaks to the runtime in the
 * terms of a carrier's media stream (`MediaSender` in voice/transport.ts): audio of any length out,
 * marks echoed once their audio has gone, `clear` for barge-in; 20 ms frames and keys in.
 *
 * Choices that matter with real trunks:
 * - We send all the time: a packet of codec silence every packet time when there is nothing to say.
 *   Trunks and session border controllers judge a stream dead without packets, NATs forget a quiet
 *   mapping, and a far jitter buffer that starves re-buffers at every talk spurt; silence costs 8 kB/s of
 *   payload.
 *   Timestamps advance 160 per 20 ms across it (RFC 3550 §5.1), sequence numbers by one a packet.
 * - Symmetric RTP (RFC 4961, "comedia"): a trunk behind NAT sends from an address other than its SDP
 *   one and only hears us there, so we latch onto the source of the first valid packet and send there;
 *   packets from any other source afterwards are dropped (nobody else can inject audio or keys).
 *   `mayLatch` narrows who may be latched at all: without it, a stranger's packet arriving before the
 *   far end's first would take the call's audio ("RTP bleed"); with it, only the addresses the call's
 *   signalling vouches for can, and RTCP (reports, BYE) is read only from them too.
 * - A key goes as RFC 4733 events when the far end took telephone-event, audio paused meanwhile; when
 *   it did not, as in-band tones (voice/dtmf-tones.ts), also ahead of the queued audio.
 * - Nothing received ever throws out of a socket handler: a datagram that is not ours is counted and
 *   dropped, and an exception from a callback goes to `onError`.
 * - On hold (the far end said sendonly, inactive or 0.0.0.0) the clock, the queue and the marks run
 *   as usual but no audio leaves, so the runtime behaves the same.
 * Time comes from injected timers, and the NTP wall clock and RTCP's randomness are injectable, so a
 * test can run a call's clock by hand against real sockets.
 */
import type dgram from 'node:dgram';
import type { AudioFormat } from '../voice/audio.js';
import { ALAW_8K, MULAW_8K, silence } from '../voice/audio.js';
import { dtmfAudio } from '../voice/dtmf-tones.js';
import { JitterBuffer } from './jitter-buffer.js';
import type { SenderInfo } from './rtcp.js';
import { type RemoteReport, RtcpReporter } from './rtcp-reporter.js';
import { decodeRtp, randomUint32 } from './rtp.js';
import { KeyReceiver, KeySender } from './rtp-events.js';
import { type PacerFrame, type PacerTimers, RtpPacer, systemTimers } from './rtp-pacer.js';
import { SendQueue } from './rtp-send-queue.js';
import type { NegotiatedMedia } from './sdp.js';

/** RFC 3550 §6.2's minimum report interval, for a call's two members. */
export const RTCP_INTERVAL_MS = 5000;
const FRAME_MS = 20;

export type { RemoteReport } from './rtcp-reporter.js';

export interface RtpSessionStats {
  /** RTP packets put on the wire (none on hold). */
  packetsSent: number;
  /** Valid RTP packets taken from the far end (audio and key events). */
  packetsReceived: number;
  packetsLost: number;
  /** Interarrival jitter of the far end's stream (RFC 3550 §6.4.1). */
  jitterMs: number;
  lateOrDuplicate: number;
  /** Datagrams dropped on the RTP port: not RTP, RTCP, a payload type we did not agree, a stranger. */
  rejected: number;
  /** RTCP compound packets sent (reports and the BYE) and read. */
  reportsSent: number;
  reportsReceived: number;
  remoteLoss?: RemoteReport;
}

export interface RtpSessionOptions {
  /** The pair from `PortRange.allocate`; the session closes them on `close()`. */
  sockets: { rtp: dgram.Socket; rtcp: dgram.Socket };
  media: NegotiatedMedia;
  timers?: PacerTimers;
  /** Unix ms for RTCP's NTP times (default Date.now). */
  wallClock?: () => number;
  /** 0 ≤ x < 1, for the RTCP interval's 0.5–1.5× spread (default Math.random). */
  random?: () => number;
  /** Mean RTCP interval (default 5 s). */
  rtcpIntervalMs?: number;
  /** Jitter buffer delay (default its 60 ms). */
  playoutDelayMs?: number;
  /** SDES CNAME (default a random one, as RFC 7022 allows). */
  cname?: string;
  /** Our SSRC, first sequence and timestamp (random by default). */
  ssrc?: number;
  sequence?: number;
  timestamp?: number;
  /** One 20 ms frame of the far end's audio, in the call's G.711, silence where a packet was lost. */
  onAudio?: (frame: Uint8Array) => void;
  /** A key the far end pressed, once per press. */
  onDigit?: (key: string) => void;
  /** The audio queued before the mark has been sent (or dropped by `clear`). */
  onMark?: (name: string) => void;
  onRemoteReport?: (report: RemoteReport) => void;
  /** The far end said RTCP BYE. */
  onBye?: () => void;
  /** An exception from a callback, or a socket error; the session goes on. */
  onError?: (error: unknown) => void;
  /** Which source addresses may be latched (and send RTCP); any when absent. */
  mayLatch?: (address: string) => boolean;
}

interface Endpoint {
  address: string;
  port: number;
}

export class RtpSession {
  readonly ssrc: number;
  readonly format: AudioFormat;
  readonly #options: RtpSessionOptions;
  readonly #sockets: { rtp: dgram.Socket; rtcp: dgram.Socket };
  readonly #media: NegotiatedMedia;
  readonly #timers: PacerTimers;
  readonly #pacer: RtpPacer;
  readonly #queue: SendQueue;
  /** In-band key tones, ahead of the audio, when the far end takes no telephone-event. */
  readonly #tones: SendQueue;
  readonly #keys: KeySender | null;
  readonly #keyReceiver = new KeyReceiver();
  readonly #jitter: JitterBuffer;
  readonly #canSend: boolean;
  #remote: Endpoint;
  #latched = false;
  #remoteRtcp: Endpoint;
  #rtcpLatched = false;
  /** Marks reached by the packet being sent; they fire once it is on its way. */
  #dueMarks: string[] = [];
  #sent = { packets: 0, octets: 0 };
  #received = 0;
  #rejected = 0;
  #reports = { sent: 0, received: 0 };
  readonly #rtcp: RtcpReporter;
  #playoutEpoch = 0;
  #playoutTimer: unknown;
  #rtcpTimer: unknown;
  #closed = false;

  constructor(options: RtpSessionOptions) {
    this.#options = options;
    this.#sockets = options.sockets;
    this.#media = options.media;
    this.#timers = options.timers ?? systemTimers;
    const media = options.media;
    this.format = media.codec === 'PCMA' ? ALAW_8K : MULAW_8K;
    const packetSilence = silence(this.format, media.ptime);
    this.#queue = new SendQueue(packetSilence);
    this.#tones = new SendQueue(packetSilence);
    this.#keys =
      media.telephoneEventPayloadType === null
        ? null
        : new KeySender(media.telephoneEventPayloadType, { packetMs: media.ptime });
    this.#jitter = new JitterBuffer({ format: this.format, delayMs: options.playoutDelayMs });
    this.#canSend =
      !media.hold &&
      (media.direction === 'sendrecv' || media.direction === 'sendonly') &&
      !isUnspecified(media.remoteAddress);
    this.#remote = { address: media.remoteAddress, port: media.remotePort };
    this.#remoteRtcp = { address: media.remoteAddress, port: media.remoteRtcpPort };
    this.#pacer = new RtpPacer({
      payloadType: media.payloadType,
      ssrc: options.ssrc,
      sequence: options.sequence,
      timestamp: options.timestamp,
      silence: packetSilence,
      packetMs: media.ptime,
      timers: this.#timers,
      next: () => this.#nextFrame(),
      send: (packet) => this.#sendRtp(packet),
    });
    this.ssrc = this.#pacer.ssrc;
    this.#rtcp = new RtcpReporter({
      ssrc: this.ssrc,
      cname: options.cname ?? `${randomUint32().toString(16)}@switchboard`,
      clockRate: this.format.sampleRate,
      wallClock: options.wallClock ?? Date.now,
    });
    this.#sockets.rtp.on('message', (data, source) => this.#guard(() => this.#receiveRtp(data, source)));
    this.#sockets.rtcp.on('message', (data, source) => this.#guard(() => this.#receiveRtcp(data, source)));
    this.#sockets.rtp.on('error', (error) => this.#report(error));
    this.#sockets.rtcp.on('error', (error) => this.#report(error));
    this.#pacer.start();
    this.#playoutEpoch = this.#timers.now();
    this.#schedulePlayout();
    this.#scheduleRtcp();
  }

  // --- the runtime's side (MediaSender) ---------------------------------------------------------

  /** Queues G.711 audio in the call's codec, any length; it leaves at 20 ms a packet. */
  media(audio: Uint8Array): void {
    if (!this.#closed) this.#queue.push(audio);
  }

  /** `onMark(name)` fires once every byte queued before it has been sent. */
  mark(name: string): void {
    if (!this.#closed) this.#queue.mark(name);
  }

  /** Drops the queued audio; pending marks fire at once, in order. */
  clear(): void {
    for (const name of this.#queue.clear()) this.#guard(() => this.#options.onMark?.(name));
  }

  /** Sends keys (0-9, *, #, A-D, `w` a pause): RFC 4733 events, or in-band tones if not agreed. */
  sendDigit(key: string): void {
    if (this.#closed) return;
    if (this.#keys) this.#keys.send(key);
    else this.#tones.push(dtmfAudio(key, this.format));
  }

  stats(): RtpSessionStats {
    const jitter = this.#jitter.stats;
    const remoteLoss = this.#rtcp.remoteReport;
    return {
      packetsSent: this.#sent.packets,
      packetsReceived: this.#received,
      packetsLost: jitter.lost,
      jitterMs: jitter.jitterMs,
      lateOrDuplicate: jitter.late + jitter.duplicates,
      rejected: this.#rejected,
      reportsSent: this.#reports.sent,
      reportsReceived: this.#reports.received,
      ...(remoteLoss ? { remoteLoss } : {}),
    };
  }

  /** Where our RTP goes now: the SDP's address until the far end's first packet latches its source. */
  get remote(): Endpoint {
    return { ...this.#remote };
  }

  /** Sends RTCP BYE, stops every timer and closes both sockets. Queued audio and marks are dropped. */
  async close(reason?: string): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.clear();
    this.#pacer.stop();
    this.#timers.clearTimeout(this.#playoutTimer);
    this.#timers.clearTimeout(this.#rtcpTimer);
    const bye = this.#rtcp.bye(this.#senderInfo(), reason);
    await new Promise<void>((resolve) => {
      if (isUnspecified(this.#remoteRtcp.address)) return resolve();
      try {
        this.#sockets.rtcp.send(bye, this.#remoteRtcp.port, this.#remoteRtcp.address, () => resolve());
        this.#reports.sent += 1;
      } catch (error) {
        // The sockets were closed already (released before the session): nothing to say BYE with.
        this.#report(error);
        resolve();
      }
    });
    await Promise.all([closeSocket(this.#sockets.rtp), closeSocket(this.#sockets.rtcp)]);
  }

  // --- sending ----------------------------------------------------------------------------------

  /** The pacer's source: a key's packets, else key tones, else the queued audio, else silence. */
  #nextFrame(): PacerFrame | null {
    // A key's packets, and its gap as silence: the audio waits until the keys are done.
    if (this.#keys?.sending) return this.#keys.next();
    if (this.#tones.queuedBytes > 0) return { kind: 'audio', payload: this.#tones.next().audio! };
    const { audio, marks } = this.#queue.next();
    this.#dueMarks.push(...marks);
    return audio ? { kind: 'audio', payload: audio } : null;
  }

  #sendRtp(packet: Uint8Array): void {
    if (this.#canSend) {
      // Guarded: a socket closed under us throws at once, and this runs in the pacer's timer.
      this.#guard(() => {
        this.#sockets.rtp.send(packet, this.#remote.port, this.#remote.address, (error) => {
          if (error) this.#report(error);
        });
        this.#sent.packets += 1;
        this.#sent.octets += packet.length - 12;
      });
    }
    const marks = this.#dueMarks;
    this.#dueMarks = [];
    for (const name of marks) this.#guard(() => this.#options.onMark?.(name));
  }

  // --- receiving --------------------------------------------------------------------------------

  #receiveRtp(data: Uint8Array, source: dgram.RemoteInfo): void {
    const decoded = decodeRtp(data);
    const types = this.#media.receivePayloadTypes;
    const packet = decoded.ok ? decoded.packet : undefined;
    const isAudio = packet?.payloadType === types.audio;
    const isEvent = types.telephoneEvent !== null && packet?.payloadType === types.telephoneEvent;
    if (!packet || !(isAudio || isEvent) || !this.#fromRemote(source)) {
      this.#rejected += 1;
      return;
    }
    this.#received += 1;
    const now = this.#timers.now();
    this.#jitter.push({ ...packet, payload: isAudio ? packet.payload : null }, now);
    if (isEvent) {
      const key = this.#keyReceiver.push(packet);
      if (key) this.#options.onDigit?.(key.key);
    }
  }

  /** Whether a valid packet comes from the far end; the first one latches its source (comedia). */
  #fromRemote(source: dgram.RemoteInfo): boolean {
    if (!this.#latched) {
      if (this.#options.mayLatch && !this.#options.mayLatch(source.address)) return false;
      this.#latched = true;
      this.#remote = { address: source.address, port: source.port };
      // RTCP follows to the same place: the SDP's RTCP port if RTP comes from its address (a=rtcp
      // honoured), else (a NAT's mapping) the port above the source's, until RTCP itself latches.
      const moved = source.address !== this.#media.remoteAddress || source.port !== this.#media.remotePort;
      if (!this.#rtcpLatched && moved) this.#remoteRtcp = { address: source.address, port: source.port + 1 };
      return true;
    }
    return source.address === this.#remote.address && source.port === this.#remote.port;
  }

  /** The next wake-up on the 20 ms grid from the start (late wake-ups never move the grid). */
  #schedulePlayout(): void {
    const now = this.#timers.now();
    const next = this.#playoutEpoch + (Math.floor((now - this.#playoutEpoch) / FRAME_MS) + 1) * FRAME_MS;
    this.#playoutTimer = this.#timers.setTimeout(() => this.#playout(), next - now);
  }

  #playout(): void {
    if (this.#closed) return;
    this.#schedulePlayout();
    for (const frame of this.#jitter.pull(this.#timers.now()))
      this.#guard(() => this.#options.onAudio?.(frame));
  }

  // --- RTCP -------------------------------------------------------------------------------------

  #scheduleRtcp(): void {
    const mean = this.#options.rtcpIntervalMs ?? RTCP_INTERVAL_MS;
    const interval = mean * (0.5 + (this.#options.random ?? Math.random)());
    this.#rtcpTimer = this.#timers.setTimeout(() => this.#guard(() => this.#sendReport()), interval);
  }

  #sendReport(): void {
    if (this.#closed) return;
    this.#scheduleRtcp();
    if (isUnspecified(this.#remoteRtcp.address)) return;
    const report = this.#rtcp.report(this.#timers.now(), this.#jitter.reception(), this.#senderInfo());
    this.#reports.sent += 1;
    this.#sockets.rtcp.send(report, this.#remoteRtcp.port, this.#remoteRtcp.address, (error) => {
      if (error) this.#report(error);
    });
  }

  /** The SR's sender info while we send (RFC 3550 §6.4: an RR when we have sent nothing). */
  #senderInfo(): SenderInfo | undefined {
    if (this.#sent.packets === 0) return undefined;
    return {
      ntpMs: (this.#options.wallClock ?? Date.now)(),
      rtpTimestamp: this.#pacer.timestampAt(this.#timers.now()),
      packetCount: this.#sent.packets,
      octetCount: this.#sent.octets,
    };
  }

  #receiveRtcp(data: Uint8Array, source: dgram.RemoteInfo): void {
    const trusted = this.#latched
      ? source.address === this.#remote.address
      : (this.#options.mayLatch?.(source.address) ?? true);
    if (!trusted) return;
    const reading = this.#rtcp.read(data, this.#timers.now());
    if (!reading) return;
    this.#reports.received += 1;
    if (!this.#rtcpLatched) {
      this.#rtcpLatched = true;
      this.#remoteRtcp = { address: source.address, port: source.port };
    }
    if (reading.remoteReport) this.#options.onRemoteReport?.(reading.remoteReport);
    if (reading.bye) this.#options.onBye?.();
  }

  // --- helpers ----------------------------------------------------------------------------------

  /** Runs a step of a socket handler or a timer: whatever it throws goes to `onError`. */
  #guard(step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#report(error);
    }
  }

  #report(error: unknown): void {
    try {
      this.#options.onError?.(error);
    } catch {
      // onError itself failed: nothing is left to tell.
    }
  }
}

function isUnspecified(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '';
}

function closeSocket(socket: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve();
    }
  });
}

/**
 * One SIP trunk call as the platform lives it: the dialog the user agent keeps (a `SipLeg`), the RTP
 * session its audio flows through, and the voice runtime that talks on it — bridged the way the media
 * route bridges a carrier's stream. The call reports its own statuses (ringing, in-progress, and how it
 * ended, with the SIP status kept) through `report`, which the agent points at
 * `CallService.applyStatus`: a trunk has no status webhooks.
 *
 * Life: made when the INVITE goes out (outbound) or is accepted (inbound); `answered` once media is
 * agreed and the dialog confirmed — the RTP session starts and the runtime attaches, caller audio
 * waiting (bounded) until it has; then the far end's BYE (`ended('remote')`), our hang-up or the
 * runtime closing the stream (`hangUp`: CANCEL before the answer, BYE after) end it, exactly once.
 *
 * A transfer the trunk will not take as a REFER becomes a bridge (`transfer.ts`): while the target
 * rings the caller hears ringback; once it answers, the runtime lets go of the call (its closing the
 * stream no longer hangs up) and the caller's audio and keys go to the target's leg and back, until
 * either side hangs up — then the other is hung up too, and the call ends `completed`.
 */
import type { Tenant } from '../../db/tenant.js';
import type { MediaPorts } from '../../sip/port-range.js';
import { RtpSession } from '../../sip/rtp-session.js';
import type { NegotiatedMedia } from '../../sip/sdp.js';
import type { AudioFormat } from '../audio.js';
import type { BridgeDialing, BridgeLeg } from './bridge-leg.js';
import type { SipDirection, SipMetrics } from './metrics.js';
import { REFER_NOT_TAKEN, RINGBACK, ringbackCycle } from './transfer.js';
import { callStatusOfFailure, mediaSourceRule } from './trunk-settings.js';
import type { CallStatusEvent, MediaHandlers, SipRuntime } from './types.js';

/** The user agent's side of the call: how it is ended and moved. */
export interface SipLeg {
  /** CANCEL before the answer, BYE after; resolves when sent (the far end's answer is not awaited). */
  hangUp(): void;
  /** REFER the far end to `target`; the REFER's final status. */
  refer(target: string): Promise<number>;
}

export interface SipCallOptions {
  tenant: Tenant;
  callId: number;
  /** The dialog's Call-ID: the call's `call_sid`. */
  callSid: string;
  direction: SipDirection;
  /** The platform's number on the call (the caller id a transfer's second leg is placed from). */
  number: string;
  ports: MediaPorts;
  /**
   * Where the trunk's media may come from besides the SDP's address (the signalling peer, the
   * trunk's listed addresses and CIDR blocks): nobody else can take the call's audio.
   */
  mediaSources: readonly string[];
  releasePorts(ports: MediaPorts): Promise<void>;
  runtime: SipRuntime;
  report(event: CallStatusEvent): Promise<unknown>;
  metrics?: SipMetrics;
  log: { warn(object: object, message: string): void };
  /** Ended: the agent forgets the call. */
  onEnded(call: TrunkCall): void;
}

/** Caller audio kept while the runtime attaches (10 s of 20 ms frames); more is dropped. */
const MAX_WAITING_FRAMES = 500;
/** A `w` in digits to send: half a second's pause, as carriers read it. */
const DIGIT_PAUSE_MS = 500;

export class TrunkCall {
  leg: SipLeg | undefined;
  readonly createdAt = new Date();
  #state: 'setup' | 'ringing' | 'answered' | 'ended' = 'setup';
  #rtp: RtpSession | undefined;
  #handlers: MediaHandlers | undefined;
  #waiting: Array<(handlers: MediaHandlers) => void> = [];
  #answeredAt = 0;
  #cancelled = false;
  #digits: Promise<void> = Promise.resolve();
  /** Statuses are recorded one after another, in the order they happened. */
  #reports: Promise<unknown> = Promise.resolve();
  /** A transfer's second leg while it rings, then once bridged. */
  #dialing: BridgeDialing | undefined;
  #bridged: BridgeLeg | undefined;

  constructor(readonly options: SipCallOptions) {}

  get state(): 'setup' | 'ringing' | 'answered' | 'ended' {
    return this.#state;
  }

  /** The INVITE went out: reported at once, so that the record names the agent that holds the call. */
  placed(): void {
    if (this.#state === 'setup') this.#report({ status: 'queued' });
  }

  /** The far end rings (18x): reported once. */
  ringing(): void {
    if (this.#state !== 'setup') return;
    this.#state = 'ringing';
    this.#report({ status: 'ringing' });
  }

  /** Media agreed and the dialog confirmed: audio flows, and the runtime talks. */
  answered(media: NegotiatedMedia): void {
    if (this.#state === 'answered' || this.#state === 'ended') return;
    this.#state = 'answered';
    this.#answeredAt = Date.now();
    this.options.metrics?.answered(this.options.direction);
    const rtp = new RtpSession({
      sockets: this.options.ports,
      media,
      onAudio: (frame) =>
        this.#bridged ? this.#bridged.send(frame) : this.#deliver((handlers) => handlers.media(frame)),
      onDigit: (key) =>
        this.#bridged ? this.#bridged.sendDigit(key) : this.#deliver((handlers) => handlers.dtmf(key)),
      onMark: (name) => this.#deliver((handlers) => handlers.mark(name)),
      onError: (error) =>
        this.options.log.warn({ err: error, callId: this.options.callId }, 'SIP call media'),
      mayLatch: mediaSourceRule(media.remoteAddress, this.options.mediaSources),
    });
    this.#rtp = rtp;
    this.#report({ status: 'in-progress' });
    const { tenant, callId, callSid } = this.options;
    void Promise.resolve(
      this.options.runtime.attach({
        callId,
        tenant,
        carrier: 'sip_trunk',
        start: { streamId: callSid, callSid, parameters: {}, format: rtp.format },
        send: {
          media: (audio) => {
            if (!this.#bridged) rtp.media(audio);
          },
          mark: (name) => rtp.mark(name),
          clear: () => rtp.clear(),
          close: () => this.#runtimeClosed(),
        },
      }),
    ).then(
      (handlers) => {
        if (this.#state === 'ended') {
          handlers.ended('stop');
          return;
        }
        this.#handlers = handlers;
        for (const deliver of this.#waiting.splice(0)) deliver(handlers);
      },
      (error: unknown) => {
        this.options.log.warn({ err: error, callId }, 'the runtime did not take the SIP call');
        this.hangUp();
      },
    );
  }

  /** The call failed before an answer: a final response, our ring time-out, or a cancel. */
  failed(sip: { status: number; reason: string }, how: { ringTimedOut?: boolean } = {}): void {
    if (this.#state === 'answered' || this.#state === 'ended') return;
    this.#state = 'ended';
    this.options.metrics?.failed(this.options.direction, sip.status);
    const status = callStatusOfFailure(sip.status, { ...how, cancelled: this.#cancelled });
    this.#report({ status, durationSeconds: 0, sip });
    void this.#finish();
  }

  /** The dialog ended after the answer: the far end's BYE, or ours. */
  ended(by: 'remote' | 'local'): void {
    if (this.#state !== 'answered') {
      if (this.#state !== 'ended') this.failed({ status: 487, reason: 'Request Terminated' });
      return;
    }
    this.#state = 'ended';
    const seconds = (Date.now() - this.#answeredAt) / 1000;
    this.#dialing?.cancel();
    void this.#bridged?.hangUp();
    this.#detachRuntime(by === 'remote' ? 'stop' : 'closed');
    this.#report({ status: 'completed', durationSeconds: Math.max(1, Math.round(seconds)) });
    void this.#finish();
  }

  /** Ends the call from our side: CANCEL before the answer, BYE after. */
  hangUp(): void {
    if (this.#state === 'ended') return;
    if (this.#state !== 'answered') this.#cancelled = true;
    this.leg?.hangUp();
    if (this.#state === 'answered') this.ended('local');
  }

  /** Plays keys into the call (RFC 4733 events, or tones): `w` pauses half a second. */
  sendDigits(digits: string): Promise<void> {
    const rtp = this.#rtp;
    if (!rtp || this.#state !== 'answered') return Promise.reject(new Error('the call is not answered'));
    this.#digits = this.#digits.then(async () => {
      for (const key of digits) {
        if (this.#state !== 'answered') return;
        if (key === 'w' || key === 'W') await new Promise((resolve) => setTimeout(resolve, DIGIT_PAUSE_MS));
        else rtp.sendDigit(key);
      }
    });
    return this.#digits;
  }

  /**
   * Asks the far end to take the call to `target` (REFER) and ends our leg when it has; when the
   * trunk will not take a REFER and `bridge` is given, calls the target through it instead and
   * bridges the legs once it answers. Rejects when the call could not be moved (it stays as it was).
   */
  async transfer(
    target: string,
    bridge?: (format: AudioFormat) => Promise<BridgeDialing>,
  ): Promise<'refer' | 'bridge'> {
    const rtp = this.#rtp;
    if (!this.leg || !rtp || this.#state !== 'answered' || this.#dialing || this.#bridged)
      throw new Error('the call is not answered');
    const status = await this.leg.refer(target);
    if (status >= 200 && status < 300) {
      this.options.metrics?.transferred('refer', true);
      this.hangUp();
      return 'refer';
    }
    if (!bridge || !REFER_NOT_TAKEN.has(status)) {
      this.options.metrics?.transferred('refer', false);
      throw new Error(`the trunk refused the transfer (${status})`);
    }
    const dialing = await bridge(rtp.format);
    this.#dialing = dialing;
    const stopRingback = this.#ringback(rtp);
    if (this.#state !== 'answered') dialing.cancel();
    try {
      const leg = await dialing.answered;
      if (this.#state !== 'answered') {
        await leg.hangUp();
        throw new Error('the caller hung up before the target answered');
      }
      this.#bridge(leg, rtp);
      this.options.metrics?.transferred('bridge', true);
      return 'bridge';
    } catch (error) {
      this.options.metrics?.transferred('bridge', false);
      throw error;
    } finally {
      stopRingback();
      this.#dialing = undefined;
    }
  }

  /** Caller ↔ target from now on: the runtime's part of the call is over. */
  #bridge(leg: BridgeLeg, rtp: RtpSession): void {
    this.#bridged = leg;
    leg.onAudio = (audio) => rtp.media(audio);
    leg.onDigit = (key) => rtp.sendDigit(key);
    leg.onEnded = () => this.hangUp();
  }

  /** Plays ringback into the call until the returned function stops it (and drops what is queued). */
  #ringback(rtp: RtpSession): () => void {
    const cycle = ringbackCycle(rtp.format);
    rtp.media(cycle);
    const timer = setInterval(() => rtp.media(cycle), RINGBACK.onMs + RINGBACK.offMs);
    return () => {
      clearInterval(timer);
      rtp.clear();
    };
  }

  /** The runtime closed its stream: the call ends, unless it was bridged to a transfer's target. */
  #runtimeClosed(): void {
    if (this.#bridged) this.#detachRuntime('closed');
    else this.hangUp();
  }

  #detachRuntime(reason: 'stop' | 'closed'): void {
    const handlers = this.#handlers;
    this.#handlers = undefined;
    this.#waiting = [];
    handlers?.ended(reason);
  }

  #deliver(act: (handlers: MediaHandlers) => void): void {
    if (this.#state === 'ended' || this.#bridged) return;
    if (this.#handlers) act(this.#handlers);
    else if (this.#waiting.length < MAX_WAITING_FRAMES) this.#waiting.push(act);
  }

  #report(change: Omit<CallStatusEvent, 'kind' | 'callSid' | 'at'>): void {
    const event: CallStatusEvent = {
      kind: 'call_status',
      callSid: this.options.callSid,
      at: new Date(),
      ...change,
    };
    this.#reports = this.#reports
      .then(() => this.options.report(event))
      .catch((error: unknown) => {
        this.options.log.warn(
          { err: error, callId: this.options.callId },
          'recording the SIP call status failed',
        );
      });
  }

  async #finish(): Promise<void> {
    const rtp = this.#rtp;
    if (rtp) {
      this.options.metrics?.media(rtp.stats());
      await rtp.close().catch(() => undefined);
    }
    await this.options.releasePorts(this.options.ports).catch(() => undefined);
    this.options.onEnded(this);
  }
}

/**
 * The second leg of a transfer the trunk would not take as a REFER: the platform calls the target
 * through the same trunk itself and, once it answers, carries audio and keys between the caller's
 * leg and this one — transcoding when the two legs agreed on different G.711 laws, which the offer
 * avoids where it can by putting the caller's law first. The platform stays in the media path until
 * either side hangs up; the call's record stays one call, as a carrier's transferred call does.
 *
 * `dialBridgeLeg` sends the INVITE at once and returns how to wait for the answer (`answered`, which
 * rejects with a `BridgeRefused` when the target is busy, does not answer or sends no usable audio)
 * and how to give up while it rings (`cancel`). Either way the leg's RTP ports are given back.
 */
import type { MediaPorts } from '../../sip/port-range.js';
import { RtpSession } from '../../sip/rtp-session.js';
import { type G711Codec, type LocalSdp, makeOffer, type NegotiatedMedia, readAnswer } from '../../sip/sdp.js';
import type { OutgoingCall } from '../../sip/user-agent.js';
import { type AudioFormat, decodeAudio, encodeAudio, sameFormat } from '../audio.js';
import { mediaSourceRule } from './trunk-settings.js';

export interface BridgeLegOptions {
  /** The caller's leg's audio: what `send` takes and `onAudio` gives. */
  format: AudioFormat;
  ports: MediaPorts;
  /** Our side of the offer (address, port, session id); its codecs are put in the caller's order. */
  local: LocalSdp;
  /** Sends the INVITE with this SDP offer through the trunk. */
  invite(sdp: string): OutgoingCall;
  releasePorts(ports: MediaPorts): Promise<void>;
  /** Where the target's media may come from besides its SDP's address (the trunk's). */
  mediaSources: readonly string[];
  log: { warn(object: object, message: string): void };
}

/** The target did not take the call: its final SIP status (408 when it rang out), and why. */
export class BridgeRefused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
  ) {
    super(`the transfer target did not answer (${status} ${reason})`);
  }
}

export interface BridgeDialing {
  /** The answered leg, or a `BridgeRefused`. */
  answered: Promise<BridgeLeg>;
  /** Gives up while the target rings (CANCEL); `answered` rejects. A no-op once answered. */
  cancel(): void;
}

export function dialBridgeLeg(options: BridgeLegOptions): BridgeDialing {
  const codecs: G711Codec[] = options.format.encoding === 'alaw' ? ['PCMA', 'PCMU'] : ['PCMU', 'PCMA'];
  const local: LocalSdp = { ...options.local, codecs };
  const outgoing = options.invite(makeOffer(local));
  let settled = false;
  const answered = new Promise<BridgeLeg>((resolve, reject) => {
    const refuse = (status: number, reason: string) => {
      settled = true;
      void options.releasePorts(options.ports).catch(() => undefined);
      reject(new BridgeRefused(status, reason));
    };
    outgoing.onAnswered = (sdp) => {
      const read = readAnswer(sdp, local);
      if (!read.ok) {
        void outgoing.bye().catch(() => undefined);
        return refuse(488, read.refusal.detail);
      }
      settled = true;
      resolve(new BridgeLeg(outgoing, read.media, options));
    };
    outgoing.onFailed = (failure) => refuse(failure.timedOut ? 408 : failure.status, failure.reason);
  });
  return {
    answered,
    cancel: () => {
      if (!settled) outgoing.cancel();
    },
  };
}

/** An answered second leg: its audio and keys go to `onAudio`/`onDigit`, the caller's come in by `send`. */
export class BridgeLeg {
  /** The target's audio, in the caller's leg's format. */
  onAudio: (audio: Uint8Array) => void = () => {};
  onDigit: (key: string) => void = () => {};
  /** The leg ended (the target hung up, or `hangUp`); once. */
  onEnded: () => void = () => {};
  readonly #rtp: RtpSession;
  #closing: Promise<void> | undefined;

  constructor(
    private readonly outgoing: OutgoingCall,
    media: NegotiatedMedia,
    private readonly options: BridgeLegOptions,
  ) {
    this.#rtp = new RtpSession({
      sockets: options.ports,
      media,
      onAudio: (frame) => this.onAudio(convert(frame, this.#rtp.format, options.format)),
      onDigit: (key) => this.onDigit(key),
      onError: (error) => options.log.warn({ err: error }, 'SIP transfer leg media'),
      mayLatch: mediaSourceRule(media.remoteAddress, options.mediaSources),
    });
    outgoing.onEnded = () => void this.#close();
  }

  /** The leg's own G.711 law (the caller's unless the target only spoke the other). */
  get format(): AudioFormat {
    return this.#rtp.format;
  }

  /** The caller's audio (in the caller's leg's format), on to the target. */
  send(audio: Uint8Array): void {
    if (!this.#closing) this.#rtp.media(convert(audio, this.options.format, this.#rtp.format));
  }

  sendDigit(key: string): void {
    if (!this.#closing) this.#rtp.sendDigit(key);
  }

  /** BYE to the target; resolves once the leg's media is closed. */
  hangUp(): Promise<void> {
    if (!this.#closing) void this.outgoing.bye().catch(() => undefined);
    return this.#close();
  }

  #close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#rtp.close().catch(() => undefined);
      await this.options.releasePorts(this.options.ports).catch(() => undefined);
      this.onEnded();
    })();
    return this.#closing;
  }
}

function convert(audio: Uint8Array, from: AudioFormat, to: AudioFormat): Uint8Array {
  return sameFormat(from, to) ? audio : encodeAudio(to, decodeAudio(from, audio));
}

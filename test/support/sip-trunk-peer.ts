/**
 * A SIP trunk for tests that need to hear a call's audio, which sipp cannot: the platform's own SIP
 * pieces (transport, user agent, RTP sessions) on loopback, playing the organization's trunk. Every
 * INVITE it gets becomes a `PeerCall` that rings, is answered (or refused, as `answer` decides), keeps
 * every 20 ms frame it hears with its arrival time, and plays what a test gives it. Like any user
 * agent of ours, it answers an in-dialog REFER with 405: a trunk that does not take REFER.
 */

import { PortRange } from '../../src/sip/port-range.js';
import { systemTimers } from '../../src/sip/rtp-pacer.js';
import { RtpSession } from '../../src/sip/rtp-session.js';
import { answerOffer, newSessionId } from '../../src/sip/sdp.js';
import { SipTransport } from '../../src/sip/transport.js';
import { parseUri } from '../../src/sip/uri.js';
import { type IncomingCall, UserAgent } from '../../src/sip/user-agent.js';
import { audioLevel, MULAW_8K, pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/audio.js';
import { waitFor } from './harness.js';

export interface HeardFrame {
  at: number;
  audio: Uint8Array;
}

export interface PeerCall {
  /** The dialled number (the Request-URI's user part). */
  to: string;
  /** The caller id (the From URI's user part). */
  from: string;
  incoming: IncomingCall;
  /** When the INVITE came, and when the peer answered it (0 until then). */
  invitedAt: number;
  answeredAt: number;
  heard: HeardFrame[];
  digits: string[];
  ended: boolean;
  play(audio: Uint8Array): void;
  hangUp(): Promise<void>;
}

export interface PeerOptions {
  /** The first of the peer's RTP ports (it takes 40 from there). */
  rtpMin: number;
  /**
   * What to do with a call to `to`: answer after `ringMs` (default 0), or refuse with a status.
   * Default: answer at once.
   */
  answer?: (to: string) => { ringMs?: number; refuse?: number };
}

export class SipTrunkPeer {
  readonly calls: PeerCall[] = [];

  private constructor(
    private readonly transport: SipTransport,
    private readonly ua: UserAgent,
    private readonly ports: PortRange,
    private readonly options: PeerOptions,
  ) {}

  static async start(options: PeerOptions): Promise<SipTrunkPeer> {
    const holder: { peer?: SipTrunkPeer } = {};
    let ua: UserAgent | undefined;
    const transport = await SipTransport.listen({
      host: '127.0.0.1',
      port: 0,
      onMessage: (message, source, via) => ua?.receive(message, source, via),
    });
    ua = new UserAgent({
      transport,
      timers: systemTimers,
      onInvite: (call) => void holder.peer?.answer(call),
    });
    const ports = new PortRange({ min: options.rtpMin, max: options.rtpMin + 39, host: '127.0.0.1' });
    holder.peer = new SipTrunkPeer(transport, ua, ports, options);
    return holder.peer;
  }

  get port(): number {
    return this.transport.localAddress('udp').port;
  }

  /** The `index`th call the peer received (0 first), once it has. */
  call(index: number, timeoutMs = 20_000): Promise<PeerCall> {
    return waitFor(() => this.calls[index], timeoutMs);
  }

  async close(): Promise<void> {
    for (const call of this.calls) if (!call.ended) await call.hangUp().catch(() => undefined);
    await this.ua.close().catch(() => undefined);
    await this.transport.close();
  }

  private async answer(incoming: IncomingCall): Promise<void> {
    const invitedAt = Date.now();
    const to = userOf(incoming.request.uri);
    const decision = this.options.answer?.(to) ?? {};
    if (decision.refuse) return incoming.reject(decision.refuse);
    const ports = await this.ports.allocate();
    const answer = answerOffer(incoming.sdp, {
      address: '127.0.0.1',
      port: ports.port,
      sessionId: newSessionId(),
      version: 1,
    });
    if (!answer.ok) {
      await this.ports.release(ports);
      return incoming.reject(answer.refusal.status);
    }
    const heard: HeardFrame[] = [];
    const digits: string[] = [];
    const rtp = new RtpSession({
      sockets: ports,
      media: answer.media,
      onAudio: (audio) => heard.push({ at: Date.now(), audio }),
      onDigit: (key) => digits.push(key),
    });
    const call: PeerCall = {
      to,
      from: userOf(incoming.from),
      incoming,
      invitedAt,
      answeredAt: 0,
      heard,
      digits,
      ended: false,
      play: (audio) => rtp.media(audio),
      hangUp: async () => {
        if (!call.ended) await incoming.bye().catch(() => undefined);
      },
    };
    incoming.onEnded = () => {
      call.ended = true;
      void rtp.close().then(() => this.ports.release(ports));
    };
    this.calls.push(call);
    incoming.ringing();
    if (decision.ringMs) await new Promise((resolve) => setTimeout(resolve, decision.ringMs));
    if (incoming.phase !== 'pending') return; // cancelled while it rang
    call.answeredAt = Date.now();
    incoming.accept(answer.sdp);
  }
}

function userOf(uri: string): string {
  try {
    return parseUri(uri).user ?? '';
  } catch {
    return '';
  }
}

/** μ-law frames' mean level (0–1 scale of `audioLevel`). */
export function level(frames: HeardFrame[]): number {
  if (frames.length === 0) return 0;
  return frames.reduce((sum, frame) => sum + audioLevel(MULAW_8K, frame.audio), 0) / frames.length;
}

/** The frequency of a single tone in μ-law frames, from its zero crossings (Hz). */
export function toneFrequency(frames: HeardFrame[]): number {
  let crossings = 0;
  let samples = 0;
  let previous = 0;
  for (const frame of frames) {
    for (const sample of ulawToPcm16(frame.audio)) {
      if ((previous < 0 && sample >= 0) || (previous >= 0 && sample < 0)) crossings++;
      previous = sample;
      samples++;
    }
  }
  return samples === 0 ? 0 : crossings / 2 / (samples / 8000);
}

/** A tone of `frequency` Hz for `ms`, μ-law at 8 kHz. */
export function tone(frequency: number, ms: number): Uint8Array {
  const samples = new Int16Array((8000 * ms) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * frequency * i) / 8000));
  return pcm16ToUlaw(samples);
}

/**
 * Between a carrier's media stream and the call runtime. The media route proves a stream belongs to
 * its call (carrier signature, single-call token, matching call id) before anything reaches the
 * runtime; then it hands the runtime a `MediaConnection` and feeds the handlers it gets back with the
 * stream's events, in order. The runtime speaks through `send`; it never sees the carrier's wire format.
 */
import type { Tenant } from '../db/tenant.js';
import type { MediaStreamStart } from '../providers/carriers/media.js';
import type { TelephonyProvider } from '../providers/ids.js';
import type { TurnRecord } from './turn-metrics.js';

export interface MediaSender {
  /** Audio for the caller, in the stream's format (any length; the runtime paces it). */
  media(audio: Uint8Array): void;
  /** A named mark after the audio sent so far; the carrier echoes it when that audio has played. */
  mark(name: string): void;
  /** Drops the audio the carrier holds but has not played. */
  clear(): void;
  /** Ends the stream (the call then ends, or the carrier goes on with the rest of its instructions). */
  close(): void;
}

/**
 * Someone following the call as it happens (a browser talking to the assistant): told what the
 * runtime records, as it records it. Carriers leave it unset; it never changes what the call does.
 */
export interface CallWatcher {
  /** A final transcript segment. */
  transcript(segment: { speaker: 'user' | 'assistant'; text: string }): void;
  /** A finished turn, with its measurements. */
  turn(turn: TurnRecord): void;
  /** A call event (`call.interrupted`, `call.dtmf`, `call.tool`…) with its data. */
  event(type: string, data: Record<string, unknown>): void;
}

export interface MediaConnection {
  callId: number;
  tenant: Tenant;
  /** Who carries the audio: a carrier, the SIP agent, or a browser (`web`). */
  carrier: TelephonyProvider | 'web';
  start: MediaStreamStart;
  send: MediaSender;
  watch?: CallWatcher;
}

export interface MediaHandlers {
  /** Caller audio, one frame at a time, in arrival order. */
  media(audio: Uint8Array, timestampMs?: number): void;
  mark(name: string): void;
  dtmf(digit: string): void;
  /** The caller asked the assistant to stop at once (a browser's Interrupt button); optional for carriers. */
  interrupt?(): void;
  /** The carrier stopped the stream or the socket closed (`reason` says which); called once, last. */
  ended(reason: 'stop' | 'closed' | 'error'): void;
}

export interface CallRuntime {
  /** A proven stream of a call started; returns where its further events go. */
  attach(connection: MediaConnection): MediaHandlers | Promise<MediaHandlers>;
}

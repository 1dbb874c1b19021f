/**
 * Between a carrier's media stream and the call runtime. The media route proves a stream belongs to
 * its call (carrier signature, single-call token, matching call id) before anything reaches the
 * runtime; then it hands the runtime a `MediaConnection` and feeds the handlers it gets back with the
 * stream's events, in order. The runtime speaks through `send`; it never sees the carrier's wire format.
 */
import type { Tenant } from '../db/tenant.js';
import type { MediaStreamStart } from '../providers/carriers/media.js';
import type { TelephonyProvider } from '../providers/ids.js';

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

export interface MediaConnection {
  callId: number;
  tenant: Tenant;
  carrier: TelephonyProvider;
  start: MediaStreamStart;
  send: MediaSender;
}

export interface MediaHandlers {
  /** Caller audio, one frame at a time, in arrival order. */
  media(audio: Uint8Array, timestampMs?: number): void;
  mark(name: string): void;
  dtmf(digit: string): void;
  /** The carrier stopped the stream or the socket closed (`reason` says which); called once, last. */
  ended(reason: 'stop' | 'closed' | 'error'): void;
}

export interface CallRuntime {
  /** A proven stream of a call started; returns where its further events go. */
  attach(connection: MediaConnection): MediaHandlers | Promise<MediaHandlers>;
}

/**
 * The contract of a carrier's media stream: the WebSocket a call's audio flows through, both ways.
 * One wire module per carrier (`carrier-a-media.ts`…) turns the carrier's messages into these events
 * and our audio, marks and clears into its messages. The media route speaks only this contract.
 */
import type { AudioFormat } from '../../voice/audio.js';
import type { CarrierId } from '../ids.js';

/** Where a call's media stream connects, and the single-call token that proves it is that call's. */
export interface MediaStreamTarget {
  /** `wss://{PUBLIC_URL host}/media-stream/{call_id}`, without a query string. */
  url: string;
  /** The signed media token (lib/media-token.ts). How it travels is each carrier's (see answerMarkup). */
  token: string;
  /**
   * The carrier's id of the call, where known when the markup is made (the answer request names it):
   * carrier_c has it echoed in its stream's first message.
   */
  callSid?: string;
}

/**
 * The stream URL with the token in its query: what carrier_b is given until its media wire takes the
 * token as its protocol allows (then this goes).
 */
export function streamUrlWithToken(stream: MediaStreamTarget): string {
  return `${stream.url}?token=${encodeURIComponent(stream.token)}`;
}

/** The WebSocket upgrade request of a media stream as it reached us. */
export interface MediaHandshake {
  /** The full public URL the carrier connected to (`wss://{PUBLIC_URL host}/media-stream/{id}`), no query. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What the carrier says about the stream when it starts. */
export interface MediaStreamStart {
  /** The carrier's id of this stream; outbound messages name it. */
  streamId: string;
  /** The carrier's id of the call (our call's `call_sid`). */
  callSid: string;
  /** The carrier account the stream belongs to, where the carrier says. */
  accountId?: string;
  /** Key-value pairs the answer markup asked the carrier to pass on (carrier_a `<Parameter>`). */
  parameters: Record<string, string>;
  /** The caller's audio format, which is also what the carrier plays. */
  format: AudioFormat;
}

export type MediaEvent =
  | { type: 'connected' }
  | { type: 'start'; start: MediaStreamStart }
  /** Caller audio (one frame, normally 20 ms); `timestampMs` from the stream's start, where given. */
  | { type: 'media'; audio: Uint8Array; timestampMs?: number }
  /** A mark we sent has been reached: the audio before it has played, or `clear` dropped it. */
  | { type: 'mark'; name: string }
  | { type: 'dtmf'; digit: string }
  /** The carrier ends the stream (the call hung up or the stream was stopped). */
  | { type: 'stop' };

/** A message the protocol does not allow; the route closes the stream on it. */
export class MediaProtocolError extends Error {
  override name = 'MediaProtocolError';
}

/** One stream's messages, in arrival order, as the events to handle, in the order to handle them. */
export interface MediaReader {
  /**
   * The events one message makes: none for a message the protocol allows but the runtime does not
   * need (or a frame held back to be put in order), several when it releases held frames. Throws
   * MediaProtocolError for anything malformed.
   */
  read(data: Buffer, isBinary: boolean): MediaEvent[];
}

/** A reader for wires whose every message stands alone (no state across messages). */
export function statelessReader(
  parse: (data: Buffer, isBinary: boolean) => MediaEvent | undefined,
): MediaReader {
  return {
    read(data, isBinary) {
      const event = parse(data, isBinary);
      return event ? [event] : [];
    },
  };
}

export interface CarrierMediaWire {
  readonly carrier: CarrierId;
  /**
   * A reader for one stream, made when its upgrade arrives (a wire may keep per-stream state:
   * carrier_b puts frames that arrive out of order back in sequence).
   */
  reader(handshake: MediaHandshake): MediaReader;
  /** Audio for the caller (in the stream's format), as the carrier's message. */
  media(streamId: string, audio: Uint8Array): string | Buffer;
  /** A mark the carrier echoes once everything sent before it has played. */
  mark(streamId: string, name: string): string;
  /** Drops the audio the carrier holds but has not played (pending marks echo at once). */
  clear(streamId: string): string;
  /**
   * The single-call token as this carrier delivers it: a `<Parameter>` (carrier_a), a header of the
   * upgrade (carrier_b's `stream_auth_token`), a header of `websocket:connected` (carrier_c, which
   * the reader puts in `start.parameters`).
   */
  tokenOf(start: MediaStreamStart, handshake: MediaHandshake): string | undefined;
}

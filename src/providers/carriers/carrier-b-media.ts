/**
 * carrier_b's media streaming wire format (the WebSocket its call-control `stream_url` opens): JSON
 * text messages, each but `connected` numbered by a `sequence_number` (a decimal string).
 * In: `connected`, `start` (`stream_id`, the call's `call_control_id`, the account's `user_id`,
 * `custom_parameters`, `media_format` PCMU or PCMA / 8000 / 1), `media` (`track`, `chunk`,
 * `timestamp`, base64 `payload`), `mark`, `dtmf`, `error`, `stop`. Out (bidirectional RTP mode):
 * `media` (base64 audio in the stream's codec), `mark`, `clear` — the socket is the stream, so they
 * name none.
 *
 * The carrier does not guarantee the order of media frames, so each stream's reader puts everything
 * after `start` back in `sequence_number` order (media-reorder.ts: a few held at most, a lost one
 * given up on). With both tracks streamed, only the `inbound` track is the caller; the outbound
 * track's frames are numbered too and only advance the count. The single-call token is the dial's
 * `stream_auth_token`, which the carrier sends as the `x-telnyx-streaming-auth-token` header of the
 * upgrade; the carrier does not sign the upgrade. `error` frames report what the carrier refused of
 * ours (a bad payload) and change nothing in the stream, so they are passed over.
 * The simulated carrier (sim/carrier-b-phone.ts) speaks the other side with `carrierBMediaMessages`.
 */
import { ALAW_8K, type AudioFormat, MULAW_8K } from '../../voice/audio.js';
import {
  type CarrierMediaWire,
  type MediaEvent,
  type MediaHandshake,
  MediaProtocolError,
  type MediaReader,
  type MediaStreamStart,
} from './media.js';
import { SequenceReorder } from './media-reorder.js';

/** The upgrade header carrying the dial's `stream_auth_token`. */
export const CARRIER_B_STREAM_TOKEN_HEADER = 'x-telnyx-streaming-auth-token';

/** The codecs the stream may carry to us, and back in RTP mode. */
export const CARRIER_B_CODECS: Record<string, AudioFormat> = { PCMU: MULAW_8K, PCMA: ALAW_8K };
export type CarrierBCodec = 'PCMU' | 'PCMA';

type Json = Record<string, unknown>;

const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function required(record: Json | undefined, key: string, event: string): string {
  const value = text(record?.[key]);
  if (value === undefined || value === '') throw new MediaProtocolError(`${event} without ${key}`);
  return value;
}

/** A message's `sequence_number`: a non-negative integer, as text or a number; undefined without one. */
function sequenceOf(message: Json): number | undefined {
  const raw = message.sequence_number;
  if (raw === undefined) return undefined;
  const value = typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new MediaProtocolError('a sequence_number that is not a non-negative integer');
  return value;
}

function parseStart(message: Json): MediaStreamStart {
  const start = object(message.start);
  if (!start) throw new MediaProtocolError('start without its start object');
  const media = object(start.media_format);
  const format = CARRIER_B_CODECS[text(media?.encoding) ?? ''];
  if (!media || !format || Number(media.sample_rate) !== 8000 || Number(media.channels ?? 1) !== 1)
    throw new MediaProtocolError('start with a media format other than PCMU or PCMA, 8000 Hz, mono');
  const parameters: Record<string, string> = {};
  for (const [key, value] of Object.entries(object(start.custom_parameters) ?? {})) {
    if (typeof value === 'string') parameters[key] = value;
  }
  const accountId = text(start.user_id);
  return {
    streamId: text(message.stream_id) ?? required(start, 'stream_id', 'start'),
    callSid: required(start, 'call_control_id', 'start'),
    ...(accountId ? { accountId } : {}),
    parameters,
    format,
  };
}

/** One message as an event (undefined: allowed, nothing to handle), with its number. */
function parse(data: Buffer, isBinary: boolean): { event: MediaEvent | undefined; sequence?: number } {
  if (isBinary) throw new MediaProtocolError('carrier_b media streams send text messages only');
  let message: Json | undefined;
  try {
    message = object(JSON.parse(data.toString('utf8')));
  } catch {
    throw new MediaProtocolError('not JSON');
  }
  if (!message) throw new MediaProtocolError('not a JSON object');
  const sequence = sequenceOf(message);
  const numbered = (event: MediaEvent | undefined) =>
    sequence === undefined ? { event } : { event, sequence };
  switch (message.event) {
    case 'connected':
      return { event: { type: 'connected' } };
    case 'start':
      return numbered({ type: 'start', start: parseStart(message) });
    case 'media': {
      const media = object(message.media);
      const payload = required(media, 'payload', 'media');
      // With both tracks streamed, the outbound one is what the caller hears (ours): not the caller.
      if (media?.track !== undefined && media.track !== 'inbound') return numbered(undefined);
      const timestamp = Number(media?.timestamp);
      return numbered({
        type: 'media',
        audio: Buffer.from(payload, 'base64'),
        ...(media?.timestamp !== undefined && Number.isFinite(timestamp) ? { timestampMs: timestamp } : {}),
      });
    }
    case 'mark':
      return numbered({ type: 'mark', name: required(object(message.mark), 'name', 'mark') });
    case 'dtmf':
      return numbered({ type: 'dtmf', digit: required(object(message.dtmf), 'digit', 'dtmf') });
    case 'error':
      return numbered(undefined);
    case 'stop':
      return numbered({ type: 'stop' });
    default:
      throw new MediaProtocolError(`unknown event ${JSON.stringify(message.event)}`);
  }
}

/** One stream's reader: messages before `start` as they come, everything after it in sequence. */
function orderedReader(): MediaReader {
  const order = new SequenceReorder<MediaEvent | undefined>();
  let started = false;
  const present = (events: Array<MediaEvent | undefined>) =>
    events.filter((event): event is MediaEvent => event !== undefined);
  return {
    read(data, isBinary) {
      const { event, sequence } = parse(data, isBinary);
      if (event?.type === 'start' && !started) {
        started = true;
        if (sequence !== undefined) order.begin(sequence);
        return [event];
      }
      // Before `start` nothing is held: whatever comes first is judged as it comes.
      if (!started || sequence === undefined) return present([event]);
      // The stream ends: what was held behind a gap is released first, in order.
      if (event?.type === 'stop') return [...present(order.flush()), event];
      return present(order.push(sequence, event));
    },
  };
}

function headerValue(headers: MediaHandshake['headers'], name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() || undefined;
}

export const carrierBMedia: CarrierMediaWire = {
  carrier: 'carrier_b',
  reader: () => orderedReader(),
  media: (_streamId, audio) =>
    JSON.stringify({ event: 'media', media: { payload: Buffer.from(audio).toString('base64') } }),
  mark: (_streamId, name) => JSON.stringify({ event: 'mark', mark: { name } }),
  clear: () => JSON.stringify({ event: 'clear' }),
  tokenOf: (_start, handshake) => headerValue(handshake.headers, CARRIER_B_STREAM_TOKEN_HEADER),
};

/** The carrier's side of the protocol, for the simulated carrier and tests: the messages it sends. */
export const carrierBMediaMessages = {
  connected: (token?: string) =>
    JSON.stringify({
      event: 'connected',
      version: '1.0.0',
      ...(token ? { [CARRIER_B_STREAM_TOKEN_HEADER]: token } : {}),
    }),
  start: (
    sequence: number,
    start: {
      streamId: string;
      callControlId: string;
      userId: string;
      from?: string;
      to?: string;
      clientState?: string | null;
      customParameters?: Record<string, string>;
      codec?: CarrierBCodec;
    },
  ) =>
    JSON.stringify({
      event: 'start',
      sequence_number: String(sequence),
      stream_id: start.streamId,
      start: {
        user_id: start.userId,
        call_control_id: start.callControlId,
        ...(start.from ? { from: start.from } : {}),
        ...(start.to ? { to: start.to } : {}),
        client_state: start.clientState ?? null,
        custom_parameters: start.customParameters ?? {},
        media_format: { encoding: start.codec ?? 'PCMU', sample_rate: 8000, channels: 1 },
      },
    }),
  media: (
    sequence: number,
    streamId: string,
    frame: { track?: 'inbound' | 'outbound'; chunk: number; timestampMs: number; audio: Uint8Array },
  ) =>
    JSON.stringify({
      event: 'media',
      sequence_number: String(sequence),
      media: {
        track: frame.track ?? 'inbound',
        chunk: String(frame.chunk),
        timestamp: String(frame.timestampMs),
        payload: Buffer.from(frame.audio).toString('base64'),
      },
      stream_id: streamId,
    }),
  mark: (sequence: number, streamId: string, name: string) =>
    JSON.stringify({ event: 'mark', sequence_number: String(sequence), stream_id: streamId, mark: { name } }),
  dtmf: (sequence: number, streamId: string, digit: string) =>
    JSON.stringify({
      event: 'dtmf',
      stream_id: streamId,
      occurred_at: new Date().toISOString(),
      sequence_number: String(sequence),
      dtmf: { digit },
    }),
  error: (sequence: number, streamId: string, error: { code: number; title: string; detail: string }) =>
    JSON.stringify({
      event: 'error',
      sequence_number: String(sequence),
      stream_id: streamId,
      payload: error,
    }),
  stop: (sequence: number, streamId: string, userId: string, callControlId: string) =>
    JSON.stringify({
      event: 'stop',
      sequence_number: String(sequence),
      stream_id: streamId,
      stop: { user_id: userId, call_control_id: callControlId },
    }),
};

/** What the platform sent the carrier, as the simulated carrier reads it. */
export type CarrierBOutbound =
  | { event: 'media'; media: { payload: string } }
  | { event: 'mark'; mark: { name: string } }
  | { event: 'clear' };

/**
 * carrier_a's media stream wire format (bidirectional `<Connect><Stream>`): JSON text messages.
 * In: `connected`, `start` (stream and call ids, μ-law/8000/1, the `<Parameter>`s as
 * `customParameters`), `media` (base64 μ-law, 20 ms, `timestamp` in ms as text), `dtmf`, `mark`,
 * `stop`. Out: `media`, `mark`, `clear`, each naming the stream. The carrier drops query strings from
 * stream URLs, so the single-call token arrives as the `token` custom parameter.
 * The simulated phone (sim/phone.ts) speaks the other side with `carrierAMediaMessages`.
 */
import { MULAW_8K } from '../../voice/audio.js';
import {
  type CarrierMediaWire,
  type MediaEvent,
  MediaProtocolError,
  type MediaStreamStart,
  statelessReader,
} from './media.js';

type Json = Record<string, unknown>;

const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function required(record: Json | undefined, key: string, event: string): string {
  const value = text(record?.[key]);
  if (value === undefined) throw new MediaProtocolError(`${event} without ${key}`);
  return value;
}

function parseStart(message: Json): MediaStreamStart {
  const start = object(message.start);
  if (!start) throw new MediaProtocolError('start without its start object');
  const format = object(start.mediaFormat);
  if (
    format &&
    (format.encoding !== 'audio/x-mulaw' ||
      Number(format.sampleRate) !== 8000 ||
      Number(format.channels ?? 1) !== 1)
  )
    throw new MediaProtocolError('start with a media format other than audio/x-mulaw, 8000 Hz, mono');
  const parameters: Record<string, string> = {};
  for (const [key, value] of Object.entries(object(start.customParameters) ?? {})) {
    if (typeof value === 'string') parameters[key] = value;
  }
  return {
    streamId: text(message.streamSid) ?? required(start, 'streamSid', 'start'),
    callSid: required(start, 'callSid', 'start'),
    ...(text(start.accountSid) ? { accountId: text(start.accountSid) } : {}),
    parameters,
    format: MULAW_8K,
  };
}

function parse(data: Buffer, isBinary: boolean): MediaEvent | undefined {
  if (isBinary) throw new MediaProtocolError('carrier_a media streams send text messages only');
  let message: Json | undefined;
  try {
    message = object(JSON.parse(data.toString('utf8')));
  } catch {
    throw new MediaProtocolError('not JSON');
  }
  if (!message) throw new MediaProtocolError('not a JSON object');
  switch (message.event) {
    case 'connected':
      return { type: 'connected' };
    case 'start':
      return { type: 'start', start: parseStart(message) };
    case 'media': {
      const media = object(message.media);
      const payload = required(media, 'payload', 'media');
      // Only the caller's track is audio to hear; `<Connect>` streams carry nothing else.
      if (media?.track !== undefined && media.track !== 'inbound') return undefined;
      const timestamp = Number(media?.timestamp);
      return {
        type: 'media',
        audio: Buffer.from(payload, 'base64'),
        ...(Number.isFinite(timestamp) ? { timestampMs: timestamp } : {}),
      };
    }
    case 'mark':
      return { type: 'mark', name: required(object(message.mark), 'name', 'mark') };
    case 'dtmf':
      return { type: 'dtmf', digit: required(object(message.dtmf), 'digit', 'dtmf') };
    case 'stop':
      return { type: 'stop' };
    default:
      throw new MediaProtocolError(`unknown event ${JSON.stringify(message.event)}`);
  }
}

export const carrierAMedia: CarrierMediaWire = {
  carrier: 'carrier_a',
  reader: () => statelessReader(parse),
  media: (streamId, audio) =>
    JSON.stringify({
      event: 'media',
      streamSid: streamId,
      media: { payload: Buffer.from(audio).toString('base64') },
    }),
  mark: (streamId, name) => JSON.stringify({ event: 'mark', streamSid: streamId, mark: { name } }),
  clear: (streamId) => JSON.stringify({ event: 'clear', streamSid: streamId }),
  tokenOf: (start) => start.parameters.token,
};

/** The carrier's side of the protocol, for the simulated phone: the messages it sends. */
export const carrierAMediaMessages = {
  connected: () => JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
  start: (
    sequence: number,
    start: {
      streamSid: string;
      callSid: string;
      accountSid: string;
      customParameters: Record<string, string>;
    },
  ) =>
    JSON.stringify({
      event: 'start',
      sequenceNumber: String(sequence),
      streamSid: start.streamSid,
      start: {
        accountSid: start.accountSid,
        streamSid: start.streamSid,
        callSid: start.callSid,
        tracks: ['inbound'],
        customParameters: start.customParameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    }),
  media: (sequence: number, streamSid: string, chunk: number, timestampMs: number, audio: Uint8Array) =>
    JSON.stringify({
      event: 'media',
      sequenceNumber: String(sequence),
      streamSid,
      media: {
        track: 'inbound',
        chunk: String(chunk),
        timestamp: String(timestampMs),
        payload: Buffer.from(audio).toString('base64'),
      },
    }),
  mark: (sequence: number, streamSid: string, name: string) =>
    JSON.stringify({ event: 'mark', sequenceNumber: String(sequence), streamSid, mark: { name } }),
  dtmf: (sequence: number, streamSid: string, digit: string) =>
    JSON.stringify({
      event: 'dtmf',
      sequenceNumber: String(sequence),
      streamSid,
      dtmf: { track: 'inbound_track', digit },
    }),
  stop: (sequence: number, streamSid: string, accountSid: string, callSid: string) =>
    JSON.stringify({
      event: 'stop',
      sequenceNumber: String(sequence),
      streamSid,
      stop: { accountSid, callSid },
    }),
};

/** What the platform sent the carrier, as the simulated phone reads it. */
export type CarrierAOutbound =
  | { event: 'media'; streamSid: string; media: { payload: string } }
  | { event: 'mark'; streamSid: string; mark: { name: string } }
  | { event: 'clear'; streamSid: string };

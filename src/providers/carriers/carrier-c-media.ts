/**
 * carrier_c's media stream wire format (the NCCO `connect` action's `websocket` endpoint,
 * developer.vonage.com/en/voice/voice-api/concepts/websockets): audio as binary messages, control as
 * JSON text.
 *
 * In: first `{"event":"websocket:connected","content-type":"audio/l16;rate=16000", …}` whose other
 * top-level fields are the endpoint's `headers` from our NCCO, flattened; then binary frames of
 * 16-bit little-endian linear PCM at 16 kHz (640 bytes, 20 ms); `websocket:notify` (a `notify`
 * action reached: the audio before it has played), `websocket:cleared` (a `clear` done),
 * `websocket:dtmf` (`digit` at the top level). Out: binary frames of the same PCM,
 * `{"action":"notify","payload":{"name":…}}` for a mark, `{"action":"clear"}`.
 *
 * There is no separate `start` and no stream id: `websocket:connected` is both the connection and
 * the start, so the reader turns it into a `start` carrying the headers as `parameters` — the
 * single-call `token` and the carrier's `call_uuid` are headers our NCCO put there. The upgrade is
 * not signed (we do not ask for the endpoint's `authorization` option); the token alone proves the
 * stream, as for carrier_b.
 *
 * A `clear` empties the carrier's buffer, and the `notify` actions queued in it go with the audio:
 * the documentation promises `websocket:cleared`, not the echoes of dropped notifies (carrier_a
 * echoes them at once). Nothing needs them: the playout (voice/playout.ts) forgets its pending marks
 * when it clears and ignores late ones. So `websocket:cleared` makes no event.
 *
 * The other side of the protocol — what the carrier sends — is `carrierCMediaMessages`, for the
 * simulated phone (sim/carrier-c-phone.ts).
 */
import { LINEAR16_16K } from '../../voice/audio.js';
import { type CarrierMediaWire, type MediaEvent, MediaProtocolError, type MediaReader } from './media.js';

/** The audio our NCCO asks for and the stream must announce. */
export const CARRIER_C_CONTENT_TYPE = 'audio/l16;rate=16000';
/** The NCCO header naming the carrier's call; comes back in `websocket:connected`. */
export const CALL_UUID_HEADER = 'call_uuid';
/** The NCCO header carrying the single-call media token. */
export const TOKEN_HEADER = 'token';

type Json = Record<string, unknown>;

const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

function parseJson(data: Buffer): Json {
  let message: Json | undefined;
  try {
    message = object(JSON.parse(data.toString('utf8')));
  } catch {
    throw new MediaProtocolError('not JSON');
  }
  if (!message) throw new MediaProtocolError('not a JSON object');
  return message;
}

/** `audio/l16;rate=16000` however the carrier spaces or cases it. */
function isOurContentType(value: unknown): boolean {
  return typeof value === 'string' && value.replace(/\s+/g, '').toLowerCase() === CARRIER_C_CONTENT_TYPE;
}

/** `websocket:connected` → the stream's start: its headers are the parameters. */
function connected(message: Json): MediaEvent {
  if (!isOurContentType(message['content-type']))
    throw new MediaProtocolError(
      `websocket:connected with content-type other than ${CARRIER_C_CONTENT_TYPE}`,
    );
  const parameters: Record<string, string> = {};
  for (const [key, value] of Object.entries(message)) {
    if (key !== 'event' && key !== 'content-type' && typeof value === 'string') parameters[key] = value;
  }
  const callSid = parameters[CALL_UUID_HEADER];
  if (!callSid) throw new MediaProtocolError(`websocket:connected without ${CALL_UUID_HEADER}`);
  // The carrier names no stream; the call's uuid stands in (outbound messages name none anyway).
  return { type: 'start', start: { streamId: callSid, callSid, parameters, format: LINEAR16_16K } };
}

/** A control message after the stream started. */
function control(message: Json): MediaEvent[] {
  switch (message.event) {
    case 'websocket:connected':
      // A second one: the route refuses a repeated start.
      return [connected(message)];
    case 'websocket:notify': {
      const name = object(message.payload)?.name;
      if (typeof name !== 'string') throw new MediaProtocolError('websocket:notify without payload.name');
      return [{ type: 'mark', name }];
    }
    case 'websocket:cleared':
      return [];
    case 'websocket:dtmf': {
      // The digit is at the top level; some accounts nest it as `dtmf.digit`.
      const digit = message.digit ?? object(message.dtmf)?.digit;
      if (typeof digit !== 'string' && typeof digit !== 'number')
        throw new MediaProtocolError('websocket:dtmf without digit');
      return [{ type: 'dtmf', digit: String(digit) }];
    }
    default:
      if (typeof message.event !== 'string') throw new MediaProtocolError('a message without event');
      // Events the carrier may add (it documents no closed list): nothing for the runtime.
      return [];
  }
}

/** One stream's reader: `websocket:connected` first, then audio and control in any order. */
function carrierCReader(): MediaReader {
  let started = false;
  return {
    read(data, isBinary) {
      if (!started) {
        if (isBinary) throw new MediaProtocolError('audio before websocket:connected');
        const message = parseJson(data);
        if (message.event !== 'websocket:connected')
          throw new MediaProtocolError(`${String(message.event)} before websocket:connected`);
        started = true;
        return [connected(message)];
      }
      if (isBinary) {
        if (data.length % 2 !== 0) throw new MediaProtocolError('audio of an odd number of bytes');
        return data.length === 0 ? [] : [{ type: 'media', audio: new Uint8Array(data) }];
      }
      return control(parseJson(data));
    },
  };
}

export const carrierCMedia: CarrierMediaWire = {
  carrier: 'carrier_c',
  reader: () => carrierCReader(),
  media: (_streamId, audio) => Buffer.from(audio),
  mark: (_streamId, name) => JSON.stringify({ action: 'notify', payload: { name } }),
  clear: () => JSON.stringify({ action: 'clear' }),
  tokenOf: (start) => start.parameters[TOKEN_HEADER],
};

/** The carrier's side of the protocol, for the simulated phone: the text messages it sends. */
export const carrierCMediaMessages = {
  /** The first message: the content type and the endpoint's headers, flattened. */
  connected: (headers: Record<string, string>) =>
    JSON.stringify({ event: 'websocket:connected', 'content-type': CARRIER_C_CONTENT_TYPE, ...headers }),
  notify: (payload: unknown) => JSON.stringify({ event: 'websocket:notify', payload }),
  cleared: () => JSON.stringify({ event: 'websocket:cleared' }),
  /** A key press; the carrier reports how long it was held (ms). */
  dtmf: (digit: string, durationMs = 250) =>
    JSON.stringify({ event: 'websocket:dtmf', digit, duration: durationMs }),
};

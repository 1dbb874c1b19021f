/**
 * The phone end of carrier_c's simulated calls, and carrier_c's side of a media stream as the
 * simulated phone speaks it. When a call to a number with a script (`setPhone`) is answered and the
 * platform's NCCO `connect`s a `websocket` endpoint, the simulator connects a SimulatedPhone to its
 * `uri` as carrier_c does — no signature on the upgrade, the endpoint's `headers` flattened into the
 * first message, `websocket:connected` — and runs the script (the call's life is PhoneCalls', shared
 * with carrier_a: carrier-a-phone.ts).
 *
 * The phone works in μ-law 8 kHz; carrier_c streams 16-bit PCM at 16 kHz both ways, so the wire
 * converts once each way with a streamed resampler (voice/resample.ts) and sends the caller's audio
 * in the carrier's 640-byte frames. `notify` actions are echoed as `websocket:notify` with their
 * payload once the audio before them has played; a `clear` is answered `websocket:cleared`, and the
 * notifies it emptied from the buffer are never echoed (carrier-c-media.ts says why). A hang-up
 * closes the socket: carrier_c sends nothing first.
 */
import { CARRIER_C_CONTENT_TYPE, carrierCMediaMessages } from '../providers/carriers/carrier-c-media.js';
import {
  bytesFor,
  FRAME_MS,
  LINEAR16_16K,
  l16ToPcm16,
  pcm16ToL16,
  pcm16ToUlaw,
  ulawToPcm16,
} from '../voice/audio.js';
import { Resampler } from '../voice/resample.js';
import { callDurationSeconds, type PhoneCall, PhoneCalls } from './carrier-a-phone.js';
import { completedFields } from './carrier-c-wire.js';
import type { SimulatedCall } from './carrier-sim.js';
import { SimulatedPhone } from './phone.js';
import type { PhoneInbound, PhoneWireFactory } from './phone-wire.js';

const FRAME_BYTES = bytesFor(LINEAR16_16K, FRAME_MS);

type Json = Record<string, unknown>;
const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

/** carrier_c: a JSON `websocket:connected` with the headers, then binary L16 16 kHz both ways. */
export const carrierCPhoneWire: PhoneWireFactory = (ids) => {
  const up = new Resampler(8000, 16000);
  let down = new Resampler(16000, 8000);
  /** Caller audio converted but not yet a whole frame. */
  let held = new Uint8Array(0);
  /** Notifies read and not yet echoed, by the name the phone's playout knows them by. */
  const notifies = new Map<string, unknown>();
  /** Notifies a clear emptied from the buffer: never echoed. */
  const dropped = new Set<string>();
  return {
    opening: () => [carrierCMediaMessages.connected(ids.parameters)],
    media(_index, _timestampMs, ulaw) {
      const l16 = pcm16ToL16(up.push(ulawToPcm16(ulaw)));
      const all = new Uint8Array(held.length + l16.length);
      all.set(held);
      all.set(l16, held.length);
      const out: Buffer[] = [];
      let offset = 0;
      for (; offset + FRAME_BYTES <= all.length; offset += FRAME_BYTES)
        out.push(Buffer.from(all.subarray(offset, offset + FRAME_BYTES)));
      held = all.slice(offset);
      return out;
    },
    markEcho(name) {
      const payload = notifies.get(name);
      notifies.delete(name);
      if (dropped.delete(name)) return undefined;
      return carrierCMediaMessages.notify(payload ?? { name });
    },
    cleared: () => carrierCMediaMessages.cleared(),
    dtmf: (digit) => carrierCMediaMessages.dtmf(digit),
    stop: () => undefined,
    read(data, isBinary): PhoneInbound {
      if (isBinary) {
        if (data.length % 2 !== 0) return { event: 'invalid', reason: 'audio of an odd number of bytes' };
        if (data.length === 0) return { event: 'ignored' };
        return { event: 'media', audio: pcm16ToUlaw(down.push(l16ToPcm16(data))) };
      }
      let message: Json | undefined;
      try {
        message = object(JSON.parse(data.toString('utf8')));
      } catch {
        message = undefined;
      }
      if (!message) return { event: 'invalid', reason: 'a text message that is not a JSON object' };
      if (message.action === 'notify') {
        const payload = object(message.payload);
        if (!payload) return { event: 'invalid', reason: 'notify without a payload object' };
        const name = typeof payload.name === 'string' ? payload.name : JSON.stringify(payload);
        notifies.set(name, payload);
        return { event: 'mark', name };
      }
      if (message.action === 'clear') {
        for (const name of notifies.keys()) dropped.add(name);
        // What was still in the filter belongs to the dropped audio.
        down = new Resampler(16000, 8000);
        return { event: 'clear' };
      }
      return { event: 'invalid', reason: `an unknown action ${JSON.stringify(message.action)}` };
    },
  };
};

/** The `websocket` endpoint an NCCO `connect`s, if any: its URI, content type and headers. */
export function websocketOfNcco(
  body: string,
): { uri: string; contentType: string | undefined; headers: Record<string, string> } | undefined {
  let ncco: unknown;
  try {
    ncco = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!Array.isArray(ncco)) return undefined;
  for (const action of ncco.map(object)) {
    if (action?.action !== 'connect' || !Array.isArray(action.endpoint)) continue;
    const endpoint = object(action.endpoint[0]);
    if (endpoint?.type !== 'websocket' || typeof endpoint.uri !== 'string') continue;
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(object(endpoint.headers) ?? {}))
      if (typeof value === 'string') headers[key] = value;
    const contentType = endpoint['content-type'];
    return {
      uri: endpoint.uri,
      contentType: typeof contentType === 'string' ? contentType : undefined,
      headers,
    };
  }
  return undefined;
}

/** carrier_c's phone calls: PhoneCalls, started from an answered call's NCCO. */
export class CarrierCPhones extends PhoneCalls {
  /**
   * Connects a phone running the script of the call's number (or `script`) to the websocket the
   * call's NCCO names; undefined when there is no script, the answer failed or names no websocket, or
   * it asks for audio the simulated carrier does not stream (only L16 16 kHz here).
   */
  answer(call: SimulatedCall, script = this.scriptFor(call.to)): PhoneCall | undefined {
    if (!script || call.answer?.status !== 200 || call.hungUp) return undefined;
    const endpoint = websocketOfNcco(call.answer.body);
    if (endpoint?.contentType?.replace(/\s+/g, '').toLowerCase() !== CARRIER_C_CONTENT_TYPE) return undefined;
    const phone = new SimulatedPhone({
      ...script.settings,
      url: endpoint.uri,
      callSid: call.sid,
      customParameters: endpoint.headers,
      wire: carrierCPhoneWire,
    });
    const phoneCall = this.run(
      { callSid: call.sid, phone, streamUrl: endpoint.uri, parameters: endpoint.headers },
      script.script,
    );
    Object.assign(call, { status: 'answered', createdAt: phoneCall.answeredAt });
    return phoneCall;
  }

  /** Records a phone's call as completed with its real duration; its `completed` event's fields. */
  ended(call: SimulatedCall, phoneCall: PhoneCall): Record<string, unknown> {
    const seconds = callDurationSeconds(phoneCall);
    const endedAt = phoneCall.endedAt ?? new Date();
    Object.assign(call, { status: 'completed', endedAt });
    call.outcome = { status: 'completed', durationSeconds: seconds };
    return completedFields(phoneCall.answeredAt, endedAt, seconds);
  }
}

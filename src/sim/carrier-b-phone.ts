/**
 * The phone end of carrier_b's simulated calls. A test gives a number a script (`setPhone` on the
 * simulator); when a call to it is answered — an outbound dial, or an inbound call the platform
 * answered with the `answer` command — and the command named a `stream_url`, the simulator connects
 * a SimulatedPhone to that URL as carrier_b does: the dial's `stream_auth_token` as the
 * `x-telnyx-streaming-auth-token` header of the upgrade (and in `connected`), carrier_b's messages
 * (carrier-b-phone-wire.ts), the codec and mode the command asked for. The call lasts as carrier_a's
 * phone calls do (carrier-a-phone.ts): until the script ends, the platform closes the stream, or
 * the platform hangs up or transfers through the REST API.
 */
import { CARRIER_B_STREAM_TOKEN_HEADER, type CarrierBCodec } from '../providers/carriers/carrier-b-media.js';
import { type PhoneCall, PhoneCalls, type PhoneScript, type PhoneSettings } from './carrier-a-phone.js';
import { type CarrierBPhoneWireOptions, carrierBPhoneWire } from './carrier-b-phone-wire.js';

/** What a test may set for a number's phones: carrier_a's settings, and this wire's disorder and codec. */
export type CarrierBPhoneSettings = PhoneSettings &
  Pick<CarrierBPhoneWireOptions, 'swapEvery' | 'dropEvery'> & {
    /** The codec the call streams in whatever the dial asked (a call the carrier cannot transcode). */
    codec?: CarrierBCodec;
  };

/** What a dial or answer command asked of the media stream. */
export interface CarrierBStreamRequest {
  url: string;
  track: string;
  /** The dial's `stream_codec` when it names PCMU or PCMA (`default`: the call's own, PCMU here). */
  codec?: CarrierBCodec;
  /** Set in RTP mode: the codec the platform's audio is played in. Unset: MP3 mode. */
  playback?: CarrierBCodec;
  token?: string;
}

const codecOf = (value: unknown): CarrierBCodec | undefined =>
  value === 'PCMU' || value === 'PCMA' ? value : undefined;

/** The stream a command's body asks for; undefined when it names no `stream_url`. */
export function streamRequestOf(body: Record<string, unknown>): CarrierBStreamRequest | undefined {
  if (typeof body.stream_url !== 'string' || body.stream_url === '') return undefined;
  const codec = codecOf(body.stream_codec);
  const rtp = body.stream_bidirectional_mode === 'rtp';
  const token = typeof body.stream_auth_token === 'string' ? body.stream_auth_token : undefined;
  return {
    url: body.stream_url,
    track: typeof body.stream_track === 'string' ? body.stream_track : 'inbound_track',
    ...(codec ? { codec } : {}),
    ...(rtp ? { playback: codecOf(body.stream_bidirectional_codec) ?? 'PCMU' } : {}),
    ...(token ? { token } : {}),
  };
}

export class CarrierBPhones extends PhoneCalls<CarrierBPhoneSettings> {
  /** Connects a phone to the stream `request` asked for and runs `script` on it. */
  stream(options: {
    callControlId: string;
    userId: string;
    from: string;
    to: string;
    clientState: string | null;
    request: CarrierBStreamRequest;
    script: PhoneScript;
    settings: CarrierBPhoneSettings;
  }): PhoneCall {
    const { request, settings } = options;
    const wire = carrierBPhoneWire({
      codec: settings.codec ?? request.codec ?? 'PCMU',
      ...(request.playback ? { playback: request.playback } : {}),
      ...(request.token ? { token: request.token } : {}),
      from: options.from,
      to: options.to,
      clientState: options.clientState,
      ...(settings.swapEvery ? { swapEvery: settings.swapEvery } : {}),
      ...(settings.dropEvery ? { dropEvery: settings.dropEvery } : {}),
    });
    return this.connect({
      callSid: options.callControlId,
      accountSid: options.userId,
      url: request.url,
      headers: request.token ? { [CARRIER_B_STREAM_TOKEN_HEADER]: request.token } : {},
      parameters: {},
      script: options.script,
      settings,
      wire,
    });
  }
}

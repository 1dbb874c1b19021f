/**
 * carrier_b's side of a media stream, as the simulated phone speaks it (phone-wire.ts): JSON text,
 * every message after `connected` numbered, the caller's frames on the `inbound` track in the codec
 * the dial asked for (`stream_codec`: PCMU, or PCMA converted from the phone's μ-law), and the
 * platform's audio taken in the bidirectional codec — in RTP mode only: without
 * `stream_bidirectional_mode: rtp` the carrier would take it for MP3, so the phone counts it an error.
 *
 * The carrier does not guarantee the order of media frames; to prove that the platform puts them
 * back, this wire can send them out of order on purpose (`swapEvery`: each such frame goes after the
 * one that follows it) or lose some (`dropEvery`). A frame keeps the number it was made with, so
 * marks and key presses sent while a frame is held are numbered after it, as the carrier numbers them.
 */
import {
  type CarrierBCodec,
  type CarrierBOutbound,
  carrierBMediaMessages,
} from '../providers/carriers/carrier-b-media.js';
import { alawToPcm16, pcm16ToAlaw, pcm16ToUlaw, ulawToPcm16 } from '../voice/audio.js';
import type { PhoneMessage, PhoneWireFactory } from './phone-wire.js';

export interface CarrierBPhoneWireOptions {
  /** The codec the caller's audio streams in (the dial's `stream_codec`); PCMU by default. */
  codec?: CarrierBCodec;
  /** The codec the platform's audio is played in (RTP mode's `stream_bidirectional_codec`); none: MP3 mode. */
  playback?: CarrierBCodec;
  /** The dial's `stream_auth_token`, which `connected` repeats (the phone sends it as a header too). */
  token?: string;
  from?: string;
  to?: string;
  clientState?: string | null;
  /** Every `swapEvery`-th frame is sent after the next one (2: every pair swapped). */
  swapEvery?: number;
  /** Every `dropEvery`-th frame is never sent (lost on the way). */
  dropEvery?: number;
}

const toCodec = (codec: CarrierBCodec, ulaw: Uint8Array) =>
  codec === 'PCMA' ? pcm16ToAlaw(ulawToPcm16(ulaw)) : ulaw;
const fromCodec = (codec: CarrierBCodec, audio: Uint8Array) =>
  codec === 'PCMA' ? pcm16ToUlaw(alawToPcm16(audio)) : audio;

/** A carrier_b wire factory for one stream, with the dial's choices and the test's disorder. */
export function carrierBPhoneWire(options: CarrierBPhoneWireOptions = {}): PhoneWireFactory {
  return (ids) => {
    const codec = options.codec ?? 'PCMU';
    let sequence = 0;
    const next = () => ++sequence;
    let held: PhoneMessage | undefined;
    return {
      opening: () => [
        carrierBMediaMessages.connected(options.token),
        carrierBMediaMessages.start(next(), {
          streamId: ids.streamSid,
          callControlId: ids.callSid,
          userId: ids.accountSid,
          ...(options.from ? { from: options.from } : {}),
          ...(options.to ? { to: options.to } : {}),
          clientState: options.clientState ?? null,
          customParameters: ids.parameters,
          codec,
        }),
      ],
      media(index, timestampMs, ulaw) {
        const frame = index + 1;
        const message = carrierBMediaMessages.media(next(), ids.streamSid, {
          chunk: frame,
          timestampMs,
          audio: toCodec(codec, ulaw),
        });
        if (held === undefined && options.swapEvery && frame % options.swapEvery === 0) {
          held = message;
          return [];
        }
        const out: PhoneMessage[] = options.dropEvery && frame % options.dropEvery === 0 ? [] : [message];
        if (held !== undefined) out.push(held);
        held = undefined;
        return out;
      },
      markEcho: (name) => carrierBMediaMessages.mark(next(), ids.streamSid, name),
      dtmf: (digit) => carrierBMediaMessages.dtmf(next(), ids.streamSid, digit),
      stop: () => carrierBMediaMessages.stop(next(), ids.streamSid, ids.accountSid, ids.callSid),
      read(data, isBinary) {
        let message: Partial<CarrierBOutbound>;
        try {
          if (isBinary) throw new Error('binary');
          message = JSON.parse(data.toString('utf8'));
        } catch {
          return { event: 'invalid', reason: 'a message that is not JSON text' };
        }
        if (message.event === 'media' && typeof message.media?.payload === 'string') {
          if (!options.playback)
            return { event: 'invalid', reason: 'RTP media while the stream is in MP3 mode' };
          const audio = new Uint8Array(Buffer.from(message.media.payload, 'base64'));
          return { event: 'media', audio: fromCodec(options.playback, audio) };
        }
        if (message.event === 'mark' && typeof message.mark?.name === 'string')
          return { event: 'mark', name: message.mark.name };
        if (message.event === 'clear') return { event: 'clear' };
        return { event: 'invalid', reason: `an invalid ${String(message.event)} message` };
      },
    };
  };
}

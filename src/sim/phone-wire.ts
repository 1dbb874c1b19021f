/**
 * The carrier's side of a media stream, as the simulated phone speaks it. The phone itself works in
 * μ-law at 8 kHz (its fixtures, its speech detection); a wire turns its frames, mark echoes, key
 * presses and hang-up into one carrier's messages, and that carrier's messages from the platform back
 * into audio (μ-law 8 kHz), marks and clears, converting the audio where the carrier streams another
 * format. One wire per stream: it may keep state (sequence numbers, frames held back to be sent out of
 * order). carrier_a's is here; each other carrier's sits beside its simulator.
 */
import { type CarrierAOutbound, carrierAMediaMessages } from '../providers/carriers/carrier-a-media.js';

export interface PhoneStreamIds {
  callSid: string;
  accountSid: string;
  streamSid: string;
  /** What the answer instructions asked the carrier to pass on (carrier_a `<Parameter>`s, the token). */
  parameters: Record<string, string>;
}

export type PhoneMessage = string | Buffer;

/** What the platform asked of the phone in one message. */
export type PhoneInbound =
  /** Audio to play, as μ-law 8 kHz. */
  | { event: 'media'; audio: Uint8Array }
  | { event: 'mark'; name: string }
  | { event: 'clear' }
  /** A message the carrier would drop: malformed, or naming another stream. */
  | { event: 'invalid'; reason: string }
  /** A message the carrier accepts that the phone has nothing to do with. */
  | { event: 'ignored' };

export interface PhoneWire {
  /** Sent once the socket is open (carrier_a: `connected`, `start`). */
  opening(): PhoneMessage[];
  /**
   * One 20 ms caller frame (μ-law 8 kHz, the `index`-th from 0) → the messages to send now: usually
   * one; none or several where the wire holds frames back to send them out of order.
   */
  media(index: number, timestampMs: number, ulaw: Uint8Array): PhoneMessage[];
  /**
   * The echo of a mark whose audio has played, or whose audio a clear dropped; undefined when the
   * carrier says nothing for it (carrier_c drops the notifies a clear emptied).
   */
  markEcho(name: string): PhoneMessage | undefined;
  /** What the carrier says once a clear is done, if anything (carrier_c's `websocket:cleared`). */
  cleared?(): PhoneMessage | undefined;
  dtmf(digit: string): PhoneMessage;
  /** What the carrier sends when the caller hangs up, before it closes the socket. */
  stop(): PhoneMessage | undefined;
  /** One message from the platform. */
  read(data: Buffer, isBinary: boolean): PhoneInbound;
}

export type PhoneWireFactory = (ids: PhoneStreamIds) => PhoneWire;

/** carrier_a: JSON text, sequence numbers on every message, base64 μ-law as is. */
export const carrierAPhoneWire: PhoneWireFactory = (ids) => {
  let sequence = 0;
  const next = () => ++sequence;
  return {
    opening: () => [
      carrierAMediaMessages.connected(),
      carrierAMediaMessages.start(next(), {
        streamSid: ids.streamSid,
        callSid: ids.callSid,
        accountSid: ids.accountSid,
        customParameters: ids.parameters,
      }),
    ],
    media: (index, timestampMs, ulaw) => [
      carrierAMediaMessages.media(next(), ids.streamSid, index + 1, timestampMs, ulaw),
    ],
    markEcho: (name) => carrierAMediaMessages.mark(next(), ids.streamSid, name),
    dtmf: (digit) => carrierAMediaMessages.dtmf(next(), ids.streamSid, digit),
    stop: () => carrierAMediaMessages.stop(next(), ids.streamSid, ids.accountSid, ids.callSid),
    read(data, isBinary) {
      let message: Partial<CarrierAOutbound> & { streamSid?: unknown };
      try {
        if (isBinary) throw new Error('binary');
        message = JSON.parse(data.toString('utf8'));
      } catch {
        return { event: 'invalid', reason: 'a message that is not JSON text' };
      }
      const event = typeof message.event === 'string' ? message.event : String(message.event);
      if (message.streamSid !== ids.streamSid)
        return { event: 'invalid', reason: `${event} for stream ${String(message.streamSid)}` };
      if (message.event === 'media' && typeof message.media?.payload === 'string')
        return { event: 'media', audio: new Uint8Array(Buffer.from(message.media.payload, 'base64')) };
      if (message.event === 'mark' && typeof message.mark?.name === 'string')
        return { event: 'mark', name: message.mark.name };
      if (message.event === 'clear') return { event: 'clear' };
      return { event: 'invalid', reason: `an invalid ${event} message` };
    },
  };
};

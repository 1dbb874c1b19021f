/**
 * A browser's side of a web call (docs/voice.md, "Talking from a browser"), as the simulated phone
 * speaks it: the tests' and the benchmark's browser. The phone works in μ-law at 8 kHz (its
 * fixtures, its speech detection); the web call streams 16-bit little-endian PCM at 16 kHz both ways,
 * so the wire converts once each way with a streamed resampler. The first message is `start` with the
 * token (the phone's `token` parameter); marks are echoed once the audio before them has played (the
 * phone's real-time playout decides when); `hangup` before the socket closes. What only a browser is
 * told — `started`, transcripts, turns, events, `ended` — goes to `log`, with the phone's time.
 */
import { LINEAR16_16K, l16ToPcm16, pcm16ToL16, pcm16ToUlaw, ulawToPcm16 } from '../voice/audio.js';
import { Resampler } from '../voice/resample.js';
import type { PhoneInbound, PhoneMessage, PhoneWireFactory } from './phone-wire.js';

/** What the server told the browser besides audio, marks and clears; `atMs` on the phone's clock. */
export interface WebCallLog {
  started?: { call_id: number; audio: Record<string, unknown> };
  transcripts: Array<{ speaker: 'user' | 'assistant'; text: string; final: boolean; atMs: number }>;
  turns: Array<Record<string, unknown> & { atMs: number }>;
  events: Array<{ name: string; data: Record<string, unknown>; atMs: number }>;
  ended?: { reason: string; atMs: number };
  /** Messages the server sent that the protocol does not have. */
  unknown: string[];
}

export function emptyWebCallLog(): WebCallLog {
  return { transcripts: [], turns: [], events: [], unknown: [] };
}

/**
 * The wire; `outbox` holds messages of the browser's own (an `interrupt`), sent with the next audio
 * frame (at most 20 ms later); `now` is the phone's clock.
 */
export function webCallPhoneWire(
  log: WebCallLog,
  outbox: PhoneMessage[],
  now: () => number,
): PhoneWireFactory {
  return (ids) => {
    const up = new Resampler(8000, LINEAR16_16K.sampleRate);
    let down = new Resampler(LINEAR16_16K.sampleRate, 8000);
    const json = (message: object) => JSON.stringify(message);
    return {
      opening: () => [json({ type: 'start', token: ids.parameters.token })],
      media: (_index, _timestampMs, ulaw) => [
        ...outbox.splice(0),
        Buffer.from(pcm16ToL16(up.push(ulawToPcm16(ulaw)))),
      ],
      markEcho: (name) => json({ type: 'mark', name }),
      dtmf: (digit) => json({ type: 'dtmf', digit }),
      stop: () => json({ type: 'hangup' }),
      read(data, isBinary): PhoneInbound {
        if (isBinary) {
          if (data.length % 2 !== 0) return { event: 'invalid', reason: 'audio of an odd number of bytes' };
          return { event: 'media', audio: pcm16ToUlaw(down.push(l16ToPcm16(data))) };
        }
        let message: Record<string, unknown>;
        try {
          message = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
        } catch {
          return { event: 'invalid', reason: 'a text message that is not JSON' };
        }
        const atMs = now();
        switch (message.type) {
          case 'mark':
            return { event: 'mark', name: String(message.name) };
          case 'clear':
            // What was still in the filter belongs to the dropped audio.
            down = new Resampler(LINEAR16_16K.sampleRate, 8000);
            return { event: 'clear' };
          case 'started':
            log.started = message as unknown as WebCallLog['started'];
            return { event: 'ignored' };
          case 'transcript':
            log.transcripts.push({ ...(message as unknown as WebCallLog['transcripts'][number]), atMs });
            return { event: 'ignored' };
          case 'turn':
            log.turns.push({ ...message, atMs });
            return { event: 'ignored' };
          case 'event':
            log.events.push({
              name: String(message.name),
              data: (message.data ?? {}) as Record<string, unknown>,
              atMs,
            });
            return { event: 'ignored' };
          case 'ended':
            log.ended = { reason: String(message.reason), atMs };
            return { event: 'ignored' };
          default:
            log.unknown.push(data.toString('utf8'));
            return { event: 'invalid', reason: `an unknown message ${String(message.type)}` };
        }
      },
    };
  };
}

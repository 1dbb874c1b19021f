/**
 * tts_a's stream-input wire format (single context, one socket per utterance), shared by the adapter
 * (tts-a.ts) and the simulator (sim/tts-a.ts) so both speak it the same way.
 *
 * Client → server, JSON text frames: the first (`{"text":" ","voice_settings":{…}}`) opens the
 * stream, then text chunks ending with a space, `"flush":true` to speak what is buffered now, and
 * `{"text":""}` (end of stream) to finish. Server → client: `{"audio":"<base64>","isFinal":null,
 * "alignment":{…},"normalizedAlignment":{…}}`, then `{"isFinal":true}` after the end of stream; a
 * failure is `{"error":"…","message":"…"}` followed by close code 1008.
 *
 * The vendor's pages and clients spell the alignment arrays two ways (`charsDurationsMs` and
 * `charDurationsMs`, `charStartTimesMs` and `charsStartTimesMs`): the parser accepts both.
 */
import type { AudioFormat } from '../../voice/audio.js';
import { ProviderError } from '../errors.js';
import type { Alignment } from './types.js';

export const TTS_A = 'tts_a';

/**
 * The vendor's `output_format` for the carrier's audio; undefined when it offers none. The vendor
 * speaks no A-law: an A-law call (a SIP trunk that chose PCMA) asks for μ-law, and the stream turns
 * each chunk into A-law as it arrives (byte for byte, through 16-bit samples: nothing is buffered).
 */
export function ttsAOutputFormat(format: AudioFormat): string | undefined {
  if (format.sampleRate === 8000 && (format.encoding === 'mulaw' || format.encoding === 'alaw'))
    return 'ulaw_8000';
  if (format.encoding === 'linear16') return `pcm_${format.sampleRate}`;
  return undefined;
}

/** The inverse of `ttsAOutputFormat`, for the simulator. */
export function ttsAAudioFormat(outputFormat: string): AudioFormat | undefined {
  if (outputFormat === 'ulaw_8000') return { encoding: 'mulaw', sampleRate: 8000 };
  if (outputFormat === 'pcm_8000') return { encoding: 'linear16', sampleRate: 8000 };
  if (outputFormat === 'pcm_16000') return { encoding: 'linear16', sampleRate: 16000 };
  return undefined;
}

/** The path of the single-context stream for a voice. */
export function ttsAStreamPath(voiceId: string): string {
  return `/v1/text-to-speech/${encodeURIComponent(voiceId)}/stream-input`;
}

/** What one server frame says: audio (with its alignment), the end, or a failure. */
export interface TtsAServerMessage {
  audio?: Uint8Array;
  alignment?: Alignment;
  isFinal: boolean;
  error?: { code: string; message: string };
}

type Json = Record<string, unknown>;

const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

function numbers(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every((n) => typeof n === 'number') ? (value as number[]) : undefined;
}

function parseAlignment(value: unknown): Alignment | undefined {
  const record = object(value);
  if (!record || !Array.isArray(record.chars)) return undefined;
  const chars = record.chars.filter((c): c is string => typeof c === 'string');
  const startMs = numbers(record.charStartTimesMs) ?? numbers(record.charsStartTimesMs);
  const durationMs = numbers(record.charsDurationsMs) ?? numbers(record.charDurationsMs);
  if (!startMs || !durationMs) return undefined;
  if (startMs.length !== chars.length || durationMs.length !== chars.length) return undefined;
  return { chars, startMs, durationMs };
}

function protocolError(detail: string): ProviderError {
  return new ProviderError(`${TTS_A} sent a message it does not document (${detail})`, {
    provider: TTS_A,
    retryable: false,
    code: 'protocol',
  });
}

/** Parses one server text frame; throws a permanent ProviderError for one that is not the protocol. */
export function parseTtsAMessage(raw: string): TtsAServerMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw protocolError('not JSON');
  }
  const message = object(parsed);
  if (!message) throw protocolError('not a JSON object');
  if (typeof message.error === 'string' || object(message.error)) {
    const error = object(message.error);
    const code = String(error?.status ?? error?.code ?? message.error);
    const text = message.message ?? error?.message;
    return {
      isFinal: false,
      error: { code, message: typeof text === 'string' ? text.slice(0, 300) : code },
    };
  }
  const isFinal = message.isFinal === true || message.is_final === true;
  const result: TtsAServerMessage = { isFinal };
  if (typeof message.audio === 'string' && message.audio !== '') {
    result.audio = new Uint8Array(Buffer.from(message.audio, 'base64'));
    // The original text's alignment is what a transcript "as heard" is cut by; the normalized one
    // (numbers spelled out…) is the fallback when only it came.
    const alignment = parseAlignment(message.alignment) ?? parseAlignment(message.normalizedAlignment);
    if (alignment) result.alignment = alignment;
  } else if (message.audio !== undefined && message.audio !== null && message.audio !== '') {
    throw protocolError('audio that is not base64 text');
  }
  return result;
}

/**
 * Whether a failure the vendor named (an error frame's `error`, a 1008 close reason) may pass on a
 * new attempt: refused keys, unknown voices, exhausted quota and invalid requests will not; an
 * inactivity time-out, an overload or an internal fault may.
 */
export function isRetryableTtsAError(code: string): boolean {
  return !/auth|api[_ -]?key|unauthori[sz]ed|forbidden|permission|quota|voice|payment|subscription|invalid|not[_ ]found/i.test(
    code,
  );
}

/** A ProviderError for a failure the vendor reported in the stream. */
export function ttsAStreamError(code: string, message: string): ProviderError {
  return new ProviderError(`${TTS_A} failed the stream: ${message}`, {
    provider: TTS_A,
    retryable: isRetryableTtsAError(code),
    code,
  });
}

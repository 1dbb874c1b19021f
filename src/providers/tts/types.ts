/**
 * The contract of a text-to-speech vendor in a live call: one stream per assistant utterance. Text
 * goes in as the language model writes it (sentence by sentence), audio comes out in the carrier's
 * format, ready to send. `open` throws a ProviderError for a refused or failed handshake (401/403
 * permanent; 429, 5xx, network, time-out retryable); the iterator throws one when the stream breaks.
 * Aborting `signal` (a barge-in) closes the stream at once and ends the iterator without an error;
 * audio still in flight is dropped.
 */

import type { AudioFormat } from '../../voice/audio.js';
import type { RequestTiming } from '../errors.js';
import type { TtsProvider } from '../ids.js';

export interface TtsStreamOptions {
  apiKey: string;
  /** The vendor's base URL (`TTS_A_BASE_URL`, a simulator's in tests). */
  baseUrl: string;
  /** tts_settings.voice_id */
  voiceId: string;
  /** tts_settings.model_id, when given. */
  modelId?: string;
  /** The audio wanted: the carrier's format. */
  format: AudioFormat;
  /** tts_settings.provider_config.language, for multilingual models. */
  language?: string;
  /** stability, similarity_boost, style, use_speaker_boost, speed… as the vendor names them. */
  voiceSettings: Record<string, unknown>;
  /** tts_settings.provider_config as saved (tts_c `language`, tts_d `project_uuid`…). */
  providerConfig?: Record<string, unknown>;
  signal: AbortSignal;
  connectTimeoutMs?: number;
}

/** What an assistant's tts_settings ask of every stream of a call. */
export type TtsVoice = Pick<
  TtsStreamOptions,
  'voiceId' | 'modelId' | 'language' | 'voiceSettings' | 'providerConfig'
>;

/** Which characters an audio chunk speaks, and when (ms from the chunk's start). */
export interface Alignment {
  chars: string[];
  startMs: number[];
  durationMs: number[];
}

export type TtsEvent =
  | { type: 'audio'; audio: Uint8Array; alignment?: Alignment }
  /** Everything sent has been spoken; the stream is done. */
  | { type: 'final' };

export interface TtsStream {
  /** Text to speak, in order; a chunk may be a word, a sentence or more. */
  sendText(text: string): void;
  /** Speak everything sent so far now, without waiting for more text. */
  flush(): void;
  /** No more text: the vendor speaks the rest, sends `final`, and the iterator ends. */
  end(): void;
  readonly events: AsyncIterable<TtsEvent>;
  readonly timing: RequestTiming;
}

export interface TtsAdapter {
  readonly id: TtsProvider;
  open(options: TtsStreamOptions): Promise<TtsStream>;
}

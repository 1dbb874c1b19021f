/**
 * The contract of a speech-to-text vendor in a live call: one stream per call, audio in, transcript
 * events out. The session sends the carrier's audio as it arrives (no transcoding: the stream is
 * opened with the carrier's format) and reads events until the stream ends. Errors are ProviderErrors:
 * `open` throws them for a refused or failed handshake (401/403 permanent; 429, 5xx, network and
 * time-out retryable), and the events iterator throws one when the stream breaks mid-call.
 * Aborting `signal` closes the stream at once and ends the iterator without an error.
 */

import type { AudioFormat } from '../../voice/audio.js';
import type { RequestTiming } from '../errors.js';
import type { SttProvider } from '../ids.js';

export interface SttStreamOptions {
  apiKey: string;
  /** The vendor's base URL (`STT_BASE_URL`, a simulator's in tests). */
  baseUrl: string;
  /** stt_settings.model (default nova-3). */
  model: string;
  /** stt_settings.language (default en-US). */
  language: string;
  /** The audio that will be sent. */
  format: AudioFormat;
  /** Milliseconds of silence after which the vendor marks a final `speechFinal` (stt_settings.endpointing). */
  endpointingMs: number;
  /** Milliseconds of silence after the last word before an `utterance_end` (stt_settings.utterance_end_ms); 0: none. */
  utteranceEndMs: number;
  /**
   * Interim (not yet final) results while the caller speaks (stt_settings.interim_results, default
   * true). Without them words arrive only with finals, so barge-in counts them later, and the vendor
   * sends no utterance end.
   */
  interimResults?: boolean;
  punctuate: boolean;
  smartFormat: boolean;
  /** Words to boost, for models that take keywords (word, optional intensifier). */
  keywords: Array<{ keyword: string; intensifier?: number }>;
  /** Terms to boost, for models that take keyterms. */
  keyterms: string[];
  signal: AbortSignal;
  /** How long the handshake may take (default 5000 ms). */
  connectTimeoutMs?: number;
}

export type SttEvent =
  /** The vendor heard speech begin (`SpeechStarted`); seconds from the stream's start. */
  | { type: 'speech_started'; atSeconds: number }
  /**
   * Words for a span of audio. Interim (`isFinal: false`) results re-send a span as they improve;
   * a final one fixes it. `speechFinal`: the final that ended at the vendor's endpointing pause.
   */
  | {
      type: 'transcript';
      text: string;
      isFinal: boolean;
      speechFinal: boolean;
      /** Seconds from the stream's start. */
      startSeconds: number;
      endSeconds: number;
      confidence?: number;
    }
  /** No more words came for utterance_end_ms after the last one (the vendor's fallback turn end). */
  | { type: 'utterance_end'; lastWordEndSeconds: number };

export interface SttStream {
  /** Audio in the format the stream was opened with; dropped once the stream is closed. */
  send(audio: Uint8Array): void;
  /** Asks the vendor to emit finals for everything heard so far (the stream stays open). */
  finalize(): void;
  /** Keeps an idle stream open (vendors close streams that get no audio for ~10 s). */
  keepAlive(): void;
  /** Flushes, lets the last events arrive, then closes; the iterator ends after them. */
  close(): Promise<void>;
  readonly events: AsyncIterable<SttEvent>;
  readonly timing: RequestTiming;
}

export interface SttAdapter {
  readonly id: SttProvider;
  open(options: SttStreamOptions): Promise<SttStream>;
}

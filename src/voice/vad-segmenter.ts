/**
 * Turns a call's stream of speech probabilities (one per 32 ms window) into speech_start and
 * speech_end, with the hysteresis of Silero's own VADIterator: speech starts at probability ≥
 * `threshold` and ends only after the probability has stayed below `threshold − 0.15` for
 * `minSilenceMs`, so a breath between words does not end a turn. A start also needs `minSpeechMs`
 * of windows at or above the threshold in a row, so a cough or a click does not count as the caller
 * speaking (and does not pause the assistant). Times are audio time: milliseconds of the call's audio
 * before the moment, counted from the stream's first sample.
 */
import { WINDOW_MS } from './vad-protocol.js';

export interface VadSettings {
  /** Probability at or above which a window is speech (Silero's default 0.5). */
  threshold: number;
  /** Speech must last this long (in whole windows at or above the threshold) before it starts. */
  minSpeechMs: number;
  /** Speech ends after this much audio below `threshold − 0.15`. */
  minSilenceMs: number;
}

export const DEFAULT_VAD_SETTINGS: VadSettings = { threshold: 0.5, minSpeechMs: 100, minSilenceMs: 300 };

/** How far below the threshold a window must fall to count as silence (Silero's VADIterator uses 0.15). */
const HYSTERESIS = 0.15;

export interface VadEvent {
  type: 'speech_start' | 'speech_end';
  /** Audio time of the moment: the first window of the speech, or the first window of the silence that ended it. */
  audioMs: number;
}

export class VadSegmenter {
  readonly #settings: VadSettings;
  #windows = 0;
  #speaking = false;
  /** While silent: where the current run of speech-like windows began. */
  #candidateStartMs: number | undefined;
  /** While speaking: where the current run of quiet windows began. */
  #silenceStartMs: number | undefined;

  constructor(settings: Partial<VadSettings> = {}) {
    this.#settings = { ...DEFAULT_VAD_SETTINGS, ...settings };
  }

  get isSpeaking(): boolean {
    return this.#speaking;
  }

  /** Audio time consumed so far. */
  get audioMs(): number {
    return this.#windows * WINDOW_MS;
  }

  /** Takes the next window's probability; answers the event it completes, if any. */
  accept(probability: number): VadEvent | undefined {
    const { threshold, minSpeechMs, minSilenceMs } = this.#settings;
    const startMs = this.audioMs;
    this.#windows++;
    const endMs = this.audioMs;
    if (!this.#speaking) {
      if (probability < threshold) {
        this.#candidateStartMs = undefined;
        return undefined;
      }
      this.#candidateStartMs ??= startMs;
      if (endMs - this.#candidateStartMs < minSpeechMs) return undefined;
      const audioMs = this.#candidateStartMs;
      this.#speaking = true;
      this.#candidateStartMs = undefined;
      this.#silenceStartMs = undefined;
      return { type: 'speech_start', audioMs };
    }
    if (probability >= threshold) {
      this.#silenceStartMs = undefined;
      return undefined;
    }
    // Between the two thresholds a silence already counting goes on counting, as in VADIterator.
    if (probability >= threshold - HYSTERESIS && this.#silenceStartMs === undefined) return undefined;
    this.#silenceStartMs ??= startMs;
    if (endMs - this.#silenceStartMs < minSilenceMs) return undefined;
    const audioMs = this.#silenceStartMs;
    this.#speaking = false;
    this.#silenceStartMs = undefined;
    return { type: 'speech_end', audioMs };
  }
}

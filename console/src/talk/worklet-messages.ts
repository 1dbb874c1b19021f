/**
 * What the Talk page's main thread and its two AudioWorklet processors say to each other over their
 * ports. Both sides import these types; the processors' names are how `AudioWorkletNode` finds them.
 */

/** The platform's web-call audio: 16-bit little-endian PCM, mono, 16 kHz, in 20 ms frames. */
export const CALL_SAMPLE_RATE = 16_000;
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (CALL_SAMPLE_RATE * FRAME_MS) / 1000;

export const CAPTURE_PROCESSOR = 'switchboard-capture';
export const PLAYBACK_PROCESSOR = 'switchboard-playback';

/** Capture → main thread: one frame of microphone audio, ready to send. */
export interface CapturedFrame {
  type: 'frame';
  /** FRAME_SAMPLES samples of s16le at 16 kHz (transferred). */
  pcm: ArrayBuffer;
  /** The frame's RMS level, 0…1 of full scale: for an input meter. */
  level: number;
}

/** Main thread → playback. */
export type PlaybackCommand =
  /** s16le 16 kHz audio to play after what is queued (transferred). */
  | { type: 'audio'; pcm: ArrayBuffer }
  /** Report `name` once everything queued before it has played. */
  | { type: 'mark'; name: string }
  /** Drop everything not yet played, at once. */
  | { type: 'clear' };

/** Playback → main thread. */
export type PlaybackReport =
  /** The audio queued before the mark has played. */
  | { type: 'played'; name: string }
  /**
   * A clear dropped these marks' audio. They are reported at once, as the telephone carriers do: the
   * server's playout forgets its marks on a clear, and a mark never answered would stall it.
   */
  | { type: 'cleared'; names: string[] }
  /** The assistant's audio started or stopped coming out (queue empty). */
  | { type: 'playing'; playing: boolean };

/** The part of the AudioWorkletGlobalScope the processors use (TypeScript's DOM lib lacks it). */
export interface WorkletScope {
  readonly sampleRate: number;
  AudioWorkletProcessor: new () => { readonly port: MessagePort };
  registerProcessor(name: string, processor: new () => WorkletProcessor): void;
}

export interface WorkletProcessor {
  readonly port: MessagePort;
  process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean;
}

export const workletScope = globalThis as unknown as WorkletScope;

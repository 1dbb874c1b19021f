/**
 * Silero v5 itself: one onnxruntime-node InferenceSession and the recurrent state and audio context
 * of every call it judges. It runs in the VAD worker thread (vad-worker.ts), because `session.run`
 * is a synchronous native call under its promise (microsoft/onnxruntime#26968) and would stall the
 * main thread; the VAD benchmark also runs it inline, as the baseline that shows why. One session
 * serves every call (one per call would cost ~10 MB each); a round of windows from several calls
 * runs as one batch: input [B, 288] (32 samples of context + the 256-sample window), state
 * [2, B, 128] gathered from the calls and scattered back.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { CONTEXT_SAMPLES, type Round, SAMPLE_RATE, STATE_FLOATS, WINDOW_SAMPLES } from './vad-protocol.js';

const INPUT_SAMPLES = CONTEXT_SAMPLES + WINDOW_SAMPLES;
const HALF_STATE = STATE_FLOATS / 2;

type Ort = typeof import('onnxruntime-node');

interface CallState {
  /** [2, 1, 128]: the model's recurrent state after the call's last window. */
  state: Float32Array;
  /** The last CONTEXT_SAMPLES samples of the call's last window (zeros before its first). */
  context: Float32Array;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class SileroModel {
  readonly #calls = new Map<number, CallState>();

  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    /** The `sr` input: a scalar int64. */
    private readonly sampleRate: Tensor,
  ) {}

  /** Loads the runtime and the model; the error says which of the two failed, and why. */
  static async load(modelPath: string): Promise<SileroModel> {
    let ort: Ort;
    try {
      ort = await import('onnxruntime-node');
    } catch (error) {
      throw new Error(`the ONNX runtime (onnxruntime-node) could not be loaded: ${errorText(error)}`);
    }
    try {
      const session = await ort.InferenceSession.create(modelPath, {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
      });
      const sampleRate = new ort.Tensor('int64', BigInt64Array.from([BigInt(SAMPLE_RATE)]), []);
      return new SileroModel(ort, session, sampleRate);
    } catch (error) {
      throw new Error(`the Silero VAD model ${modelPath} could not be loaded: ${errorText(error)}`);
    }
  }

  /** Calls whose state is held. */
  get calls(): number {
    return this.#calls.size;
  }

  forget(id: number): void {
    this.#calls.delete(id);
  }

  /** Judges one round (at most one window per call) as one batch: each window's speech probability. */
  async run(round: Round): Promise<Float32Array> {
    const batch = round.ids.length;
    const input = new Float32Array(batch * INPUT_SAMPLES);
    const state = new Float32Array(batch * STATE_FLOATS);
    const members: CallState[] = [];
    for (let b = 0; b < batch; b++) {
      const id = round.ids[b]!;
      let call = this.#calls.get(id);
      if (!call) {
        call = { state: new Float32Array(STATE_FLOATS), context: new Float32Array(CONTEXT_SAMPLES) };
        this.#calls.set(id, call);
      }
      members.push(call);
      const window = round.samples.subarray(b * WINDOW_SAMPLES, (b + 1) * WINDOW_SAMPLES);
      input.set(call.context, b * INPUT_SAMPLES);
      input.set(window, b * INPUT_SAMPLES + CONTEXT_SAMPLES);
      call.context.set(window.subarray(WINDOW_SAMPLES - CONTEXT_SAMPLES));
      // State layout [layer, batch, 128]: layer l of call b sits at (l * batch + b) * 128.
      state.set(call.state.subarray(0, HALF_STATE), b * HALF_STATE);
      state.set(call.state.subarray(HALF_STATE), (batch + b) * HALF_STATE);
    }
    const output = await this.session.run({
      input: new this.ort.Tensor('float32', input, [batch, INPUT_SAMPLES]),
      state: new this.ort.Tensor('float32', state, [2, batch, HALF_STATE]),
      sr: this.sampleRate,
    });
    const next = output.stateN!.data as Float32Array;
    for (let b = 0; b < batch; b++) {
      members[b]!.state.set(next.subarray(b * HALF_STATE, (b + 1) * HALF_STATE), 0);
      members[b]!.state.set(
        next.subarray((batch + b) * HALF_STATE, (batch + b + 1) * HALF_STATE),
        HALF_STATE,
      );
    }
    return Float32Array.from(output.output!.data as Float32Array);
  }
}

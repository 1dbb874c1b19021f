/**
 * The VAD worker thread: one Silero v5 InferenceSession for the whole process, and the recurrent state
 * and audio context of every call. It lives in a worker because onnxruntime-node's `session.run` is a
 * synchronous native call under its promise (microsoft/onnxruntime#26968): on the main thread a
 * hundred calls would stall the event loop ~10 ms every 32 ms. Messages are handled strictly in
 * arrival order, so each call's windows are run in the order its audio came.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import {
  CONTEXT_SAMPLES,
  type FromWorker,
  type Round,
  SAMPLE_RATE,
  STATE_FLOATS,
  type ToWorker,
  WINDOW_SAMPLES,
  type WorkerSetup,
} from './vad-protocol.js';

const port = parentPort!;
const setup = workerData as WorkerSetup;
const INPUT_SAMPLES = CONTEXT_SAMPLES + WINDOW_SAMPLES;
const HALF_STATE = STATE_FLOATS / 2;

interface CallState {
  /** [2, 1, 128]: the model's recurrent state after the call's last window. */
  state: Float32Array;
  /** The last CONTEXT_SAMPLES samples of the call's last window. */
  context: Float32Array;
}

const calls = new Map<number, CallState>();

function send(message: FromWorker): void {
  port.postMessage(message);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface Loaded {
  ort: typeof import('onnxruntime-node');
  session: InferenceSession;
  /** The `sr` input: a scalar int64. */
  sampleRate: Tensor;
}

async function load(): Promise<Loaded> {
  let ort: typeof import('onnxruntime-node');
  try {
    ort = await import('onnxruntime-node');
  } catch (error) {
    throw new Error(`the ONNX runtime (onnxruntime-node) could not be loaded: ${errorText(error)}`);
  }
  try {
    const session = await ort.InferenceSession.create(setup.modelPath, {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    const sampleRate = new ort.Tensor('int64', BigInt64Array.from([BigInt(SAMPLE_RATE)]), []);
    return { ort, session, sampleRate };
  } catch (error) {
    throw new Error(`the Silero VAD model ${setup.modelPath} could not be loaded: ${errorText(error)}`);
  }
}

/** Runs one round as one batch: the windows with their context in [B, 288], the states gathered into [2, B, 128]. */
async function runRound({ ort, session, sampleRate }: Loaded, round: Round): Promise<Float32Array> {
  const batch = round.ids.length;
  const input = new Float32Array(batch * INPUT_SAMPLES);
  const state = new Float32Array(batch * STATE_FLOATS);
  const members: CallState[] = [];
  for (let b = 0; b < batch; b++) {
    const id = round.ids[b]!;
    let call = calls.get(id);
    if (!call) {
      call = { state: new Float32Array(STATE_FLOATS), context: new Float32Array(CONTEXT_SAMPLES) };
      calls.set(id, call);
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
  const output = await session.run({
    input: new ort.Tensor('float32', input, [batch, INPUT_SAMPLES]),
    state: new ort.Tensor('float32', state, [2, batch, HALF_STATE]),
    sr: sampleRate,
  });
  const next = output.stateN!.data as Float32Array;
  for (let b = 0; b < batch; b++) {
    members[b]!.state.set(next.subarray(b * HALF_STATE, (b + 1) * HALF_STATE), 0);
    members[b]!.state.set(next.subarray((batch + b) * HALF_STATE, (batch + b + 1) * HALF_STATE), HALF_STATE);
  }
  return Float32Array.from(output.output!.data as Float32Array);
}

async function handle(loaded: Loaded, message: ToWorker): Promise<void> {
  if (message.type === 'close') calls.delete(message.id);
  else if (message.type === 'count')
    send({ type: 'count', requestId: message.requestId, streams: calls.size });
  else {
    const rounds = [];
    for (const round of message.rounds) {
      rounds.push({ ids: round.ids, probabilities: await runRound(loaded, round) });
    }
    send({ type: 'result', rounds });
  }
}

const loading = load().then(
  (loaded) => {
    send({ type: 'ready' });
    return loaded;
  },
  (error: unknown) => {
    send({ type: 'failed', message: errorText(error) });
    return undefined;
  },
);

// One chain: messages that arrive while the model loads wait their turn, and a call's windows
// are never overtaken by a later message (session.run is async, so plain handlers could interleave).
let queue: Promise<void> = Promise.resolve();
port.on('message', (message: ToWorker) => {
  queue = queue
    .then(async () => {
      const loaded = await loading;
      if (!loaded) return;
      await handle(loaded, message);
    })
    .catch((error: unknown) =>
      send({ type: 'failed', message: `VAD inference failed: ${errorText(error)}` }),
    );
});

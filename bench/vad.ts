/**
 * VAD: N concurrent calls (1, 10, 100) each fed a 20 ms μ-law frame every 20 ms of wall time, as a
 * carrier sends them, through the VAD engine (Silero in its worker thread). Beside it, in the same
 * run and on the same audio, the baseline: the same model judging the same windows inline on the
 * main thread; and the feeding loop alone, whose CPU (clock, timers, delay monitor) is subtracted.
 * Printed per run: the VAD's CPU per call-window (decoding, messaging and inference: the process's
 * CPU above the feeding loop's), the share of one core each call costs, and the main thread's
 * event-loop delay (p99, max) while it runs: what every other call's sockets would feel.
 *
 *   npm run bench -- vad [seconds per run=4] [calls=1,10,100]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { FRAME_MS, MULAW_SILENCE, ulawToPcm16 } from '../src/voice/audio.js';
import { defaultModelPath, VadEngine } from '../src/voice/vad.js';
import { SileroModel } from '../src/voice/vad-model.js';
import { type Round, WINDOW_MS, WINDOW_SAMPLES } from '../src/voice/vad-protocol.js';
import { table } from './support.js';

const FRAME_BYTES = 160;
const WARM_UP_FRAMES = 25;
const WORKER = 'worker thread (the engine)';
const INLINE = 'inline on the main thread (baseline)';

/** The fixture utterances with half a second of silence after each: a caller who talks and pauses. */
function callerAudio(): Uint8Array {
  const folder = new URL('../test/fixtures/voice/', import.meta.url);
  const parts = readdirSync(folder)
    .filter((file) => file.endsWith('.ulaw'))
    .sort()
    .flatMap((file) => [readFileSync(new URL(file, folder)), new Uint8Array(4000).fill(MULAW_SILENCE)]);
  return new Uint8Array(Buffer.concat(parts));
}

/** A judge of N calls' frames: the engine's streams, or the model inline. */
interface Judge {
  push(call: number, frame: Uint8Array): void;
  /** After each tick's frames: the inline judge runs its round here. */
  tick(): Promise<void>;
  settle(): Promise<void>;
  windows(): number;
  close(): Promise<void>;
}

async function engineJudge(calls: number): Promise<Judge> {
  const engine = new VadEngine();
  await engine.ready();
  let windows = 0;
  const streams = Array.from({ length: calls }, () => engine.createStream({ onWindow: () => windows++ }));
  return {
    push: (call, frame) => streams[call]!.push(frame),
    tick: async () => {},
    settle: async () => {
      await Promise.all(streams.map((stream) => stream.idle()));
    },
    windows: () => windows,
    close: () => engine.close(),
  };
}

async function inlineJudge(calls: number): Promise<Judge> {
  const model = await SileroModel.load(defaultModelPath());
  const buffers = Array.from({ length: calls }, () => ({
    window: new Float32Array(WINDOW_SAMPLES),
    filled: 0,
  }));
  let ready: Array<{ call: number; window: Float32Array }> = [];
  let windows = 0;
  return {
    push(call, frame) {
      const buffer = buffers[call]!;
      const samples = ulawToPcm16(frame);
      for (let i = 0; i < samples.length; i++) {
        buffer.window[buffer.filled++] = samples[i]! / 32768;
        if (buffer.filled === WINDOW_SAMPLES) {
          ready.push({ call, window: buffer.window });
          buffer.window = new Float32Array(WINDOW_SAMPLES);
          buffer.filled = 0;
        }
      }
    },
    async tick() {
      if (ready.length === 0) return;
      const round: Round = {
        ids: Int32Array.from(ready, (entry) => entry.call),
        samples: new Float32Array(ready.length * WINDOW_SAMPLES),
      };
      for (const [b, entry] of ready.entries()) round.samples.set(entry.window, b * WINDOW_SAMPLES);
      ready = [];
      windows += (await model.run(round)).length;
    },
    settle: async () => {},
    windows: () => windows,
    close: async () => {},
  };
}

/** The feeding loop alone: its clock, timers and delay monitor cost CPU too; the VAD's cost is the rest. */
async function idleJudge(): Promise<Judge> {
  return {
    push: () => {},
    tick: async () => {},
    settle: async () => {},
    windows: () => 0,
    close: async () => {},
  };
}

interface Measured {
  windows: number;
  cpuMicros: number;
  wallSeconds: number;
  lagP99Ms: number;
  lagMaxMs: number;
}

/** Feeds `calls` callers (each starting somewhere else in the audio) one frame per call every 20 ms. */
async function measure(judge: Judge, calls: number, seconds: number, audio: Uint8Array): Promise<Measured> {
  const frameCount = Math.floor(audio.length / FRAME_BYTES);
  // Starts spread over the audio and over the 32 ms window, so calls do not all end a window in the same tick.
  const starts = Array.from({ length: calls }, (_, call) => Math.floor((call * 7919) % frameCount));
  const frameOf = (call: number, tick: number) => {
    const offset = ((starts[call]! + tick) % frameCount) * FRAME_BYTES;
    return audio.subarray(offset, offset + FRAME_BYTES);
  };
  for (let tick = 0; tick < WARM_UP_FRAMES; tick++) {
    for (let call = 0; call < calls; call++) judge.push(call, frameOf(call, tick));
    await judge.tick();
  }
  await judge.settle();
  const warmWindows = judge.windows();

  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const ticks = Math.round((seconds * 1000) / FRAME_MS);
  for (let tick = 0; tick < ticks; tick++) {
    const due = started + tick * FRAME_MS;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    for (let call = 0; call < calls; call++) judge.push(call, frameOf(call, WARM_UP_FRAMES + tick));
    await judge.tick();
  }
  await judge.settle();
  const cpu = process.cpuUsage(cpuBefore);
  const wallSeconds = (performance.now() - started) / 1000;
  delay.disable();
  return {
    windows: judge.windows() - warmWindows,
    cpuMicros: cpu.user + cpu.system,
    wallSeconds,
    lagP99Ms: delay.percentile(99) / 1e6,
    lagMaxMs: delay.max / 1e6,
  };
}

/** CPU the VAD added over the bare feeding loop, per second of wall time (µs/s). */
function vadCpuRate(result: Measured, feeding: Measured): number {
  return Math.max(0, result.cpuMicros / result.wallSeconds - feeding.cpuMicros / feeding.wallSeconds);
}

function perWindow(result: Measured, feeding: Measured): number {
  return (vadCpuRate(result, feeding) * result.wallSeconds) / result.windows;
}

function coreShare(result: Measured, feeding: Measured, calls: number): number {
  return (vadCpuRate(result, feeding) / 1e6 / calls) * 100;
}

export async function run(args: string[]): Promise<void> {
  const seconds = Number(args[0] ?? 4);
  const callCounts = (args[1] ?? '1,10,100').split(',').map(Number);
  const audio = callerAudio();
  const rows: Array<Record<string, string | number>> = [];
  const results = new Map<string, Measured>();
  for (const calls of callCounts) {
    const feeding = await measure(await idleJudge(), calls, seconds, audio);
    results.set(`feeding/${calls}`, feeding);
    rows.push({
      mode: 'frames only, no VAD (feeding baseline)',
      calls,
      'call-windows': 0,
      'process CPU %': Number(((feeding.cpuMicros / 1e6 / feeding.wallSeconds) * 100).toFixed(1)),
      'VAD CPU µs per call-window': '-',
      'VAD % of a core per call': '-',
      'loop delay p99 ms': Number(feeding.lagP99Ms.toFixed(1)),
      'loop delay max ms': Number(feeding.lagMaxMs.toFixed(1)),
    });
    for (const [mode, make] of [
      [WORKER, engineJudge],
      [INLINE, inlineJudge],
    ] as const) {
      const judge = await make(calls);
      const result = await measure(judge, calls, seconds, audio);
      await judge.close();
      results.set(`${mode}/${calls}`, result);
      rows.push({
        mode,
        calls,
        'call-windows': result.windows,
        'process CPU %': Number(((result.cpuMicros / 1e6 / result.wallSeconds) * 100).toFixed(1)),
        'VAD CPU µs per call-window': Math.round(perWindow(result, feeding)),
        'VAD % of a core per call': Number(coreShare(result, feeding, calls).toFixed(3)),
        'loop delay p99 ms': Number(result.lagP99Ms.toFixed(1)),
        'loop delay max ms': Number(result.lagMaxMs.toFixed(1)),
      });
    }
  }
  table(rows);
  const most = Math.max(...callCounts);
  const feeding = results.get(`feeding/${most}`)!;
  const worker = results.get(`${WORKER}/${most}`)!;
  const inline = results.get(`${INLINE}/${most}`)!;
  console.log(
    `vad: ${most} calls, ${Math.round(perWindow(worker, feeding))} µs CPU per call-window ` +
      `(${coreShare(worker, feeding, most).toFixed(3)} % of a core per call, ${WINDOW_MS} ms windows); ` +
      `main-thread delay p99 ${worker.lagP99Ms.toFixed(1)} ms / max ${worker.lagMaxMs.toFixed(1)} ms ` +
      `vs ${inline.lagP99Ms.toFixed(1)} / ${inline.lagMaxMs.toFixed(1)} ms with the model inline ` +
      `(CPU ratio ${(perWindow(worker, feeding) / perWindow(inline, feeding)).toFixed(2)} to inline)`,
  );
}

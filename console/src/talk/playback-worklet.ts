/**
 * The assistant's side of a web call, on the audio rendering thread: a queue of the server's audio
 * (16-bit PCM at 16 kHz) and marks, played gap-free in arrival order. A mark is reported once every
 * sample queued before it has been rendered — that report is what the server's playout paces itself
 * by, exactly as a telephone carrier's mark echo. A clear drops everything not yet rendered at once and
 * reports the dropped marks in one message (what carriers do, see PlaybackReport).
 *
 * When the queue runs dry the output is silence until more audio comes; nothing is stretched or
 * repeated. At a context rate other than 16 kHz the audio goes through the platform's resampler.
 */
import { Resampler } from '../../../src/voice/resample.js';
import {
  CALL_SAMPLE_RATE,
  PLAYBACK_PROCESSOR,
  type PlaybackCommand,
  type PlaybackReport,
  type WorkletProcessor,
  workletScope,
} from './worklet-messages.js';

type Queued = { kind: 'audio'; samples: Float32Array; offset: number } | { kind: 'mark'; name: string };

class PlaybackProcessor extends workletScope.AudioWorkletProcessor implements WorkletProcessor {
  #queue: Queued[] = [];
  #resampler = new Resampler(CALL_SAMPLE_RATE, workletScope.sampleRate);
  /** A byte left over from a chunk of odd length: the first half of the next chunk's first sample. */
  #carry: number | undefined;
  #playing = false;

  constructor() {
    super();
    this.port.onmessage = (event: MessageEvent<PlaybackCommand>) => this.#command(event.data);
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const output = outputs[0]?.[0];
    if (!output) return true;
    let written = 0;
    let played = false;
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if (head.kind === 'mark') {
        this.#queue.shift();
        this.#report({ type: 'played', name: head.name });
        continue;
      }
      if (written === output.length) break;
      const take = Math.min(output.length - written, head.samples.length - head.offset);
      output.set(head.samples.subarray(head.offset, head.offset + take), written);
      written += take;
      head.offset += take;
      played = true;
      if (head.offset === head.samples.length) this.#queue.shift();
    }
    // The rest of the quantum is already zeros (the engine hands out cleared buffers); other channels
    // of a multi-channel output get the same signal.
    for (let channel = 1; channel < (outputs[0]?.length ?? 0); channel++) outputs[0]![channel]!.set(output);
    this.#setPlaying(played || this.#queue.length > 0);
    return true;
  }

  #command(command: PlaybackCommand): void {
    if (command.type === 'audio') this.#enqueue(command.pcm);
    else if (command.type === 'mark') this.#queue.push({ kind: 'mark', name: command.name });
    else if (command.type === 'clear') this.#clear();
  }

  #enqueue(pcm: ArrayBuffer): void {
    let bytes = new Uint8Array(pcm);
    if (this.#carry !== undefined) {
      const joined = new Uint8Array(bytes.length + 1);
      joined[0] = this.#carry;
      joined.set(bytes, 1);
      bytes = joined;
      this.#carry = undefined;
    }
    if (bytes.length % 2 === 1) {
      this.#carry = bytes[bytes.length - 1];
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const pcm16 = new Int16Array(bytes.length / 2);
    for (let i = 0; i < pcm16.length; i++) pcm16[i] = view.getInt16(i * 2, true);
    const converted = this.#resampler.push(pcm16);
    if (converted.length === 0) return;
    const samples = new Float32Array(converted.length);
    for (let i = 0; i < converted.length; i++) samples[i] = converted[i]! / 0x8000;
    this.#queue.push({ kind: 'audio', samples, offset: 0 });
  }

  #clear(): void {
    const names: string[] = [];
    for (const item of this.#queue) if (item.kind === 'mark') names.push(item.name);
    this.#queue = [];
    this.#carry = undefined;
    // The filter's history belongs to the dropped audio.
    this.#resampler = new Resampler(CALL_SAMPLE_RATE, workletScope.sampleRate);
    if (names.length > 0) this.#report({ type: 'cleared', names });
  }

  #setPlaying(playing: boolean): void {
    if (playing === this.#playing) return;
    this.#playing = playing;
    this.#report({ type: 'playing', playing });
  }

  #report(report: PlaybackReport): void {
    this.port.postMessage(report);
  }
}

workletScope.registerProcessor(PLAYBACK_PROCESSOR, PlaybackProcessor);

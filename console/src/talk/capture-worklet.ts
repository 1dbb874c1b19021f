/**
 * The microphone's side of a web call, on the audio rendering thread: it takes the context's
 * 128-sample render quanta, converts them to 16-bit PCM at 16 kHz and posts whole 20 ms frames
 * (640 bytes) to the main thread, each with its level for the input meter.
 *
 * The Talk page asks for a 16 kHz AudioContext, into which Chromium resamples the microphone, so the
 * conversion is normally a copy. A browser that only runs the context at the device's rate (48 kHz)
 * gets a real conversion: the platform's own streamed resampler, band-limited, so nothing aliases.
 */
import { Resampler } from '../../../src/voice/resample.js';
import {
  CALL_SAMPLE_RATE,
  CAPTURE_PROCESSOR,
  type CapturedFrame,
  FRAME_SAMPLES,
  type WorkletProcessor,
  workletScope,
} from './worklet-messages.js';

class CaptureProcessor extends workletScope.AudioWorkletProcessor implements WorkletProcessor {
  readonly #resampler = new Resampler(workletScope.sampleRate, CALL_SAMPLE_RATE);
  #frame = new Int16Array(FRAME_SAMPLES);
  #filled = 0;

  process(inputs: Float32Array[][]): boolean {
    // Mono: the first channel (getUserMedia is asked for one; a stereo device's first is the mic's).
    const channel = inputs[0]?.[0];
    // No input yet (the source is not connected, or the track is muted): nothing to send.
    if (!channel) return true;
    const samples = new Int16Array(channel.length);
    for (let i = 0; i < channel.length; i++) {
      const value = Math.max(-1, Math.min(1, channel[i]!));
      samples[i] = value < 0 ? value * 0x8000 : value * 0x7fff;
    }
    this.#append(this.#resampler.push(samples));
    // Kept alive until the main thread disconnects the node and closes the context.
    return true;
  }

  #append(samples: Int16Array): void {
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(samples.length - offset, FRAME_SAMPLES - this.#filled);
      this.#frame.set(samples.subarray(offset, offset + take), this.#filled);
      this.#filled += take;
      offset += take;
      if (this.#filled === FRAME_SAMPLES) this.#post();
    }
  }

  #post(): void {
    const frame = this.#frame;
    let sum = 0;
    for (let i = 0; i < frame.length; i++) sum += frame[i]! * frame[i]!;
    const message: CapturedFrame = {
      type: 'frame',
      // The platform's wire format is little-endian; Int16Array is the machine's order, which is
      // little-endian on every platform a browser runs on today, but say so rather than assume it.
      pcm: toLittleEndian(frame),
      level: Math.sqrt(sum / frame.length) / 0x8000,
    };
    this.port.postMessage(message, [message.pcm]);
    this.#frame = new Int16Array(FRAME_SAMPLES);
    this.#filled = 0;
  }
}

function toLittleEndian(samples: Int16Array): ArrayBuffer {
  const buffer = new ArrayBuffer(samples.length * 2);
  const view = new DataView(buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
  return buffer;
}

workletScope.registerProcessor(CAPTURE_PROCESSOR, CaptureProcessor);

/**
 * The simulated voice of the tts_a simulator: text becomes audio whose length follows the text
 * (`msPerCharacter`, about natural speech rate), cut into messages a few characters long, each with
 * the alignment of its characters. The signal is a tone whose pitch changes from word to word, loud
 * on letters and softer on spaces and punctuation: never silent, so a listener (the simulated phone,
 * a VAD) tells speech from silence by its energy, as with a real voice.
 */
import { type AudioFormat, pcm16ToUlaw } from '../voice/audio.js';

export interface SpokenChunk {
  audio: Uint8Array;
  chars: string[];
  /** Each character's start and duration, in ms from the start of this chunk's audio. */
  startMs: number[];
  durationMs: number[];
  /** The chunk's length of audio. */
  ms: number;
}

const LETTER_AMPLITUDE = 8000;
const PAUSE_AMPLITUDE = 1500;
/** Pitches the words cycle through (Hz): within a speaking voice's range. */
const PITCHES = [180, 220, 150, 260, 200, 240, 170, 210];

/** One stream's voice: the phase and word count carry over from one generation to the next. */
export class ToneVoice {
  #phase = 0;
  #word = 0;
  #inWord = false;

  constructor(
    private readonly format: AudioFormat,
    private readonly msPerCharacter: number,
    /** About how much audio each message holds; rounded to whole characters. */
    private readonly chunkMs: number,
  ) {}

  /** The text as audio messages, in order. */
  *speak(text: string): Generator<SpokenChunk> {
    const chars = Array.from(text);
    const perChunk = Math.max(1, Math.round(this.chunkMs / this.msPerCharacter));
    for (let offset = 0; offset < chars.length; offset += perChunk) {
      const part = chars.slice(offset, offset + perChunk);
      const samples: number[] = [];
      const startMs: number[] = [];
      const durationMs: number[] = [];
      for (const [index, char] of part.entries()) {
        startMs.push(index * this.msPerCharacter);
        durationMs.push(this.msPerCharacter);
        this.#character(char, samples);
      }
      yield {
        audio: this.#encode(Int16Array.from(samples)),
        chars: part,
        startMs,
        durationMs,
        ms: part.length * this.msPerCharacter,
      };
    }
  }

  #character(char: string, into: number[]): void {
    const letter = /[\p{L}\p{N}]/u.test(char);
    if (letter && !this.#inWord) this.#word++;
    this.#inWord = letter;
    const pitch = PITCHES[this.#word % PITCHES.length]!;
    const amplitude = letter ? LETTER_AMPLITUDE : PAUSE_AMPLITUDE;
    const count = Math.round((this.format.sampleRate * this.msPerCharacter) / 1000);
    const step = (2 * Math.PI * pitch) / this.format.sampleRate;
    for (let i = 0; i < count; i++) {
      into.push(Math.round(amplitude * Math.sin(this.#phase)));
      this.#phase = (this.#phase + step) % (2 * Math.PI);
    }
  }

  #encode(samples: Int16Array): Uint8Array {
    if (this.format.encoding === 'mulaw') return pcm16ToUlaw(samples);
    // linear16: little-endian, as the vendor's pcm_* formats are.
    const bytes = new Uint8Array(samples.length * 2);
    const view = new DataView(bytes.buffer);
    for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
    return bytes;
  }
}

/**
 * One utterance's way through the voice: text in (as the model writes it), audio out to the playout.
 * It opens the text-to-speech stream with the first usable key and, when that vendor fails (a refused
 * handshake, a 429, a break), opens the next key. Before any audio the next one gets all the text
 * again and the caller hears nothing of the failure. After audio, the audio already received still
 * plays, and the next voice gets only what that audio had not covered (spoken-text.ts: by the
 * vendor's alignment, or estimated from the audio's length, from the start of a word cut short); its
 * audio follows the old voice's in the playout, never over it. It also keeps what was spoken when, so
 * the conversation can keep exactly what the caller heard.
 *
 * Audio that is no speech (key tones, `play`) takes its place in the same order: the vendor's stream
 * is ended early so that all the audio of the words before it arrives, the tones follow, and text
 * written after them goes to a new stream of the same key.
 */
import { asProviderError, ProviderError } from '../providers/errors.js';
import type { TtsAdapter, TtsStream, TtsVoice } from '../providers/tts/types.js';
import { type AudioFormat, durationMs } from './audio.js';
import { SpokenText } from './spoken-text.js';
import type { Candidate } from './vendors.js';

export interface SpeechLaneOptions {
  adapter: TtsAdapter | undefined;
  candidates: Candidate[];
  format: AudioFormat;
  voice: TtsVoice;
  signal: AbortSignal;
  clock: () => number;
  /** Audio for the playout, in order. */
  onAudio(audio: Uint8Array): void;
  /**
   * A vendor failed and the next one takes over (or none is left); `midUtterance`: after some of its
   * audio had come.
   */
  onFallback(from: Candidate, error: ProviderError, next: Candidate | undefined, midUtterance: boolean): void;
}

export class SpeechLane {
  readonly spoken = new SpokenText();
  /** Everything sent to the current vendor, so a replacement can be given what it did not speak. */
  #texts: string[] = [];
  #ended = false;
  /** The start of a word whose end has not been written yet. */
  #partial = '';
  /** The last flush gave the vendor a space the model had not written yet. */
  #padded = false;
  #stream: TtsStream | undefined;
  #candidateIndex = -1;
  #audioSeen = false;
  /** The current vendor has sent audio. */
  #vendorAudio = false;
  #requestedAt: number | undefined;
  #firstByteAt: number | undefined;
  readonly #done: Promise<void>;
  #error: ProviderError | undefined;
  /** Audio waiting for the words before it (`play`), and the text written after it. */
  #held: Array<{ audio: Uint8Array; played: () => void }> = [];
  #after: string[] = [];
  /** The stream is being ended early so the held audio can follow its last words. */
  #cut = false;
  /** Wakes the lane waiting for text after a cut. */
  #wake: (() => void) | undefined;

  constructor(private readonly options: SpeechLaneOptions) {
    this.#done = this.#run();
  }

  /** When the first text went to the vendor, and its first audio came back (session clock). */
  get timing(): { requestedAt: number | undefined; firstByteAt: number | undefined } {
    return { requestedAt: this.#requestedAt, firstByteAt: this.#firstByteAt };
  }

  /** The last vendor failure, when every candidate failed. */
  get error(): ProviderError | undefined {
    return this.#error;
  }

  /**
   * Text as the model writes it, token by token: whole words go to the vendor at once (it decides
   * when it has enough to speak), a word cut between tokens waits for its end.
   */
  write(text: string): void {
    // A flush ended the last word with a space of its own: the model's space after it is one too many.
    if (this.#padded && /^\s/.test(text)) text = text.slice(1);
    if (!text) return;
    this.#padded = false;
    this.#requestedAt ??= this.options.clock();
    this.#partial += text;
    const last = Math.max(this.#partial.lastIndexOf(' '), this.#partial.lastIndexOf('\n'));
    if (last < 0) return;
    this.#deliver(this.#partial.slice(0, last + 1));
    this.#partial = this.#partial.slice(last + 1);
  }

  /** Speak everything written so far without waiting for more (the answer is complete). */
  flush(): void {
    if (this.#partial) {
      this.#deliver(`${this.#partial} `);
      this.#padded = true;
    }
    this.#partial = '';
    this.#stream?.flush();
  }

  /**
   * A sentence is complete: speak it now. Text written after its end that may be the start of a
   * word ("Of course. W") stays held until the word is whole; a sentence whose last word has no
   * space after it yet ("course.") goes out with one.
   */
  flushSentence(): void {
    if (/[.!?…,;:]["')\]]?$/.test(this.#partial)) {
      this.flush();
      return;
    }
    this.#stream?.flush();
  }

  /** Takes back the start of a word not given to the vendor yet (its model broke off); returns it. */
  retract(): string {
    const held = this.#partial;
    this.#partial = '';
    this.#padded = false;
    return held;
  }

  /** A whole text at once (a greeting, a goodbye). */
  send(text: string): void {
    if (!text) return;
    this.write(text);
    this.flush();
  }

  /**
   * Audio that says nothing (key tones, in the lane's format), played after everything written so
   * far; resolves once it is on its way to the playout (at once when the lane is over).
   */
  play(audio: Uint8Array): Promise<void> {
    if (this.#ended || this.options.signal.aborted) return Promise.resolve();
    this.flush();
    return new Promise((played) => {
      this.#held.push({ audio, played });
      if (this.#cut) return;
      // Nothing is waiting for the voice: the audio goes now.
      if (this.#texts.length === 0) return this.#release();
      this.#cut = true;
      this.#stream?.end();
    });
  }

  #deliver(piece: string): void {
    if (this.#cut) {
      this.#after.push(piece);
      return;
    }
    this.#texts.push(piece);
    this.spoken.sent(piece);
    this.#stream?.sendText(piece);
    this.#wake?.();
  }

  /** No more text; resolves when the last audio has arrived (or the lane gave up). */
  async end(): Promise<void> {
    if (this.#partial) this.flush();
    this.#ended = true;
    this.#stream?.end();
    this.#wake?.();
    await this.#done;
    this.spoken.finish();
  }

  async #run(): Promise<void> {
    const { candidates, adapter, signal } = this.options;
    try {
      while (!signal.aborted) {
        this.#candidateIndex += 1;
        const candidate = candidates[this.#candidateIndex];
        if (!candidate || !adapter) {
          this.#error ??= new ProviderError('no text-to-speech vendor is usable', {
            provider: candidate?.provider ?? 'tts',
            retryable: false,
          });
          return;
        }
        try {
          await this.#speakWith(adapter, candidate);
          if (signal.aborted || !this.#cut) return;
          // Ended early for held audio: the next words are spoken with the same key.
          this.#candidateIndex -= 1;
        } catch (error) {
          this.#stream = undefined;
          if (signal.aborted) return;
          const failure = asProviderError(error, candidate.provider);
          this.#error = failure;
          const next = candidates[this.#candidateIndex + 1];
          const midUtterance = this.#vendorAudio;
          this.options.onFallback(candidate, failure, next, midUtterance);
          if (midUtterance) {
            // Its audio plays on; the next voice starts where that audio stops.
            const rest = this.spoken.switchVoice();
            this.#texts = rest ? [rest] : [];
            this.#vendorAudio = false;
            if (!rest && this.#ended) return;
          }
          if (!this.#cut || this.#texts.length > 0) continue;
        }
        this.#endCut();
        if (!(await this.#moreText())) return;
      }
    } finally {
      // The voice is done or gave up: held audio still plays (unless the utterance was cut off).
      if (signal.aborted) for (const held of this.#held.splice(0)) held.played();
      else this.#release();
    }
  }

  /** All audio of the words before the held audio has come: it follows them, later text waits. */
  #endCut(): void {
    this.#cut = false;
    this.#stream = undefined;
    this.#vendorAudio = false;
    this.#texts = [];
    this.#release();
    for (const piece of this.#after.splice(0)) {
      this.#texts.push(piece);
      this.spoken.sent(piece);
    }
  }

  #release(): void {
    for (const { audio, played } of this.#held.splice(0)) {
      this.spoken.pause(durationMs(this.options.format, audio.length));
      this.options.onAudio(audio);
      played();
    }
  }

  /** After a cut: true once there is text to speak, false when the lane ends without any. */
  #moreText(): Promise<boolean> {
    const { signal } = this.options;
    return new Promise((resolve) => {
      const check = () => {
        if (this.#texts.length > 0) resolve(true);
        else if (this.#ended || signal.aborted) resolve(false);
        else return;
        this.#wake = undefined;
        signal.removeEventListener('abort', check);
      };
      this.#wake = check;
      signal.addEventListener('abort', check);
      check();
    });
  }

  async #speakWith(adapter: TtsAdapter, candidate: Candidate): Promise<void> {
    const { format, voice, signal } = this.options;
    const stream = await adapter.open({
      apiKey: candidate.apiKey ?? '',
      baseUrl: candidate.baseUrl,
      format,
      signal,
      ...voice,
    });
    this.#stream = stream;
    for (const text of this.#texts) stream.sendText(text);
    if (this.#texts.length > 0) stream.flush();
    if (this.#ended || this.#cut) stream.end();
    for await (const event of stream.events) {
      if (signal.aborted) return;
      if (event.type === 'final') return;
      if (!this.#audioSeen) {
        this.#audioSeen = true;
        this.#firstByteAt = this.options.clock();
      }
      this.#vendorAudio = true;
      this.spoken.add(durationMs(format, event.audio.length), event.alignment);
      this.options.onAudio(event.audio);
    }
  }
}

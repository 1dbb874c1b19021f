/**
 * One utterance's way through the voice: text in (as the model writes it), audio out to the playout.
 * It opens the text-to-speech stream with the first usable key and, when that vendor fails (a refused
 * handshake, a 429, a break), opens the next key. Before any audio the next one gets all the text
 * again and the caller hears nothing of the failure. After audio, the audio already received still
 * plays, and the next voice gets only what that audio had not covered (spoken-text.ts: by the
 * vendor's alignment, or estimated from the audio's length, from the start of a word cut short); its
 * audio follows the old voice's in the playout, never over it. It also keeps what was spoken when, so
 * the conversation can keep exactly what the caller heard.
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

  #deliver(piece: string): void {
    this.#texts.push(piece);
    this.spoken.sent(piece);
    this.#stream?.sendText(piece);
  }

  /** No more text; resolves when the last audio has arrived (or the lane gave up). */
  async end(): Promise<void> {
    if (this.#partial) this.flush();
    this.#ended = true;
    this.#stream?.end();
    await this.#done;
    this.spoken.finish();
  }

  async #run(): Promise<void> {
    const { candidates, adapter, signal } = this.options;
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
        return;
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
      }
    }
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
    if (this.#ended) stream.end();
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

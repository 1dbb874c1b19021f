/**
 * One utterance's way through the voice: text in (as the model writes it), audio out to the playout.
 * It opens the text-to-speech stream with the first usable key and, when that vendor fails before its
 * first audio byte (a refused handshake, a 429, a break), opens the next key and sends it the text
 * again — the caller hears nothing of the failure. A failure after audio has been heard ends the
 * utterance where it is (resuming mid-sentence with another voice is issue 18's). It also keeps what
 * was spoken when, from the vendor's alignment (or, without one, spread evenly over the audio), so the
 * conversation can keep exactly what the caller heard.
 */
import { asProviderError, ProviderError } from '../providers/errors.js';
import type { TtsAdapter, TtsStream, TtsStreamOptions, TtsVoice } from '../providers/tts/types.js';
import { type AudioFormat, durationMs } from './audio.js';
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
  /** A vendor failed and the next one takes over (or none is left). */
  onFallback(from: Candidate, error: ProviderError, next: Candidate | undefined): void;
}

/** What was said, character by character, at what audio time (ms from the utterance's start). */
class SpokenText {
  #chars: Array<{ char: string; atMs: number }> = [];
  #audioMs = 0;
  #pendingText = '';

  /** An audio chunk and, when the vendor gives it, the characters it speaks. */
  add(chunkMs: number, alignment: { chars: string[]; startMs: number[] } | undefined): void {
    if (alignment && alignment.chars.length > 0) {
      alignment.chars.forEach((char, i) => {
        this.#chars.push({ char, atMs: this.#audioMs + (alignment.startMs[i] ?? 0) });
      });
    }
    this.#audioMs += chunkMs;
  }

  /** Text sent without alignment coming back: spread over the audio when the utterance ends. */
  sent(text: string): void {
    this.#pendingText += text;
  }

  finishWithoutAlignment(): void {
    if (this.#chars.length > 0 || !this.#pendingText) return;
    const text = this.#pendingText;
    [...text].forEach((char, i) => {
      this.#chars.push({ char, atMs: (i / text.length) * this.#audioMs });
    });
  }

  /** The words spoken before `playedMs` of audio (whole words only). */
  heard(playedMs: number): string {
    const said = this.#chars
      .filter((entry) => entry.atMs < playedMs)
      .map((entry) => entry.char)
      .join('');
    const all = this.#chars.map((entry) => entry.char).join('');
    if (said.length >= all.length) return all.trim();
    // Cut back to the last word boundary: a half-heard word was not heard.
    const boundary = said.search(/\s\S*$/);
    return (boundary >= 0 ? said.slice(0, boundary) : '').trim();
  }

  get audioMs(): number {
    return this.#audioMs;
  }
}

export class SpeechLane {
  readonly spoken = new SpokenText();
  /** Everything sent, so a replacement vendor can be given it again. */
  readonly #texts: string[] = [];
  #ended = false;
  /** The start of a word whose end has not been written yet. */
  #partial = '';
  #stream: TtsStream | undefined;
  #candidateIndex = -1;
  #audioSeen = false;
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
    if (!text) return;
    this.#requestedAt ??= this.options.clock();
    this.#partial += text;
    const last = Math.max(this.#partial.lastIndexOf(' '), this.#partial.lastIndexOf('\n'));
    if (last < 0) return;
    this.#deliver(this.#partial.slice(0, last + 1));
    this.#partial = this.#partial.slice(last + 1);
  }

  /** Speak what was written so far without waiting for more (a sentence is complete). */
  flush(): void {
    if (this.#partial) this.#deliver(`${this.#partial} `);
    this.#partial = '';
    this.#stream?.flush();
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
    this.spoken.finishWithoutAlignment();
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
        if (signal.aborted) return;
        const failure = asProviderError(error, candidate.provider);
        this.#error = failure;
        // Once the caller has heard this voice, another cannot take over mid-sentence.
        if (this.#audioSeen) {
          this.options.onFallback(candidate, failure, undefined);
          return;
        }
        this.options.onFallback(candidate, failure, candidates[this.#candidateIndex + 1]);
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
      this.spoken.add(durationMs(format, event.audio.length), event.alignment);
      this.options.onAudio(event.audio);
    }
  }
}

/**
 * The scripted "recognition" of the stt_a simulator, for one stream: the words come from the test's
 * script, the timing from the audio. It decodes what it receives in 20 ms frames, detects speech by
 * energy (a start level held for two frames, then a lower level to stay in speech: hysteresis), and
 * gives each speech segment the next utterance of the script. While the segment lasts it reveals the
 * words in interim `Results` in proportion to the speech heard; once silence lasts the endpointing
 * time it sends the final with `speech_final`; once it lasts `utterance_end_ms` after the last word, an
 * `UtteranceEnd`. Every time is in seconds of audio received, so a test may send faster than real
 * time and get the same messages.
 */

import { type AudioFormat, audioLevel, bytesFor, FRAME_MS } from '../voice/audio.js';

type Json = Record<string, unknown>;

export interface RecognizerSettings {
  format: AudioFormat;
  interimResults: boolean;
  vadEvents: boolean;
  /** Silence that ends a segment with `speech_final`; undefined: endpointing off. */
  endpointingMs: number | undefined;
  /** Silence after the last word before `UtteranceEnd`; undefined: none. */
  utteranceEndMs: number | undefined;
  /** Audio time between two interim results of a segment, at least. */
  interimIntervalMs: number;
  /** The model's name, echoed in each result's metadata. */
  model: string;
  requestId: string;
}

/** A frame at or above this level (RMS of 16-bit samples) counts toward the start of speech. */
export const SPEECH_START_LEVEL = 500;
/** Frames needed at the start level before speech is declared (a click is not speech). */
const SPEECH_START_FRAMES = 2;
/** Once in speech, a frame at or above this level still counts as voice (quieter consonants). */
export const SPEECH_CONTINUE_LEVEL = 150;
/** How fast interim results reveal the script's words: about a conversational 150 words a minute. */
const WORDS_PER_SECOND = 2.5;
/** With endpointing off, the silence after which a segment's words are still made final. */
const FINAL_WITHOUT_ENDPOINTING_MS = 1000;
const FRAME_SECONDS = FRAME_MS / 1000;

interface Segment {
  words: string[];
  start: number;
  /** End of the last voiced frame. */
  voiceEnd: number;
  lastInterimAt: number;
  /** Its words were sent in a final (by endpointing, Finalize or CloseStream). */
  final: boolean;
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

export class ScriptedRecognizer {
  #time = 0;
  #pending = new Uint8Array(0);
  #loudRun = 0;
  #speaking = false;
  #quietMs = 0;
  #segment: Segment | undefined;
  /** Words of the current segment were sent and no `UtteranceEnd` followed yet. */
  #utteranceOpen = false;
  readonly #frameBytes: number;

  constructor(
    private readonly settings: RecognizerSettings,
    private readonly nextUtterance: () => string,
    private readonly emit: (message: Json) => void,
  ) {
    this.#frameBytes = bytesFor(settings.format, FRAME_MS);
  }

  /** Seconds of audio received so far. */
  get audioSeconds(): number {
    return this.#time;
  }

  audio(bytes: Uint8Array): void {
    const all = new Uint8Array(this.#pending.length + bytes.length);
    all.set(this.#pending);
    all.set(bytes, this.#pending.length);
    let offset = 0;
    for (; offset + this.#frameBytes <= all.length; offset += this.#frameBytes)
      this.#frame(all.subarray(offset, offset + this.#frameBytes));
    this.#pending = all.slice(offset);
  }

  /** `Finalize`: the words of the segment under way, final now (`from_finalize`). */
  finalize(): void {
    if (this.#segment && !this.#segment.final) this.#final(false, true);
  }

  /** `CloseStream`: whatever is pending becomes final before the stream closes. */
  flush(): void {
    if (this.#segment && !this.#segment.final) this.#final(false, false);
  }

  #frame(frame: Uint8Array): void {
    const level = this.#level(frame);
    const frameEnd = this.#time + FRAME_SECONDS;
    if (!this.#speaking) {
      this.#loudRun = level >= SPEECH_START_LEVEL ? this.#loudRun + 1 : 0;
      if (this.#loudRun >= SPEECH_START_FRAMES)
        this.#speechStarts(frameEnd - this.#loudRun * FRAME_SECONDS, frameEnd);
    } else if (level >= SPEECH_CONTINUE_LEVEL) {
      this.#quietMs = 0;
      this.#segment!.voiceEnd = frameEnd;
    } else {
      this.#quietMs += FRAME_MS;
    }
    this.#time = frameEnd;
    if (this.#speaking) this.#whileSpeaking();
    this.#maybeUtteranceEnd();
  }

  #level(frame: Uint8Array): number {
    return audioLevel(this.settings.format, frame);
  }

  #speechStarts(at: number, voiceEnd: number): void {
    this.#speaking = true;
    this.#quietMs = 0;
    this.#loudRun = 0;
    const words = this.nextUtterance().split(/\s+/).filter(Boolean);
    this.#segment = { words, start: at, voiceEnd, lastInterimAt: at, final: false };
    this.#utteranceOpen = false;
    if (this.settings.vadEvents) this.emit({ type: 'SpeechStarted', channel: [0, 1], timestamp: round(at) });
  }

  #whileSpeaking(): void {
    const segment = this.#segment!;
    const { endpointingMs, interimResults, interimIntervalMs } = this.settings;
    if (endpointingMs !== undefined && this.#quietMs >= endpointingMs) {
      this.#final(true, false);
      return;
    }
    if (endpointingMs === undefined && this.#quietMs >= FINAL_WITHOUT_ENDPOINTING_MS) {
      if (!segment.final) this.#final(false, false);
      this.#speaking = false;
      return;
    }
    if (!interimResults || segment.final || this.#quietMs > 0) return;
    if ((this.#time - segment.lastInterimAt) * 1000 < interimIntervalMs) return;
    const heard = segment.voiceEnd - segment.start;
    const count = Math.min(segment.words.length, Math.max(1, Math.ceil(heard * WORDS_PER_SECOND)));
    segment.lastInterimAt = this.#time;
    this.#results(segment.words.slice(0, count), { isFinal: false, speechFinal: false, fromFinalize: false });
  }

  /** The segment's words as a final; with `speechFinal` the segment (and the speech) ends here. */
  #final(speechFinal: boolean, fromFinalize: boolean): void {
    const segment = this.#segment!;
    // After a Finalize the words are out already; the endpointing final then carries none.
    const words = segment.final ? [] : segment.words;
    segment.final = true;
    if (speechFinal) this.#speaking = false;
    this.#results(words, { isFinal: true, speechFinal, fromFinalize });
  }

  #results(words: string[], flags: { isFinal: boolean; speechFinal: boolean; fromFinalize: boolean }): void {
    const segment = this.#segment!;
    const start = segment.start;
    const end = Math.max(segment.voiceEnd, start);
    const step = words.length > 0 ? (end - start) / words.length : 0;
    if (words.length > 0) this.#utteranceOpen = true;
    this.emit({
      type: 'Results',
      channel_index: [0, 1],
      duration: round(end - start),
      start: round(start),
      is_final: flags.isFinal,
      speech_final: flags.speechFinal,
      from_finalize: flags.fromFinalize,
      channel: {
        alternatives: [
          {
            transcript: words.join(' '),
            confidence: words.length > 0 ? 0.98 : 0,
            words: words.map((word, i) => ({
              word: word.toLowerCase().replace(/[^\p{L}\p{N}'-]/gu, ''),
              start: round(start + i * step),
              end: round(start + (i + 1) * step),
              confidence: 0.98,
              punctuated_word: word,
            })),
          },
        ],
      },
      metadata: {
        request_id: this.settings.requestId,
        model_info: {
          name: `general-${this.settings.model}`,
          version: 'simulated',
          arch: this.settings.model,
        },
        model_uuid: '00000000-0000-4000-8000-000000000000',
      },
    });
  }

  #maybeUtteranceEnd(): void {
    const { utteranceEndMs } = this.settings;
    const segment = this.#segment;
    if (utteranceEndMs === undefined || !segment || !this.#utteranceOpen) return;
    // Still speaking with no pause: the gap after the last word has not begun.
    if (this.#speaking && this.#quietMs === 0) return;
    if ((this.#time - segment.voiceEnd) * 1000 < utteranceEndMs) return;
    this.#utteranceOpen = false;
    this.emit({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: round(segment.voiceEnd) });
  }
}

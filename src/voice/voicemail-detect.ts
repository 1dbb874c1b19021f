/**
 * Telling an answering machine from a person on an outbound call, and when its greeting is over —
 * pure: the session (through voicemail.ts) feeds it the callee's audio, the words the speech-to-text
 * vendor heard and the carrier's verdicts, each with the session's clock, and carries out what it
 * returns. Every rule is unit-tested on made-up inputs (test/voicemail.test.ts).
 *
 * A machine is known by (the first evidence wins, a carrier's verdict over all of ours):
 * - **carrier** — the carrier's own detection says so (its verdict may come at any time);
 * - **words** — the callee's first words are a greeting's ("leave a message", "after the tone"…);
 * - **audio** — sound that starts at once and runs `LONG_GREETING_MS` without a real pause (a
 *   person says "hello?" and waits; a machine talks on);
 * - **beep** — a steady single tone of 800–2000 Hz for `BEEP_MIN_MS` (Goertzel filters on the
 *   decoded samples; speech spreads over many frequencies, a key press is two tones at once).
 * Our own rules listen only in the first `DETECTION_WINDOW_MS`, and stop once the carrier says a
 * person answered. Once a machine is known, its greeting is over at the beep, at the carrier's
 * "greeting ended", after `SILENCE_END_MS` of silence following its speech, or at the latest
 * `maxWaitMs` after the machine was detected — and never while a beep still sounds (a message starts
 * when the machine records). Audio rules run on the audio's own time (frames × 20 ms), so a stream
 * that stalls and bursts does not read as silence.
 */

import { type AudioFormat, decodeAudio, FRAME_MS } from './audio.js';
import { goertzelCoefficient, goertzelPower } from './goertzel.js';

export type MachineSource = 'carrier' | 'words' | 'audio' | 'beep';
/** How the machine's greeting was known to be over (none when the call hangs up without waiting). */
export type GreetingEnd = 'beep' | 'carrier' | 'silence' | 'timeout';

/** How long our own rules listen for a machine, from the first audio. */
export const DETECTION_WINDOW_MS = 30_000;
/** Sound running this long from the start of the call without a pause is a machine's greeting. */
export const LONG_GREETING_MS = 5000;
/** The greeting rule counts only sound that starts this soon after the call connects. */
export const GREETING_START_MS = 2500;
/** A pause at least this long ends a run of sound (breaths between a machine's sentences are shorter). */
export const PAUSE_MS = 700;
/** Silence after a machine's last sound that ends its greeting (when no beep comes). */
export const SILENCE_END_MS = 1500;
/** A beep lasts at least this long. */
export const BEEP_MIN_MS = 150;
/** Decoded level (RMS of 16-bit samples) from which a frame counts as sound. */
export const SOUND_LEVEL = 300;

/** What the words of a machine's greeting (or a carrier's voicemail) say, lower case without punctuation. */
const MACHINE_PHRASES: RegExp[] = [
  /\bleave (me |us )?(a|your) ([a-z]+ )?message\b/,
  /\b(after|at) the (tone|beep)\b/,
  /\brecord your message\b/,
  /\bvoice ?mail\b/,
  /\bmail ?box\b/,
  /\b(is|are|am) (not|currently not) available\b/,
  /\b(is|are|am) unavailable\b/,
  /\bcan ?not (come to|take|answer) (the phone|your call)\b/,
  /\bcant (come to|take|answer) (the phone|your call)\b/,
  /\bthe (person|party|number|subscriber) you (are calling|have called|have dialed|are trying to reach)\b/,
  /\bplease leave\b/,
];

/** Whether the callee's words are an answering machine's (or a carrier's voicemail's). */
export function soundsLikeMachine(text: string): boolean {
  const plain = text
    .toLowerCase()
    .replace(/[’']/g, '')
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\s+/g, ' ');
  return MACHINE_PHRASES.some((phrase) => phrase.test(plain));
}

/** The tone frequencies the beep detector listens for: 800–2000 Hz in steps of 25 Hz. */
const BEEP_FREQUENCIES = Array.from({ length: 49 }, (_, i) => 800 + i * 25);
/** Share of a frame's energy one frequency must hold for the frame to be a tone. */
const TONE_SHARE = 0.6;
/** Consecutive tone frames may wander this far (Hz) and still be one steady tone. */
const TONE_DRIFT_HZ = 50;

/**
 * The strongest of the beep frequencies in `samples` and its share of their energy (1 for a pure
 * tone on a filter's frequency): a Goertzel filter per frequency.
 */
export function dominantTone(samples: Int16Array, sampleRate: number): { hz: number; share: number } {
  let energy = 0;
  for (const sample of samples) energy += sample * sample;
  if (energy === 0) return { hz: 0, share: 0 };
  let best = { hz: 0, share: 0 };
  const n = samples.length;
  for (const hz of BEEP_FREQUENCIES) {
    const power = goertzelPower(samples, goertzelCoefficient(hz, sampleRate));
    // A pure tone of amplitude A puts (A·n/2)² in its filter and A²·n/2 in the energy.
    const share = power / ((n / 2) * energy);
    if (share > best.share) best = { hz, share };
  }
  return best;
}

/**
 * Finds a beep in a stream of frames: a steady single tone held for `BEEP_MIN_MS` (`beep`), and the
 * frame where it stops (`beep_end`: a machine records from then on).
 */
export class BeepDetector {
  #toneMs = 0;
  #hz = 0;

  constructor(private readonly sampleRate: number) {}

  /** Whether a beep is sounding now. */
  get sounding(): boolean {
    return this.#toneMs >= BEEP_MIN_MS;
  }

  /** One frame of decoded samples (`ms` long, its level the RMS): whether a beep began or ended with it. */
  push(samples: Int16Array, level: number, ms = FRAME_MS): 'beep' | 'beep_end' | undefined {
    const tone = level >= SOUND_LEVEL ? dominantTone(samples, this.sampleRate) : { hz: 0, share: 0 };
    const steady =
      tone.share >= TONE_SHARE && (this.#toneMs === 0 || Math.abs(tone.hz - this.#hz) <= TONE_DRIFT_HZ);
    if (!steady) {
      const ended = this.sounding;
      this.#toneMs = tone.share >= TONE_SHARE ? ms : 0;
      this.#hz = tone.hz;
      return ended ? 'beep_end' : undefined;
    }
    const before = this.#toneMs;
    this.#toneMs += ms;
    this.#hz = tone.hz;
    return before < BEEP_MIN_MS && this.#toneMs >= BEEP_MIN_MS ? 'beep' : undefined;
  }
}

/** What the watch decided. */
export type WatchAction =
  /** A machine answered: the assistant stops talking; what it does follows once its greeting ends. */
  | { type: 'machine'; source: MachineSource; at: number }
  /** The machine's greeting is over (or the wait is): leave the message, or hang up. */
  | { type: 'greeting_over'; source: MachineSource; end?: GreetingEnd; waitedMs: number };

type Phase = 'listening' | 'waiting' | 'done' | 'off';

/**
 * The detection's state over one call. `action: 'hang_up'` does not wait for the greeting's end:
 * `greeting_over` follows `machine` at once.
 */
export class VoicemailWatch {
  #phase: Phase = 'listening';
  #source: MachineSource = 'carrier';
  #detectedAt = 0;
  #startAt: number | undefined;
  /** The current run of sound: when it began, and the last frame of sound. */
  /** The carrier said the greeting ended while a beep sounded. */
  #carrierEnded = false;
  #runStart: number | undefined;
  #lastSoundAt: number | undefined;
  readonly #beeps: BeepDetector;

  constructor(
    private readonly options: { format: AudioFormat; maxWaitMs: number; waitForGreeting: boolean },
  ) {
    this.#beeps = new BeepDetector(options.format.sampleRate);
  }

  /** Whether a machine has been detected (the assistant no longer converses). */
  get machine(): boolean {
    return this.#phase === 'waiting' || this.#phase === 'done';
  }

  /** Whether anything is still being watched (the session may stop feeding it otherwise). */
  get watching(): boolean {
    return this.#phase === 'listening' || this.#phase === 'waiting';
  }

  /** A frame of the callee's audio, in the stream's format, heard at `at`. */
  audio(frame: Uint8Array, at: number): WatchAction[] {
    if (!this.watching) return [];
    this.#startAt ??= at;
    const samples = decodeAudio(this.options.format, frame);
    const level = rms(samples);
    const ms = (samples.length * 1000) / this.options.format.sampleRate;
    const beep = this.#beeps.push(samples, level, ms);
    const actions: WatchAction[] = [];
    if (level >= SOUND_LEVEL) {
      if (
        this.#runStart === undefined ||
        (this.#lastSoundAt !== undefined && at - this.#lastSoundAt >= PAUSE_MS)
      ) {
        this.#runStart = at;
      }
      this.#lastSoundAt = at;
    }
    if (this.#phase === 'listening') {
      if (at - this.#startAt > DETECTION_WINDOW_MS) {
        this.#phase = 'off';
        return [];
      }
      if (beep === 'beep') return this.#detected('beep', at);
      if (this.#longGreeting(at)) return this.#detected('audio', at);
      return actions;
    }
    // A message starts once the beep is over: the machine records from then on.
    if (beep === 'beep_end') return this.#over(this.#carrierEnded ? 'carrier' : 'beep', at);
    if (this.#beeps.sounding) return actions;
    // The machine has spoken (a carrier may tell before it has), and has fallen silent.
    if (this.#lastSoundAt !== undefined && at - this.#lastSoundAt >= SILENCE_END_MS)
      return this.#over('silence', at);
    if (at - this.#detectedAt >= this.options.maxWaitMs) return this.#over('timeout', at);
    return actions;
  }

  /** A final transcript of the callee's words. */
  words(text: string, at: number): WatchAction[] {
    if (
      this.#phase !== 'listening' ||
      (this.#startAt !== undefined && at - this.#startAt > DETECTION_WINDOW_MS)
    )
      return [];
    return soundsLikeMachine(text) ? this.#detected('words', at) : [];
  }

  /** The carrier's verdict: who answered, and whether a machine's greeting has ended. */
  carrier(
    verdict: { answeredBy?: 'human' | 'machine'; greetingEnded?: 'beep' | 'other' },
    at: number,
  ): WatchAction[] {
    if (this.#phase === 'listening' && verdict.answeredBy === 'human') {
      this.#phase = 'off';
      return [];
    }
    const machine = verdict.answeredBy === 'machine' || verdict.greetingEnded !== undefined;
    if (this.#phase === 'listening' && machine) {
      const actions = this.#detected('carrier', at);
      if (verdict.greetingEnded && this.watching) actions.push(...this.#carrierEnd(at));
      return actions;
    }
    return this.#phase === 'waiting' && verdict.greetingEnded ? this.#carrierEnd(at) : [];
  }

  /** The carrier says the greeting is over; told while a beep still sounds (carrier_c reports its start), the message waits for its end. */
  #carrierEnd(at: number): WatchAction[] {
    if (!this.#beeps.sounding) return this.#over('carrier', at);
    this.#carrierEnded = true;
    return [];
  }

  /** Whether the current run of sound began at the start of the call and has gone on long enough. */
  #longGreeting(at: number): boolean {
    if (this.#runStart === undefined || this.#startAt === undefined) return false;
    if (this.#runStart - this.#startAt > GREETING_START_MS) return false;
    return this.#lastSoundAt === at && at - this.#runStart >= LONG_GREETING_MS;
  }

  #detected(source: MachineSource, at: number): WatchAction[] {
    this.#phase = 'waiting';
    this.#source = source;
    this.#detectedAt = at;
    const actions: WatchAction[] = [{ type: 'machine', source, at }];
    if (!this.options.waitForGreeting) actions.push(...this.#over(undefined, at));
    return actions;
  }

  #over(end: GreetingEnd | undefined, at: number): WatchAction[] {
    this.#phase = 'done';
    const waitedMs = Math.max(0, Math.round(at - this.#detectedAt));
    return [{ type: 'greeting_over', source: this.#source, ...(end ? { end } : {}), waitedMs }];
  }
}

function rms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}

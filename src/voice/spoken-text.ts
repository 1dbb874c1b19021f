/**
 * What an utterance said, character by character, at what audio time (ms from its start): from the
 * vendor's alignment when it gives one, otherwise the text spread evenly over its audio. The session
 * cuts the conversation at what the caller heard with it; the speech lane asks it, when a voice breaks
 * mid-utterance, which of the text it was given its audio had not covered yet, so that the next voice
 * speaks only that.
 *
 * An utterance may be spoken by several voices in turn; each is a segment: the text it was given and
 * the audio it sent from `startMs` on.
 */
import type { Alignment } from '../providers/tts/types.js';

/**
 * Speech without alignment is assumed this slow (natural speech is 60–70 ms a character): slower
 * than real, so that the text thought covered is too little rather than too much — after a break
 * the next voice repeats a word rather than skips one.
 */
export const ESTIMATE_MS_PER_CHAR = 80;

interface Segment {
  /** The text this voice was given. */
  text: string;
  startMs: number;
  /** Where its aligned characters start in `#chars`; none when it sent no alignment. */
  firstChar: number;
  aligned: boolean;
}

export class SpokenText {
  #chars: Array<{ char: string; atMs: number }> = [];
  #audioMs = 0;
  #segment: Segment = { text: '', startMs: 0, firstChar: 0, aligned: false };

  /** An audio chunk and, when the vendor gives it, the characters it speaks. */
  add(chunkMs: number, alignment: Pick<Alignment, 'chars' | 'startMs'> | undefined): void {
    if (alignment && alignment.chars.length > 0) {
      this.#segment.aligned = true;
      alignment.chars.forEach((char, i) => {
        this.#chars.push({ char, atMs: this.#audioMs + (alignment.startMs[i] ?? 0) });
      });
    }
    this.#audioMs += chunkMs;
  }

  /** Text given to the current voice. */
  sent(text: string): void {
    this.#segment.text += text;
  }

  /**
   * The current voice broke off: returns the part of its text its audio had not covered — from the
   * start of the word being spoken, so a word cut short is said again in full — and starts a new
   * segment for the next voice, which is given that rest.
   */
  switchVoice(): string {
    const segment = this.#segment;
    const resume = this.#resumePoint(segment);
    const rest = segment.text.slice(resume).trimStart();
    if (segment.aligned) {
      // The characters of the word to be said again leave the record: the next voice's take them over.
      const keep = nonSpaceCount(segment.text.slice(0, resume));
      let seen = 0;
      let cut = segment.firstChar;
      while (cut < this.#chars.length && seen < keep) {
        if (!/\s/.test(this.#chars[cut]!.char)) seen += 1;
        cut += 1;
      }
      // The space after the last word kept stays: the next voice's words follow it.
      while (cut < this.#chars.length && /\s/.test(this.#chars[cut]!.char)) cut += 1;
      this.#chars.length = cut;
    } else {
      this.#spread(segment.text.slice(0, resume), segment.startMs);
    }
    this.#segment = { text: rest, startMs: this.#audioMs, firstChar: this.#chars.length, aligned: false };
    return rest;
  }

  /**
   * Audio that says nothing (key tones) follows everything given so far, which has all been said: the
   * text is placed before it and the next text after it.
   */
  pause(ms: number): void {
    const segment = this.#segment;
    if (!segment.aligned && segment.text) this.#spread(segment.text, segment.startMs);
    this.#audioMs += ms;
    this.#segment = { text: '', startMs: this.#audioMs, firstChar: this.#chars.length, aligned: false };
  }

  /** The utterance is over: a last segment without alignment is spread over its audio. */
  finish(): void {
    const segment = this.#segment;
    if (segment.aligned || !segment.text) return;
    this.#spread(segment.text, segment.startMs);
    segment.text = '';
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

  /** Where in the segment's text its audio stops covering it, moved back to a word's start. */
  #resumePoint(segment: Segment): number {
    const text = segment.text;
    let covered: number;
    let wordDone = false;
    if (segment.aligned) {
      const chars = this.#chars.slice(segment.firstChar);
      covered = chars.filter((entry) => !/\s/.test(entry.char)).length;
      // A space aligned after the last letter: that word's audio had ended.
      wordDone = chars.length > 0 && /\s/.test(chars.at(-1)!.char);
    } else {
      covered = Math.floor((this.#audioMs - segment.startMs) / ESTIMATE_MS_PER_CHAR);
    }
    if (covered <= 0) return 0;
    // Past the covered-th non-space character of the text.
    let at = 0;
    for (let seen = 0; at < text.length && seen < covered; at++) if (!/\s/.test(text[at]!)) seen += 1;
    if (wordDone && (at >= text.length || /\s/.test(text[at]!))) return at;
    // Inside a word, or not known to be past it: back to its start.
    while (at > 0 && !/\s/.test(text[at - 1]!)) at -= 1;
    return at;
  }

  #spread(text: string, fromMs: number): void {
    const span = this.#audioMs - fromMs;
    [...text].forEach((char, i) => {
      this.#chars.push({ char, atMs: fromMs + (i / text.length) * span });
    });
  }
}

function nonSpaceCount(text: string): number {
  return text.replace(/\s/g, '').length;
}

/** Two pieces of what an utterance said, as one text. */
export function joinText(before: string, after: string): string {
  return `${before} ${after}`.trim();
}

/**
 * What `text` says after `prefix` (which it starts with, give or take spacing): `heard` counts its
 * characters the way the voice gave them back, so the prefix is skipped by its non-space characters.
 */
export function afterSaid(text: string, prefix: string): string {
  let keep = nonSpaceCount(prefix);
  if (keep === 0) return text;
  let index = 0;
  while (index < text.length && keep > 0) {
    if (!/\s/.test(text[index]!)) keep -= 1;
    index += 1;
  }
  return text.slice(index).trim();
}

/**
 * Speech started before its call's media stream exists: the greeting, synthesized while the carrier
 * is still connecting the stream (the voice webhook has answered, the stream follows within moments),
 * so the caller hears it without waiting on the vendor's handshake. Its audio is held until the
 * session connects the playout, then replayed and forwarded as it comes.
 */
import { SpeechLane, type SpeechLaneOptions } from './speech-lane.js';

export class EarlySpeech {
  readonly abort = new AbortController();
  readonly lane: SpeechLane;
  #held: Uint8Array[] = [];
  #sink: ((audio: Uint8Array) => void) | undefined;

  constructor(options: Omit<SpeechLaneOptions, 'onAudio' | 'signal'>, text: string) {
    this.lane = new SpeechLane({
      ...options,
      signal: this.abort.signal,
      onAudio: (audio) => (this.#sink ? this.#sink(audio) : this.#held.push(audio)),
    });
    this.lane.send(text);
  }

  /** From now on audio goes to `sink`; what arrived before goes first. */
  connect(sink: (audio: Uint8Array) => void): void {
    this.#sink = sink;
    const held = this.#held;
    this.#held = [];
    for (const audio of held) sink(audio);
  }

  /** Bytes held for a playout that has not connected yet. */
  get heldBytes(): number {
    return this.#held.reduce((sum, audio) => sum + audio.length, 0);
  }
}

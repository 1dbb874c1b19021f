/**
 * The audio a call has still to send, cut into packets, with the runtime's marks between the bytes.
 * The runtime hands audio over in pieces of any length, faster than real time, and puts a named mark
 * after a sentence; a carrier echoes the mark when the audio before it has played, which is how the
 * runtime knows what the caller heard (barge-in cuts the transcript there). Over RTP we are the one
 * who plays: a mark is reached when the packet holding the last byte queued before it is taken for
 * sending, and a mark queued with nothing before it is reached at the next packet time (never inside
 * the call that queued it, so the runtime sees the same order of events as with a carrier).
 *
 * A packet time that finds less than a packet of audio (the end of a reply, or audio arriving slower
 * than it plays) sends what there is, padded with the codec's silence: holding it back would delay
 * the mark, and the far end plays a whole packet anyway. It is pure; the pacer pulls from it.
 */
export interface SendQueueFrame {
  /** One packet's audio, or null when nothing is queued. */
  audio: Uint8Array | null;
  /** Marks reached by this packet, in the order they were queued. */
  marks: string[];
}

export class SendQueue {
  readonly #silence: Uint8Array;
  readonly #chunks: Uint8Array[] = [];
  /** How far into the first chunk has been taken. */
  #offset = 0;
  /** Bytes ever queued and ever taken (or dropped): a mark sits at a queued position. */
  #queued = 0;
  #taken = 0;
  readonly #marks: { name: string; at: number }[] = [];

  /** `silence`: one packet of the codec's silence (its length is the packet's). */
  constructor(silence: Uint8Array) {
    if (silence.length === 0) throw new RangeError('a packet holds at least one byte');
    this.#silence = silence;
  }

  push(audio: Uint8Array): void {
    if (audio.length === 0) return;
    // A copy: the caller may reuse its buffer once the call returns.
    this.#chunks.push(Uint8Array.from(audio));
    this.#queued += audio.length;
  }

  mark(name: string): void {
    this.#marks.push({ name, at: this.#queued });
  }

  /** Drops the queued audio; returns every pending mark, in order (they are reached at once). */
  clear(): string[] {
    this.#chunks.length = 0;
    this.#offset = 0;
    this.#taken = this.#queued;
    return this.#marks.splice(0).map((mark) => mark.name);
  }

  /** The next packet's audio and the marks it reaches. */
  next(): SendQueueFrame {
    const audio = this.#queued > this.#taken ? this.#take() : null;
    let reached = 0;
    while (reached < this.#marks.length && this.#marks[reached]!.at <= this.#taken) reached += 1;
    return { audio, marks: this.#marks.splice(0, reached).map((mark) => mark.name) };
  }

  /** Bytes queued and not yet taken. */
  get queuedBytes(): number {
    return this.#queued - this.#taken;
  }

  get pendingMarks(): number {
    return this.#marks.length;
  }

  #take(): Uint8Array {
    const packet = Uint8Array.from(this.#silence);
    let filled = 0;
    while (filled < packet.length && this.#chunks.length > 0) {
      const chunk = this.#chunks[0]!;
      const count = Math.min(packet.length - filled, chunk.length - this.#offset);
      packet.set(chunk.subarray(this.#offset, this.#offset + count), filled);
      filled += count;
      this.#offset += count;
      if (this.#offset === chunk.length) {
        this.#chunks.shift();
        this.#offset = 0;
      }
    }
    this.#taken += filled;
    return packet;
  }
}

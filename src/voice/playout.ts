/**
 * The assistant's audio on its way to the caller. The carrier plays what it is sent in order and
 * echoes a mark when the audio before it has played, so the playout sends audio in slices of
 * `markEveryMs`, each followed by a mark, and keeps at most `aheadMs` of unplayed audio at the carrier:
 * enough to ride out a late packet, little enough that a pause (caller speech) silences the assistant
 * within that time and a clear drops little. From the marks it knows, within a slice, how much of each
 * utterance the caller has heard — which is what the conversation keeps when the caller interrupts.
 *
 * One utterance plays at a time (an answer, a greeting, an idle prompt); `begin` starts the next.
 * `pause` stops sending (what the carrier holds still plays), `resume` goes on, `clear` drops
 * everything unplayed — ours and the carrier's — and says how much of the utterance was heard.
 */
import { type AudioFormat, bytesFor, durationMs } from './audio.js';
import type { MediaSender } from './transport.js';

export interface PlayoutOptions {
  /** Most unplayed audio held at the carrier (ms). */
  aheadMs: number;
  /** Audio between two marks (ms). */
  markEveryMs: number;
}

export const DEFAULT_PLAYOUT: PlayoutOptions = { aheadMs: 500, markEveryMs: 100 };

export interface PlayoutListener {
  /** The utterance's first audio went to the carrier. */
  audible(utteranceId: number, at: number): void;
  /** The carrier played the utterance's first slice. */
  firstPlayed(utteranceId: number, at: number): void;
  /** Everything of a finished utterance has played. */
  played(utteranceId: number, at: number): void;
}

interface Utterance {
  id: number;
  queue: Uint8Array[];
  queuedBytes: number;
  sentBytes: number;
  /** Bytes the carrier has confirmed played (by marks) and when the last confirmation came. */
  confirmedBytes: number;
  confirmedAt: number | undefined;
  finished: boolean;
  firstPlayed: boolean;
  /** When its first slice went out. */
  startedAt: number | undefined;
}

interface PendingMark {
  utteranceId: number;
  /** The utterance's sent bytes when the mark was sent. */
  atBytes: number;
}

export class Playout {
  #current: Utterance | undefined;
  #paused = false;
  /** Marks sent and not yet echoed, by name; a clear forgets them (the carrier echoes them unplayed). */
  #marks = new Map<string, PendingMark>();
  #markSeq = 0;
  #generation = 0;
  readonly #sliceBytes: number;
  readonly #aheadBytes: number;

  constructor(
    private readonly send: MediaSender,
    private readonly format: AudioFormat,
    private readonly listener: PlayoutListener,
    private readonly clock: () => number,
    options: PlayoutOptions = DEFAULT_PLAYOUT,
  ) {
    this.#sliceBytes = bytesFor(format, options.markEveryMs);
    this.#aheadBytes = bytesFor(format, options.aheadMs);
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Starts utterance `id`; an unfinished previous one is cleared first. */
  begin(id: number): void {
    if (this.#current && !this.#isDone(this.#current)) this.clear();
    this.#current = {
      id,
      queue: [],
      queuedBytes: 0,
      sentBytes: 0,
      confirmedBytes: 0,
      confirmedAt: undefined,
      finished: false,
      firstPlayed: false,
      startedAt: undefined,
    };
  }

  enqueue(id: number, audio: Uint8Array): void {
    const current = this.#current;
    if (current?.id !== id || current.finished || audio.length === 0) return;
    current.queue.push(audio);
    current.queuedBytes += audio.length;
    this.#pump();
  }

  /** No more audio for `id`: `played` follows once the carrier has played it all. */
  finish(id: number): void {
    const current = this.#current;
    if (current?.id !== id) return;
    current.finished = true;
    this.#pump();
    if (this.#isDone(current)) this.listener.played(id, this.clock());
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#pump();
  }

  /**
   * Drops all unplayed audio (ours, and the carrier's with a `clear`) and ends the utterance.
   * Returns how many milliseconds of it the caller heard.
   */
  clear(): number {
    const current = this.#current;
    this.#paused = false;
    if (!current) return 0;
    const heard = this.heardMs();
    // Sent even when the carrier seems to have played everything: a mark may still be on its way, and
    // the clear is what tells the carrier (and the metrics) the assistant was cut off.
    if (current.sentBytes > 0) this.send.clear();
    this.#marks.clear();
    this.#generation += 1;
    this.#current = undefined;
    return heard;
  }

  /** How much of the current utterance has played, estimated between marks from the clock. */
  heardMs(): number {
    const current = this.#current;
    if (!current) return 0;
    const confirmed = durationMs(this.format, current.confirmedBytes);
    const sent = durationMs(this.format, current.sentBytes);
    // Nothing confirmed yet: the first slice started playing about when it was sent.
    if (current.confirmedAt === undefined)
      return current.startedAt === undefined ? 0 : Math.min(sent, this.clock() - current.startedAt);
    return Math.min(sent, confirmed + (this.#paused ? 0 : this.clock() - current.confirmedAt));
  }

  /** A mark came back from the carrier. */
  onMark(name: string): void {
    const mark = this.#marks.get(name);
    if (!mark) return;
    this.#marks.delete(name);
    const current = this.#current;
    if (current?.id !== mark.utteranceId) return;
    const at = this.clock();
    current.confirmedBytes = Math.max(current.confirmedBytes, mark.atBytes);
    current.confirmedAt = at;
    if (!current.firstPlayed) {
      current.firstPlayed = true;
      this.listener.firstPlayed(current.id, at);
    }
    this.#pump();
    if (this.#isDone(current)) this.listener.played(current.id, at);
  }

  #isDone(utterance: Utterance): boolean {
    return (
      utterance.finished && utterance.queuedBytes === 0 && utterance.confirmedBytes >= utterance.sentBytes
    );
  }

  #pump(): void {
    const current = this.#current;
    if (!current || this.#paused) return;
    while (current.queuedBytes > 0 && current.sentBytes - current.confirmedBytes < this.#aheadBytes) {
      // A short tail is sent as it is only when no more audio will come.
      if (current.queuedBytes < this.#sliceBytes && !current.finished) break;
      const slice = this.#take(current, this.#sliceBytes);
      if (current.sentBytes === 0) {
        current.startedAt = this.clock();
        this.listener.audible(current.id, current.startedAt);
      }
      this.send.media(slice);
      current.sentBytes += slice.length;
      const name = `${this.#generation}.${++this.#markSeq}`;
      this.#marks.set(name, { utteranceId: current.id, atBytes: current.sentBytes });
      this.send.mark(name);
    }
  }

  #take(utterance: Utterance, bytes: number): Uint8Array {
    const size = Math.min(bytes, utterance.queuedBytes);
    const out = new Uint8Array(size);
    let filled = 0;
    while (filled < size) {
      const head = utterance.queue[0]!;
      const part = Math.min(head.length, size - filled);
      out.set(head.subarray(0, part), filled);
      filled += part;
      if (part === head.length) utterance.queue.shift();
      else utterance.queue[0] = head.subarray(part);
    }
    utterance.queuedBytes -= size;
    return out;
  }
}

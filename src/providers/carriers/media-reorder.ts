/**
 * Puts a stream's numbered messages back in the order the carrier sent them. carrier_b says that its
 * media frames may arrive out of order and numbers every message (`sequence_number`) so that they can
 * be put back; its wire (carrier-b-media.ts) holds one of these per stream.
 *
 * A message that arrives ahead of its turn is held until the ones before it come. Holding is bounded:
 * once more than `maxHeld` messages wait behind a gap, the missing numbers are given up on (a lost
 * frame must not stall the caller's audio) and the oldest held goes on. One that arrives after its
 * number was given up on, or a repeat, is dropped: hearing it late, out of place, is worse than not
 * hearing 20 ms. Memory is at most `maxHeld + 1` messages, whatever the peer sends.
 */

/** Messages held behind a gap before it is given up on: 5 frames, 100 ms of the caller's audio. */
export const DEFAULT_MAX_HELD = 5;

export class SequenceReorder<T> {
  /** The number due next; undefined until the first numbered message sets it. */
  #next: number | undefined;
  readonly #held = new Map<number, T>();
  /** Messages dropped as late or repeated, and numbers given up on, for the curious. */
  dropped = 0;
  skipped = 0;

  constructor(private readonly maxHeld = DEFAULT_MAX_HELD) {}

  /** The numbers after `sequence` are due from now on (the stream's `start` carried it). */
  begin(sequence: number): void {
    this.#next = sequence + 1;
    this.#held.clear();
  }

  /** Takes one numbered message; returns those now due, in order (none while it waits behind a gap). */
  push(sequence: number, item: T): T[] {
    this.#next ??= sequence;
    if (sequence < this.#next || this.#held.has(sequence)) {
      this.dropped += 1;
      return [];
    }
    this.#held.set(sequence, item);
    const due = this.#release();
    while (this.#held.size > this.maxHeld) {
      const oldest = Math.min(...this.#held.keys());
      this.skipped += oldest - this.#next;
      this.#next = oldest;
      due.push(...this.#release());
    }
    return due;
  }

  /** Everything still held, in order, whatever the gaps (the stream is ending). */
  flush(): T[] {
    const numbers = [...this.#held.keys()].sort((a, b) => a - b);
    const items = numbers.map((number) => this.#held.get(number)!);
    this.#held.clear();
    if (numbers.length > 0) this.#next = numbers.at(-1)! + 1;
    return items;
  }

  /** How many messages wait now. */
  get heldCount(): number {
    return this.#held.size;
  }

  #release(): T[] {
    const due: T[] = [];
    while (this.#next !== undefined && this.#held.has(this.#next)) {
      due.push(this.#held.get(this.#next)!);
      this.#held.delete(this.#next);
      this.#next += 1;
    }
    return due;
  }
}

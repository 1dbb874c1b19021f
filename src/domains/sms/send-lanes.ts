/**
 * This process's outgoing sends of each number, one lane per number: a message leaves at its slot
 * (from the number's turn, drain-store.ts) but never less than 1 / rate after the previous one of
 * the number left this process, and never before it — whichever batch each came in. So a stall of the
 * process (a long garbage collection, a busy event loop) delays the sends behind it instead of
 * letting them go all at once, and two batches claimed one after the other cannot overtake each
 * other. A lane that runs late tells the next claim (`freeInMs`), which then plans its slots from
 * when the lane will be free: the delay is not carried into the batches after it.
 *
 * When another process claims the number's messages too, a message that could only leave well
 * after its slot — more than half a gap (and 10 ms) late — takes a fresh slot from the number's
 * turn first (`retake`): that process may be sending the number's next messages on time, and a late
 * one would reach the carrier right beside them. Alone, a process needs no such thing: its lane
 * keeps its sends apart, and a fresh slot (behind everything claimed) would only hold the lane up.
 */

/** One number's lane; times are this process's clock (performance.now). */
interface Lane {
  /** When the number's last message left this process (performance.now), or -Infinity. */
  lastStart: number;
  /** How far apart the number's sends must leave (1 / its rate), ms. */
  spacingMs: number;
  /** The messages queued in the lane and not yet left, in order, with their slots. */
  pending: Array<{ slot: number }>;
  /** The lane's last step: the next message waits for it. */
  tail: Promise<void>;
}

/** Lanes kept while they are used; past this many, idle ones are dropped. */
const MAX_IDLE_LANES = 1_000;
/** Fresh slots a message takes at most; a process that stays this late sends it late. */
const MAX_RETAKES = 3;

/** How late after its slot a message may still leave: half a gap and 10 ms, at most a gap. */
export function lateToleranceMs(gapMs: number): number {
  return Math.min(gapMs, gapMs / 2 + 10);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class SendLanes {
  readonly #lanes = new Map<number, Lane>();

  /**
   * Milliseconds from now until a new message of the number could leave this process — after the
   * messages waiting in its lane, each at its slot or 1 / rate after the one before; undefined when
   * the lane is free now (nothing waits, and the last one left longer ago than that).
   */
  freeInMs(numberId: number): number | undefined {
    const lane = this.#lanes.get(numberId);
    if (!lane) return undefined;
    let free = lane.lastStart + lane.spacingMs;
    for (const { slot } of lane.pending) free = Math.max(slot, free) + lane.spacingMs;
    const inMs = free - performance.now();
    return inMs > 0 ? inMs : undefined;
  }

  /**
   * Queues `send` in the number's lane for the slot `slotAt` (performance.now time), at least
   * `pace.spacingMs` (1 / the rate) after the lane's previous message — slots are `pace.gapMs` apart,
   * a little more, so a lane that fell behind catches up, never faster than the rate; resolves with
   * what `send` returned once it has left and answered. `retake`, given when another process claims
   * the number's messages too, takes a fresh slot of the number and answers in how many milliseconds
   * it comes (undefined: none could be taken; the message then leaves as it is).
   */
  enqueue<T>(
    numberId: number,
    slotAt: number,
    pace: { gapMs: number; spacingMs: number },
    send: () => Promise<T>,
    retake?: () => Promise<number | undefined>,
  ): Promise<T> {
    const lane = this.#lane(numberId);
    lane.spacingMs = pace.spacingMs;
    const queued = { slot: slotAt };
    lane.pending.push(queued);
    const left = lane.tail.then(async () => {
      for (let retakes = 0; ; ) {
        const readyAt = Math.max(queued.slot, lane.lastStart + lane.spacingMs);
        const now = performance.now();
        if (readyAt > now) {
          await sleep(readyAt - now);
          continue;
        }
        if (!retake || now - queued.slot <= lateToleranceMs(pace.gapMs) || retakes >= MAX_RETAKES) break;
        retakes += 1;
        const inMs = await retake();
        if (inMs === undefined) break;
        queued.slot = performance.now() + inMs;
      }
      lane.lastStart = performance.now();
      lane.pending.shift();
      return { answer: send() };
    });
    lane.tail = left.then(
      () => undefined,
      () => undefined,
    );
    return left.then(({ answer }) => answer);
  }

  #lane(numberId: number): Lane {
    const existing = this.#lanes.get(numberId);
    if (existing) return existing;
    if (this.#lanes.size >= MAX_IDLE_LANES) this.#dropIdle();
    const lane: Lane = {
      lastStart: Number.NEGATIVE_INFINITY,
      spacingMs: 0,
      pending: [],
      tail: Promise.resolve(),
    };
    this.#lanes.set(numberId, lane);
    return lane;
  }

  /** Drops the lanes with nothing waiting whose last message left longer than 1 / rate ago. */
  #dropIdle(): void {
    const now = performance.now();
    for (const [numberId, lane] of this.#lanes) {
      if (lane.pending.length === 0 && lane.lastStart + lane.spacingMs < now) this.#lanes.delete(numberId);
    }
  }
}

/**
 * A clock and timers that run in a test's own time, for code that takes `PacerTimers`
 * (src/sip/rtp-pacer.ts): `runUntil` fires the timers in order of their due time, each as late as
 * `lateness()` says (a loaded event loop wakes late, never early), and moves the clock to it.
 */
import type { PacerTimers } from '../../src/sip/rtp-pacer.js';

interface Timer {
  id: number;
  at: number;
  callback: () => void;
}

export class FakeTimers implements PacerTimers {
  #now: number;
  #nextId = 1;
  #timers: Timer[] = [];

  constructor(
    start = 0,
    private readonly lateness: () => number = () => 0,
  ) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const timer = { id: this.#nextId++, at: this.#now + Math.max(0, ms), callback };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((timer) => timer.id !== handle);
  }

  /** Fires every timer due up to `untilMs`, then leaves the clock there. */
  runUntil(untilMs: number): void {
    for (;;) {
      const timer = this.#timers.reduce<Timer | undefined>(
        (soonest, t) => (!soonest || t.at < soonest.at ? t : soonest),
        undefined,
      );
      if (!timer || timer.at > untilMs) break;
      this.#timers = this.#timers.filter((t) => t !== timer);
      this.#now = Math.max(this.#now, timer.at + this.lateness());
      timer.callback();
    }
    this.#now = Math.max(this.#now, untilMs);
  }

  /** Moves the clock without firing anything (an event loop that is busy elsewhere). */
  advance(ms: number): void {
    this.#now += ms;
  }

  get pending(): number {
    return this.#timers.length;
  }
}

/**
 * One 20 ms clock for every simulated phone in the process. The voice benchmark runs a hundred and
 * more phones at once; a timer per phone would wake the event loop a hundred times per frame, one
 * shared clock wakes it once and lets every phone send its frame and advance its playout.
 *
 * The clock is drift-free: tick k is scheduled for `epoch + k × 20 ms` on the monotonic clock, never
 * "20 ms after the previous one", so late wake-ups do not accumulate. A tick that comes late is not
 * repeated: each member catches up by itself from its own schedule (a phone sends every frame that is
 * due). The clock runs only while it has members.
 */
import { FRAME_MS } from '../voice/audio.js';

/** Something the clock wakes every frame, with `performance.now()`. */
export interface FrameClockMember {
  tick(nowMs: number): void;
}

export class FrameClock {
  readonly #members = new Set<FrameClockMember>();
  #epoch = 0;
  #ticks = 0;
  #timer: NodeJS.Timeout | undefined;

  /** Adds a member; answers when the next tick is due (`performance.now()`), to align frames on. */
  join(member: FrameClockMember): number {
    this.#members.add(member);
    if (!this.#timer) {
      this.#epoch = performance.now();
      this.#ticks = 0;
      this.#schedule();
    }
    return this.#epoch + this.#ticks * FRAME_MS;
  }

  leave(member: FrameClockMember): void {
    this.#members.delete(member);
    if (this.#members.size === 0 && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  get size(): number {
    return this.#members.size;
  }

  #schedule(): void {
    // The next tick on the grid that is still ahead: a stalled event loop skips ticks, not the grid.
    const now = performance.now();
    this.#ticks = Math.max(this.#ticks + 1, Math.floor((now - this.#epoch) / FRAME_MS) + 1);
    const at = this.#epoch + this.#ticks * FRAME_MS;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, at - now));
  }

  #tick(): void {
    if (this.#members.size === 0) {
      this.#timer = undefined;
      return;
    }
    // Scheduled before the members run, so one that throws cannot stop the clock for the others.
    this.#schedule();
    const now = performance.now();
    for (const member of [...this.#members]) member.tick(now);
  }
}

/** The clock the phones of this process share. */
export const sharedFrameClock = new FrameClock();

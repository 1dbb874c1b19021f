/**
 * The call's keypad: the digits the caller presses and the tones the assistant sends. A digit goes
 * to whoever waits for it (`collectDigits`, the collect_digits tool); otherwise the session gives it
 * to the turn manager as caller input. Tones go out through the carrier's own DTMF command where it
 * has one; where it has none (carrier_a's media stream cannot carry a key) they are played in-band:
 * synthesized in the stream's format (dtmf-tones.ts) and played after what the assistant is saying.
 */
import type { AudioFormat } from './audio.js';
import { dtmfAudio } from './dtmf-tones.js';
import type { SessionSpec } from './session-spec.js';
import type { CallControls } from './tools/types.js';
import type { Utterance } from './utterance.js';

const DIGITS = /^[0-9*#A-Dw]+$/;

interface Collector {
  options: { maxDigits: number; terminator?: string; timeoutMs: number };
  digits: string;
  timer: NodeJS.Timeout;
  resolve(value: string | null): void;
}

export interface KeypadHost {
  /** The carrier's DTMF command (false: the carrier has none). */
  sendDigits(digits: string): Promise<boolean>;
  /** For in-band tones: the stream's format, and a way to play audio where the assistant speaks. */
  inBand?: {
    format: AudioFormat;
    /** Plays after what is being said; false when nothing is being said (no answer under way). */
    play(audio: Uint8Array): Promise<boolean>;
    /** Records an event on the call (`call.digits_sent`). */
    record(type: string, data: Record<string, unknown>): void;
  };
}

export class Keypad implements CallControls {
  #collector: Collector | undefined;

  constructor(private readonly host: KeypadHost) {}

  /** A digit the caller pressed: true when a collector took it. */
  press(digit: string): boolean {
    const collector = this.#collector;
    if (!collector) return false;
    if (collector.options.terminator && digit === collector.options.terminator) {
      this.#settle(collector.digits);
      return true;
    }
    collector.digits += digit;
    if (collector.digits.length >= collector.options.maxDigits) this.#settle(collector.digits);
    else this.#arm(collector);
    return true;
  }

  collectDigits(options: Collector['options'], signal: AbortSignal): Promise<string | null> {
    this.#settle(null);
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(null);
      const collector: Collector = { options, digits: '', timer: setTimeout(() => {}, 0), resolve };
      this.#collector = collector;
      this.#arm(collector);
      signal.addEventListener('abort', () => this.#collector === collector && this.#settle(null), {
        once: true,
      });
    });
  }

  async sendDigits(digits: string, signal: AbortSignal): Promise<void> {
    if (!DIGITS.test(digits)) throw new Error(`not DTMF digits: ${digits}`);
    if (signal.aborted) return;
    if (await this.host.sendDigits(digits)) return;
    const inBand = this.host.inBand;
    if (!inBand) throw new Error('this carrier cannot send DTMF tones');
    if (!(await inBand.play(dtmfAudio(digits, inBand.format))))
      throw new Error('no answer is under way to play the tones in');
    if (!signal.aborted) inBand.record('call.digits_sent', { digits, via: 'in_band' });
  }

  close(): void {
    this.#settle(null);
  }

  /** The wait for the next key starts again (the time-out counts from the last key). */
  #arm(collector: Collector): void {
    clearTimeout(collector.timer);
    collector.timer = setTimeout(() => this.#settle(collector.digits || null), collector.options.timeoutMs);
  }

  #settle(value: string | null): void {
    const collector = this.#collector;
    if (!collector) return;
    this.#collector = undefined;
    clearTimeout(collector.timer);
    collector.resolve(value);
  }
}

/**
 * A session's keypad: the carrier's command, else tones played in the lane of the utterance under
 * way (`current`), after its words so far; `record` writes in the session's record order.
 */
export function sessionKeypad(
  spec: Pick<SessionSpec, 'recorder' | 'format'>,
  current: () => Utterance | undefined,
  record: (type: string, data: Record<string, unknown>) => void,
): Keypad {
  return new Keypad({
    sendDigits: (digits) => spec.recorder.sendDigits(digits),
    inBand: {
      format: spec.format,
      play: async (audio) => {
        const utterance = current();
        if (!utterance || utterance.finished) return false;
        await utterance.lane.play(audio);
        return true;
      },
      record,
    },
  });
}

/**
 * How a SIP call is transferred (`transfer_call`): first the way the trunk does it itself — a REFER,
 * then its NOTIFY saying how the new call went (RFC 3515, RFC 5589 §6) — and, when the trunk will not
 * take a REFER at all (it does not implement or allow the method: `REFER_NOT_TAKEN`), by calling the
 * target through the trunk and bridging the two legs (`bridge-leg.ts`), the caller hearing ringback
 * meanwhile. A REFER the trunk took but whose new call failed (busy, no answer) is not tried again as a
 * bridge: the target would be just as busy.
 */
import { type AudioFormat, encodeAudio } from '../audio.js';

/** How long a transfer waits for the trunk's NOTIFY saying how the new call went. */
const TRANSFER_NOTIFY_WAIT_MS = 5000;

/**
 * REFER refusals that mean "not this way" rather than "not this target": 403 (a trunk that forbids
 * REFER, as many do for calls to the public network), 405 Method Not Allowed, 420 Bad Extension,
 * 489 Bad Event (no refer event package), 501 Not Implemented and 603 Decline.
 */
export const REFER_NOT_TAKEN: ReadonlySet<number> = new Set([403, 405, 420, 489, 501, 603]);

/**
 * REFER, then wait for the NOTIFY whose sipfrag is final: 200 means the far end reached the target
 * and our leg may go; a failure keeps the call with us. A trunk that accepted the REFER but never says
 * how it went counts as done after a few seconds.
 */
export async function referAndWait(
  call: { refer(target: string): Promise<number>; onReferProgress?: (status: number) => void },
  target: string,
): Promise<number> {
  let settle: (status: number) => void = () => {};
  const notified = new Promise<number>((resolve) => {
    settle = resolve;
  });
  call.onReferProgress = (status) => {
    if (status >= 200) settle(status);
  };
  const status = await call.refer(target);
  if (status < 200 || status >= 300) return status;
  const timer = setTimeout(() => settle(status), TRANSFER_NOTIFY_WAIT_MS);
  const final = await notified;
  clearTimeout(timer);
  return final;
}

/** The ringback cadence (North American: 440 + 480 Hz, two seconds on, four off). */
export const RINGBACK = { onMs: 2000, offMs: 4000, frequencies: [440, 480], amplitude: 0.08 } as const;

/** One ringback cycle (tone, then silence) in `format`: what the caller hears while the target rings. */
export function ringbackCycle(format: AudioFormat): Uint8Array {
  const rate = format.sampleRate;
  const on = Math.round((RINGBACK.onMs / 1000) * rate);
  const samples = new Int16Array(on + Math.round((RINGBACK.offMs / 1000) * rate));
  for (let i = 0; i < on; i++) {
    let value = 0;
    for (const frequency of RINGBACK.frequencies) value += Math.sin((2 * Math.PI * frequency * i) / rate);
    samples[i] = Math.round(value * RINGBACK.amplitude * 32767);
  }
  return encodeAudio(format, samples);
}

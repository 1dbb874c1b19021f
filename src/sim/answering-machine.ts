/**
 * Answering machines, as the carrier simulators play them. A callee that is a machine is a phone
 * script (`answeringMachine`): it plays its greeting the moment the call connects, then (after a
 * pause) a beep — a steady tone — then records (listens) until the call ends. The simulators'
 * answering-machine detection (`detectMachine`) hears what real carriers hear: who answered is the
 * call outcome's `answeredBy`, and a machine's greeting has ended once the phone has played its beep
 * (an utterance named `beep`) or fallen silent after its greeting (one named `greeting`). A phone
 * whose outcome names nobody gets no verdict, as when a carrier's detection cannot tell.
 */
import { pcm16ToUlaw } from '../voice/audio.js';
import type { PhoneScript } from './carrier-a-phone.js';
import type { CallOutcome } from './carrier-sim.js';
import type { SimulatedPhone } from './phone.js';

/** The beep: a 1 kHz tone of half a second, as voicemail systems sound theirs. */
export const BEEP_HZ = 1000;
export const BEEP_MS = 500;
/** Silence after a greeting without a beep before a carrier calls it ended. */
export const GREETING_SILENCE_MS = 1500;

/** A steady tone in μ-law at 8 kHz (what the phone sends). */
export function tone(ms = BEEP_MS, hz = BEEP_HZ, amplitude = 8000): Uint8Array {
  const samples = new Int16Array(Math.round((8000 * ms) / 1000));
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 8000));
  return pcm16ToUlaw(samples);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A machine: says `greeting` (a fixture's name, or μ-law audio) at once, waits `pauseMs`, sounds
 * its beep (none with `beep: false`), then records until the platform ends the call (at most
 * `recordMs`, then it hangs up as machines do).
 */
export function answeringMachine(options: {
  greeting: string | Uint8Array;
  pauseMs?: number;
  beep?: boolean;
  recordMs?: number;
}): PhoneScript {
  return async (phone) => {
    await phone.say(options.greeting, 'greeting');
    await sleep(options.pauseMs ?? 300);
    if (options.beep !== false) await phone.say(tone(), 'beep');
    await phone.waitForClose({ timeoutMs: options.recordMs ?? 30_000 }).catch(() => undefined);
  };
}

/** Who the carrier's detection finds: the outcome's `answeredBy`; on a call without a phone, a person by default. */
export function detectedAnswer(outcome: CallOutcome, phone: boolean): 'human' | 'machine' | undefined {
  if (outcome.status !== 'completed') return undefined;
  return outcome.answeredBy ?? (phone ? undefined : 'human');
}

/**
 * How the machine's greeting ended, as a carrier listening to `phone` hears it: `beep` once the beep
 * has played, `other` once the greeting is followed by `GREETING_SILENCE_MS` of silence; undefined
 * if the call ended first. Without a phone the greeting is over at once (with a beep).
 */
export async function greetingEnd(phone: SimulatedPhone | undefined): Promise<'beep' | 'other' | undefined> {
  if (!phone) return 'beep';
  for (;;) {
    const said = phone.utterances;
    if (said.some((utterance) => utterance.name === 'beep')) return 'beep';
    const greeting = said.find((utterance) => utterance.name === 'greeting');
    if (greeting && phone.now() - greeting.endMs >= GREETING_SILENCE_MS) return 'other';
    if (phone.close) return undefined;
    await sleep(20);
  }
}

/**
 * A carrier's asynchronous detection on an answered call: `report` is called with who answered as
 * soon as the carrier knows (`early`: a machine too, before its greeting ends), and for a machine
 * once its greeting has ended (`greeting`: the ends the carrier reports).
 */
export async function detectMachine(
  outcome: CallOutcome,
  phone: SimulatedPhone | undefined,
  report: (verdict: {
    answeredBy: 'human' | 'machine';
    greetingEnded?: 'beep' | 'other';
  }) => Promise<unknown>,
  options: { early: boolean; greeting: ReadonlyArray<'beep' | 'other'> },
): Promise<void> {
  const answeredBy = detectedAnswer(outcome, phone !== undefined);
  if (!answeredBy) return;
  if (answeredBy === 'human' || options.early) await report({ answeredBy });
  if (answeredBy === 'human' || options.greeting.length === 0) return;
  const ended = await greetingEnd(phone);
  if (ended && options.greeting.includes(ended)) await report({ answeredBy, greetingEnded: ended });
}

/** carrier_a's `AnsweredBy` for a verdict (`human`, `machine_start`, `machine_end_beep`, `machine_end_silence`). */
export function carrierAAnsweredBy(verdict: {
  answeredBy: 'human' | 'machine';
  greetingEnded?: 'beep' | 'other';
}) {
  if (verdict.answeredBy === 'human') return 'human';
  return verdict.greetingEnded
    ? `machine_end_${verdict.greetingEnded === 'beep' ? 'beep' : 'silence'}`
    : 'machine_start';
}

/** carrier_a's `AnsweredBy` of a finished call, when its detection could tell. */
export function carrierAAnswer(outcome: CallOutcome, phone: boolean): string | undefined {
  const answeredBy = detectedAnswer(outcome, phone);
  return answeredBy && carrierAAnsweredBy({ answeredBy });
}

/**
 * carrier_a's asynchronous detection as the dial (`form`) asked for it: with `AsyncAmd`, its verdict
 * to `AsyncAmdStatusCallback` — with `DetectMessageEnd` one (a person, or a machine once its greeting
 * has ended), with `Enable` who answered at once.
 */
export async function carrierADetection(
  form: Record<string, string | string[]>,
  outcome: CallOutcome,
  phone: SimulatedPhone | undefined,
  post: (url: string, answeredBy: string) => Promise<unknown>,
): Promise<void> {
  const url = form.AsyncAmdStatusCallback;
  if (form.AsyncAmd !== 'true' || typeof url !== 'string') return;
  const messageEnd = form.MachineDetection === 'DetectMessageEnd';
  await detectMachine(outcome, phone, (verdict) => post(url, carrierAAnsweredBy(verdict)), {
    early: !messageEnd,
    greeting: messageEnd ? ['beep', 'other'] : [],
  });
}

/**
 * carrier_c's advanced machine detection as the call (`request`) asked for it (`mode: detect_beep`):
 * an event `status: human|machine`, then for a machine `status: machine, sub_state: beep_start`.
 */
export function carrierCDetection(
  request: Record<string, unknown>,
  outcome: CallOutcome,
  phone: SimulatedPhone | undefined,
  event: (status: string, extra: Record<string, unknown>) => Promise<unknown>,
): Promise<void> | undefined {
  const settings = request.advanced_machine_detection as Record<string, unknown> | undefined;
  if (settings?.mode !== 'detect_beep') return undefined;
  return detectMachine(
    outcome,
    phone,
    (found) => event(found.answeredBy, found.greetingEnded ? { sub_state: 'beep_start' } : {}),
    { early: true, greeting: ['beep'] },
  );
}

/**
 * The caller of the demo and of `npm run sim`'s phone: a short conversation in recorded utterances
 * (test/fixtures/voice). It waits for the greeting, asks for an appointment, interrupts the answer a
 * second into it, agrees to a time, and says goodbye. The scripted speech-to-text simulator hears the
 * same utterances in the same order (`DEMO_TRANSCRIPT`), so the words match what the phone says.
 */
import { readFileSync } from 'node:fs';
import type { SimulatedPhone } from './phone.js';
import { DEFAULT_FIXTURES } from './phone-voice.js';

/** The utterances the demo caller says, in order. */
export const DEMO_UTTERANCES = ['book-appointment', 'interrupt', 'three-oclock', 'goodbye'] as const;

/** What each utterance says (test/fixtures/voice/utterances.json). */
export function utteranceTexts(dir = DEFAULT_FIXTURES): Record<string, string> {
  return JSON.parse(readFileSync(`${dir}/utterances.json`, 'utf8')) as Record<string, string>;
}

/** The words of the demo caller's utterances, for the speech-to-text simulator's script. */
export function demoTranscript(): string[] {
  const texts = utteranceTexts();
  return DEMO_UTTERANCES.map((name) => texts[name] ?? name);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long the caller lets the assistant speak before cutting in. */
export const INTERRUPT_AFTER_MS = 1000;

/** The caller hears the assistant out: its speech starts, then `silenceMs` pass without it. */
export async function hearToEnd(
  phone: SimulatedPhone,
  options: { silenceMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  await phone.waitForSpeech({ timeoutMs });
  await phone.waitForSilence({ ms: options.silenceMs ?? 700, timeoutMs });
}

/**
 * The first half of the demo, which the voice benchmark runs alone: the greeting heard to its end, a
 * question, the answer cut into a second after it starts, the next answer heard to its end.
 */
export async function askAndInterrupt(phone: SimulatedPhone): Promise<void> {
  await hearToEnd(phone);
  const asked = await phone.say('book-appointment');
  await phone.waitForReplyTo(asked, { timeoutMs: 30_000 });
  await sleep(INTERRUPT_AFTER_MS);
  await phone.say('interrupt');
  await hearToEnd(phone);
}

export async function demoCaller(phone: SimulatedPhone): Promise<void> {
  await askAndInterrupt(phone);
  await phone.say('three-oclock');
  await hearToEnd(phone);
  await phone.say('goodbye');
  await hearToEnd(phone);
}

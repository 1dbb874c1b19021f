/**
 * Every provider family in a live call (issue 18): calls through each carrier (carrier_a's JSON μ-law
 * stream, carrier_b's with its frames reordered, carrier_c's binary 16-bit PCM at 16 kHz), stt_a,
 * each language model dialect (the OpenAI-compatible ids and llm_b's messages API) and each voice
 * (tts_a…tts_d) — pairwise: every carrier meets every voice, and each of them both dialects. Each
 * call holds a two-turn conversation with a barge-in, end to end through the simulators: the greeting
 * heard, a question answered at length, the answer interrupted a second in, the next answer heard.
 * The calls run at the same time (they are real-time).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CarrierId, LlmProvider, TtsProvider } from '../src/providers/ids.js';
import { askAndInterrupt, utteranceTexts } from '../src/sim/demo-caller.js';
import { BOOK, LONG_ANSWER, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { carrierB } from './support/voice-rig-carrier-b.js';
import { carrierC } from './support/voice-rig-carrier-c.js';
import { ttsB, ttsC, ttsD } from './support/voice-rig-vendors.js';

interface Combination {
  carrier: CarrierId;
  llm: LlmProvider;
  tts: TtsProvider;
}

/** Pairwise: each (carrier, voice) once, each carrier and each voice with both dialects. */
const MATRIX: Combination[] = [
  { carrier: 'carrier_a', tts: 'tts_a', llm: 'llm_a' },
  { carrier: 'carrier_a', tts: 'tts_b', llm: 'llm_b' },
  { carrier: 'carrier_a', tts: 'tts_c', llm: 'llm_c' },
  { carrier: 'carrier_a', tts: 'tts_d', llm: 'llm_b' },
  { carrier: 'carrier_b', tts: 'tts_a', llm: 'llm_b' },
  { carrier: 'carrier_b', tts: 'tts_b', llm: 'llm_d' },
  { carrier: 'carrier_b', tts: 'tts_c', llm: 'llm_b' },
  { carrier: 'carrier_b', tts: 'tts_d', llm: 'llm_e' },
  { carrier: 'carrier_c', tts: 'tts_a', llm: 'llm_e' },
  { carrier: 'carrier_c', tts: 'tts_b', llm: 'llm_b' },
  { carrier: 'carrier_c', tts: 'tts_c', llm: 'llm_a' },
  { carrier: 'carrier_c', tts: 'tts_d', llm: 'llm_b' },
];

const INTERRUPTION = utteranceTexts().interrupt!;
let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig({ carriers: [carrierB(), carrierC()], voices: [ttsB(), ttsC(), ttsD()] });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

describe('a call through every carrier, language model dialect and voice (pairwise)', () => {
  it('covers every carrier × voice pair, and each carrier and voice with both dialects', () => {
    const pairs = (a: keyof Combination, b: keyof Combination) =>
      new Set(MATRIX.map((row) => `${row[a]}|${row[b]}`));
    expect(pairs('carrier', 'tts').size).toBe(12);
    const dialect = (llm: LlmProvider) => (llm === 'llm_b' ? 'messages' : 'openai');
    for (const key of ['carrier', 'tts'] as const) {
      const seen = new Set(MATRIX.map((row) => `${row[key]}|${dialect(row.llm)}`));
      expect(seen.size).toBe(new Set(MATRIX.map((row) => row[key])).size * 2);
    }
    expect(new Set(MATRIX.map((row) => row.llm))).toEqual(
      new Set(['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e']),
    );
  });

  it('holds a two-turn conversation with a barge-in on each', async () => {
    const outcomes = await Promise.all(
      MATRIX.map(async (vendors) => ({
        vendors,
        outcome: await rig.call({
          vendors,
          heard: [BOOK, INTERRUPTION],
          script: askAndInterrupt,
          llm: [{ text: LONG_ANSWER }, { text: 'Sure, what is your question?' }],
        }),
      })),
    );
    for (const { vendors, outcome } of outcomes) {
      const label = `${vendors.carrier} × ${vendors.llm} × ${vendors.tts}`;
      const types = outcome.events.map((event) => event.type);
      expect(types, label).not.toContain('call.voice_unavailable');
      expect(types, label).not.toContain('call.vendor_fallback');
      expect(types, label).toContain('call.interrupted');
      expect(outcome.status, label).toBe('completed');
      const [greeting, first, second] = outcome.turns;
      expect(greeting, label).toMatchObject({ kind: 'greeting' });
      expect(first, label).toMatchObject({
        kind: 'reply',
        interrupted: true,
        user_text: BOOK,
        llm_provider: vendors.llm,
      });
      expect(LONG_ANSWER.slice(0, first!.assistant_text.length), label).toBe(first!.assistant_text);
      expect(second, label).toMatchObject({
        kind: 'reply',
        interrupted: false,
        user_text: INTERRUPTION,
        assistant_text: 'Sure, what is your question?',
      });
      // The caller heard the greeting, the start of the first answer and the whole second one.
      expect(outcome.phone.heardSegments.length, label).toBeGreaterThanOrEqual(3);
      expect(outcome.phone.clears.length, label).toBeGreaterThanOrEqual(1);
      expect(outcome.phone.errors, label).toEqual([]);
      // The model was asked in its own dialect (the calls ran together: this call's requests are its key's).
      const own = outcome.llmRequests.filter((request) => request.key === outcome.keys.llm);
      const paths = new Set(own.map((request) => request.path));
      expect([...paths], label).toEqual([vendors.llm === 'llm_b' ? '/v1/messages' : '/v1/chat/completions']);
    }
  }, 180_000);
});

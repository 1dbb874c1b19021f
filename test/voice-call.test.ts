/**
 * Live calls end to end: the platform places a call through the carrier_a simulator, a simulated
 * phone answers and speaks recorded utterances in real time, and the platform hears them through the
 * stt_a simulator, thinks with the language model simulator and speaks through the tts_a simulator.
 * Each test is one behaviour of runtime.md §4, checked on both sides: what the phone heard and when,
 * and what the platform recorded (turns with their timing, transcript, call events).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVoiceRig, type VoiceRig } from './support/voice-rig.js';

let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig();
}, 60_000);
afterAll(async () => {
  await rig.close();
});

const words = (fixture: string) => fixture;

describe('a live call', () => {
  it('greets at once, hears a turn, answers it, and records both with their timing', async () => {
    rig.llm.setScript('*', []);
    const outcome = await rig.call({
      heard: ['I would like to book an appointment for tomorrow'],
      assistant: { llm_settings: { welcome_message: 'Hello, this is the clinic.' } },
      script: async (phone) => {
        await phone.waitForSpeech();
        await phone.waitForSilence({ ms: 600 });
        await phone.say('book-appointment');
        await phone.waitForSpeech();
        await phone.waitForSilence({ ms: 600 });
      },
    });
    expect(outcome.phone.errors).toEqual([]);
    const [greeting, reply] = outcome.turns;
    expect(greeting).toMatchObject({
      position: 0,
      kind: 'greeting',
      assistant_text: 'Hello, this is the clinic.',
    });
    expect(reply).toMatchObject({
      position: 1,
      kind: 'reply',
      user_text: words('I would like to book an appointment for tomorrow'),
      assistant_text: 'You said: I would like to book an appointment for tomorrow. How else can I help?',
      interrupted: false,
      llm_provider: 'llm_a',
    });
    for (const figure of [
      'end_to_end_ms',
      'endpointing_ms',
      'llm_ttft_ms',
      'tts_ttfb_ms',
      'platform_ms',
    ] as const)
      expect(reply![figure], figure).toEqual(expect.any(Number));
    expect(reply!.endpointing_ms).toBeGreaterThanOrEqual(500);
    expect(outcome.transcript.map((s) => [s.speaker, s.text])).toEqual([
      ['assistant', 'Hello, this is the clinic.'],
      ['user', 'I would like to book an appointment for tomorrow'],
      ['assistant', 'You said: I would like to book an appointment for tomorrow. How else can I help?'],
    ]);
    // The phone heard two stretches of the assistant's voice: the greeting and the answer.
    expect(outcome.phone.heardSegments.length).toBe(2);
    expect(outcome.status).toBe('completed');
  }, 60_000);
});

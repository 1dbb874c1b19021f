/**
 * Live calls end to end: the platform places a call through the carrier_a simulator, a simulated
 * phone answers and speaks recorded utterances in real time, and the platform hears them through the
 * stt_a simulator, thinks with the language model simulator and speaks through the tts_a simulator.
 * Each test is one behaviour of runtime.md §4, checked on both sides: what the phone heard and when,
 * and what the platform recorded (turns with their timing, transcript, call events).
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, callTranscriptSegments } from '../src/db/schema/index.js';
import { waitFor } from './support/harness.js';
import {
  afterGreeting,
  askToBook,
  BOOK,
  hearAnswer,
  LONG_ANSWER,
  sleep,
  startVoiceRig,
  type VoiceRig,
} from './support/voice-rig.js';

let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig();
}, 60_000);
afterAll(async () => {
  await rig.close();
});

/** The transcript texts of the call the carrier knows as `callSid`, read from the database. */
async function transcriptOfCall(callSid: string): Promise<string[]> {
  const rows = await rig.t.database.db
    .select({ text: callTranscriptSegments.text })
    .from(callTranscriptSegments)
    .innerJoin(calls, eq(calls.id, callTranscriptSegments.callId))
    .where(eq(calls.callSid, callSid))
    .orderBy(asc(callTranscriptSegments.position));
  return rows.map((row) => row.text);
}

describe('a live call', () => {
  it('greets at once, hears a turn, answers it, and records both with their timing', async () => {
    let during: string[] = [];
    const outcome = await rig.call({
      heard: ['I would like to book an appointment for tomorrow'],
      assistant: { llm_settings: { welcome_message: 'Hello, this is the clinic.' } },
      script: async (phone) => {
        await phone.waitForSpeech();
        await phone.waitForSilence({ ms: 600 });
        const asked = await phone.say('book-appointment');
        await phone.waitForReplyTo(asked);
        await phone.waitForSilence({ ms: 600 });
        // While the call is still up, its transcript already holds what was said.
        during = await waitFor(async () => {
          const texts = await transcriptOfCall(phone.callSid);
          return texts.length === 3 ? texts : undefined;
        });
      },
    });
    expect(outcome.phone.errors).toEqual([]);
    expect(during).toEqual(outcome.transcript.map((segment) => segment.text));
    const [greeting, reply] = outcome.turns;
    expect(greeting).toMatchObject({
      position: 0,
      kind: 'greeting',
      assistant_text: 'Hello, this is the clinic.',
    });
    expect(reply).toMatchObject({
      position: 1,
      kind: 'reply',
      user_text: BOOK,
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

  it('waits for the longest pause when the vendor never says the words are final', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      // endpointing 0: no speech_final; utterance_end_ms 0: no UtteranceEnd.
      assistant: { stt_settings: { endpointing: { silence_threshold: 0 }, utterance_end_ms: 0 } },
      script: askToBook,
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.user_text).toBe(BOOK);
    expect(reply!.endpointing_ms).toBeGreaterThanOrEqual(3000);
  }, 60_000);

  it('stops at once when interrupted, and keeps in the context only what the caller heard', async () => {
    const outcome = await rig.call({
      heard: [BOOK, 'Wait, stop, I have a different question'],
      script: async (phone) => {
        await afterGreeting(phone);
        const asked = await phone.say('book-appointment');
        await phone.waitForReplyTo(asked);
        await sleep(1500);
        await phone.say('interrupt');
        await hearAnswer(phone);
      },
      llm: [{ text: LONG_ANSWER }, { text: 'Sure, what is your question?' }],
    });
    const [, first, second] = outcome.turns;
    expect(first).toMatchObject({ kind: 'reply', interrupted: true, user_text: BOOK });
    expect(first!.assistant_text.length).toBeGreaterThan(0);
    expect(LONG_ANSWER.startsWith(first!.assistant_text)).toBe(true);
    expect(first!.assistant_text.length).toBeLessThan(LONG_ANSWER.length / 2);
    expect(second).toMatchObject({ kind: 'reply', user_text: 'Wait, stop, I have a different question' });
    // The carrier was told to drop what it held.
    expect(outcome.phone.clears.length).toBeGreaterThanOrEqual(1);
    // The model's next request holds the answer as heard, not as written.
    const request = outcome.llmRequests[1]!;
    const assistant = request.messages.filter((m) => m.role === 'assistant');
    expect(assistant.at(-1)?.content).toBe(first!.assistant_text);
    expect(outcome.events.map((e) => e.type)).toContain('call.interrupted');
  }, 60_000);

  it('goes on speaking through a backchannel', async () => {
    const outcome = await rig.call({
      heard: [BOOK, 'uh-huh'],
      script: async (phone) => {
        await afterGreeting(phone);
        const asked = await phone.say('book-appointment');
        await phone.waitForReplyTo(asked);
        await sleep(1500);
        await phone.say('uh-huh');
        await hearAnswer(phone);
      },
      llm: [{ text: LONG_ANSWER }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply).toMatchObject({ interrupted: false, assistant_text: LONG_ANSWER });
    expect(outcome.turns.filter((turn) => turn.kind === 'reply')).toHaveLength(1);
    expect(outcome.phone.clears).toEqual([]);
    expect(outcome.transcript.map((segment) => segment.text)).toContain('uh-huh');
  }, 60_000);

  it('records what was heard when the caller hangs up mid-sentence', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      script: async (phone) => {
        await afterGreeting(phone);
        const asked = await phone.say('book-appointment');
        await phone.waitForReplyTo(asked);
        await sleep(1200);
      },
      llm: [{ text: LONG_ANSWER }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.interrupted).toBe(true);
    expect(LONG_ANSWER.startsWith(reply!.assistant_text)).toBe(true);
    expect(reply!.assistant_text.length).toBeLessThan(LONG_ANSWER.length);
    expect(outcome.status).toBe('completed');
  }, 60_000);
});

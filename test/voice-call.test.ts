/**
 * Live calls end to end: the platform places a call through the carrier_a simulator, a simulated
 * phone answers and speaks recorded utterances in real time, and the platform hears them through the
 * stt_a simulator, thinks with the language model simulator and speaks through the tts_a simulator.
 * Each test is one behaviour of runtime.md §4, checked on both sides: what the phone heard and when,
 * and what the platform recorded (turns with their timing, transcript, call events).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatedPhone } from '../src/sim/phone.js';
import { startVoiceRig, type VoiceRig } from './support/voice-rig.js';

let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig();
}, 60_000);
afterAll(async () => {
  await rig.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const words = (fixture: string) => fixture;

/** The caller listens to the greeting to its end. */
async function afterGreeting(phone: SimulatedPhone): Promise<void> {
  await phone.waitForSpeech();
  await phone.waitForSilence({ ms: 600 });
}

/** The caller waits for the answer and hears it to its end. */
async function hearAnswer(phone: SimulatedPhone): Promise<void> {
  await phone.waitForSpeech();
  await phone.waitForSilence({ ms: 600 });
}

const BOOK = 'I would like to book an appointment for tomorrow';
const LONG_ANSWER =
  'Of course. We have openings tomorrow morning at nine, at ten thirty, and at eleven, and in the afternoon at two, at three, and at four thirty. Which would suit you best?';

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

  it('waits for the longest pause when the vendor never says the words are final', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      // endpointing 0: no speech_final; utterance_end_ms 0: no UtteranceEnd.
      assistant: { stt_settings: { endpointing: { silence_threshold: 0 }, utterance_end_ms: 0 } },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
      },
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
        await phone.say('book-appointment');
        await phone.waitForSpeech();
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
        await phone.say('book-appointment');
        await phone.waitForSpeech();
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

  it('prompts a silent caller, then says goodbye and hangs up', async () => {
    const outcome = await rig.call({
      heard: [],
      assistant: {
        idle_timeout: 1,
        max_idle_messages: 1,
        idle_message: 'Are you still there?',
        end_call_message: 'Goodbye for now.',
      },
      script: async (phone) => {
        await phone.waitForClose({ timeoutMs: 30_000 });
      },
    });
    expect(outcome.turns.map((turn) => [turn.kind, turn.assistant_text])).toEqual([
      ['greeting', expect.any(String)],
      ['idle', 'Are you still there?'],
      ['goodbye', 'Goodbye for now.'],
    ]);
    expect(outcome.phoneCall.endedBy).toMatch(/hang-up|platform/);
    expect(outcome.events.map((e) => e.type)).toContain('call.end_requested');
  }, 60_000);

  it('ends the call when the model calls end_call', async () => {
    const outcome = await rig.call({
      heard: ['That is all, thank you, goodbye'],
      assistant: { tools_settings: { end_call: { enabled: true } }, end_call_message: 'Have a good day.' },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('goodbye');
        await phone.waitForClose({ timeoutMs: 30_000 });
      },
      llm: [{ text: 'You are welcome.', toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toBe('You are welcome. Have a good day.');
    expect(outcome.phoneCall.endedBy).toMatch(/hang-up|platform/);
    expect(outcome.llmRequests[0]!.tools.map((tool) => (tool.function as { name: string }).name)).toEqual([
      'end_call',
    ]);
    expect(outcome.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['call.tool', 'call.end_requested']),
    );
  }, 60_000);

  it('transfers the call when the model calls transfer_call, only to a number it was given', async () => {
    const outcome = await rig.call({
      heard: ['Please transfer me to a real person'],
      assistant: {
        tools_settings: { transfer_call: { enabled: true, transfer_numbers: ['+14155550199'] } },
        transfer_call_message: 'Connecting you now.',
      },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('transfer-me');
        await phone.waitForClose({ timeoutMs: 30_000 });
      },
      llm: [{ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: '+19995550000' } }] }],
    });
    expect(outcome.phoneCall.endedBy).toBe('transfer');
    // The model asked for a number it was not given: the call goes to the one configured.
    expect(rig.carrier.calls.get(outcome.phone.callSid)?.transferredTo).toBe('+14155550199');
    expect(outcome.turns.find((turn) => turn.kind === 'reply')?.assistant_text).toBe('Connecting you now.');
  }, 60_000);

  it('moves to the fallback key when the model fails before its first token, and records the switch', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      prepare: async (org) => {
        rig.llm.addKey(`fallback-${org.assistantId}`);
        const added = await rig.t.app.inject({
          method: 'POST',
          url: '/api/v1/organization/fallback-keys/llm_a',
          headers: org.admin.headers,
          payload: { name: 'spare', api_key: `fallback-${org.assistantId}`, enabled: true },
        });
        expect(added.statusCode, added.body).toBe(201);
      },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
      },
      llm: [{ error: { status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 1 } }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toBe(`You said: ${BOOK}. How else can I help?`);
    const fallback = outcome.events.find((e) => e.type === 'call.vendor_fallback');
    expect(fallback?.data).toMatchObject({
      kind: 'llm',
      provider: 'llm_a',
      status: 429,
      next: { key: 'fallback key spare' },
    });
    expect(JSON.stringify(outcome.events)).not.toContain('llm-key-');
  }, 60_000);

  it('apologises rather than falls silent when no model answers', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
      },
      llm: [{ error: { status: 401, code: 'invalid_api_key' } }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toMatch(/^I'm sorry, I'm having trouble answering/);
    expect(outcome.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['call.vendor_fallback', 'call.llm_unavailable']),
    );
  }, 60_000);

  it('records what was heard when the caller hangs up mid-sentence', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await phone.waitForSpeech();
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

/**
 * Live calls end to end, beyond the conversation itself (voice-call.test.ts): idle prompts, the
 * built-in tools, vendor fallback and its apology, inbound calls, the greeting prepared before the
 * stream, and what the model is told. The same rig: carrier_a, stt_a, LLM and tts_a simulators and a
 * simulated phone speaking recorded utterances in real time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterGreeting, askToBook, BOOK, startVoiceRig, type VoiceRig } from './support/voice-rig.js';

let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig();
}, 60_000);
afterAll(async () => {
  await rig.close();
});

describe('a live call that does more', () => {
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
    // Moved, not hung up: a hang-up would end the transferred call at a real carrier.
    expect(outcome.events.map((e) => e.type)).toContain('call.transferred');
    expect(outcome.events.map((e) => e.type)).not.toContain('call.end_requested');
    // The model asked for a number it was not given: the call goes to the one configured.
    expect(rig.carrier.calls.get(outcome.phone.callSid)?.transferredTo).toBe('+14155550199');
    expect(outcome.turns.find((turn) => turn.kind === 'reply')?.assistant_text).toBe('Connecting you now.');
  }, 60_000);

  it('moves to the next key of the voice and of the hearing when theirs are refused', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      prepare: async (org, keys) => {
        for (const [vendor, key] of [
          ['tts_a', `spare-tts-${org.assistantId}`],
          ['stt_a', `spare-stt-${org.assistantId}`],
        ] as const) {
          const added = await rig.t.app.inject({
            method: 'POST',
            url: `/api/v1/organization/fallback-keys/${vendor}`,
            headers: org.admin.headers,
            payload: { name: 'spare', api_key: key, enabled: true },
          });
          expect(added.statusCode, added.body).toBe(201);
        }
        rig.tts.addKey(`spare-tts-${org.assistantId}`);
        rig.stt.addKey(`spare-stt-${org.assistantId}`);
        rig.stt.setScript(`spare-stt-${org.assistantId}`, [BOOK]);
        // The organization's own keys are refused at their next handshake: a 503 and a 401.
        rig.tts.failNext(keys.tts, { status: 503 });
        rig.stt.failNext(keys.stt, { status: 401 });
      },
      script: askToBook,
    });
    expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting', 'reply']);
    expect(outcome.turns[1]?.user_text).toBe(BOOK);
    const switches = outcome.events.filter((e) => e.type === 'call.vendor_fallback').map((e) => e.data);
    expect(switches).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'tts',
          status: 503,
          next: { provider: 'tts_a', key: 'fallback key spare' },
        }),
        expect.objectContaining({
          kind: 'stt',
          status: 401,
          next: { provider: 'stt_a', key: 'fallback key spare' },
        }),
      ]),
    );
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
      script: askToBook,
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
      script: askToBook,
      llm: [{ error: { status: 401, code: 'invalid_api_key' } }],
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toMatch(/^I'm sorry, I'm having trouble answering/);
    expect(outcome.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['call.vendor_fallback', 'call.llm_unavailable']),
    );
  }, 60_000);

  it('answers an inbound call on the number, greeting before the stream has asked for anything', async () => {
    const outcome = await rig.call({
      inbound: true,
      heard: [BOOK],
      assistant: { llm_settings: { welcome_message: 'Thanks for calling the clinic.' } },
      script: askToBook,
    });
    expect(outcome.phone.errors).toEqual([]);
    const [greeting, reply] = outcome.turns;
    expect(greeting).toMatchObject({ kind: 'greeting', assistant_text: 'Thanks for calling the clinic.' });
    expect(reply).toMatchObject({ kind: 'reply', user_text: BOOK });
    // The greeting was being synthesized while the carrier connected the stream: its request came
    // before the first audio went out by the vendor's whole time to first byte.
    expect(greeting!.marks.tts_request_at).toBeLessThan(greeting!.marks.first_audio_sent_at!);
    expect(outcome.status).toBe('completed');
  }, 60_000);

  it('tells the model the prompt with the call variables and agenda, and the assistant parameters', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      assistant: {
        llm_settings: {
          system_prompt: 'You book visits for {{ clinic }}.',
          temperature: 0.2,
          max_tokens: 120,
          stop_sequences: ['END'],
        },
      },
      initiate: {
        welcome_message: 'Hello {{ name }}',
        agenda: 'Confirm the {{ day }} visit',
        variables: { name: 'Ada', day: 'Monday', clinic: 'Acme Clinic' },
      },
      script: askToBook,
    });
    expect(outcome.turns[0]?.assistant_text).toBe('Hello Ada');
    const request = outcome.llmRequests[0]!;
    const system = String(request.messages[0]?.content);
    expect(system).toContain('You book visits for Acme Clinic.');
    expect(system).toContain('Agenda for this call: Confirm the Monday visit');
    expect(request.body).toMatchObject({ temperature: 0.2, max_tokens: 120, stop: ['END'], stream: true });
    expect(request.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Hello Ada' },
      { role: 'user', content: BOOK },
    ]);
  }, 60_000);
});

/**
 * Vendor failover in the middle of an answer, end to end (the voice rig: carrier_a, stt_a, the
 * language model and tts_a simulators, a simulated phone speaking in real time): the organization's
 * model breaks off after its first sentence and the assistant's fallback provider finishes the answer
 * without repeating it; the voice breaks mid-answer and the next key speaks the rest; and a model
 * that never answers within the turn's budget gives the apology, never silence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  afterGreeting,
  askToBook,
  BOOK,
  hearAnswer,
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

/** The simulator's answer to BOOK, which every model here gives in full unless scripted otherwise. */
const ANSWER = `You said: ${BOOK}. How else can I help?`;

/** The assistant falls back to llm_a with its own key, which the simulator accepts. */
function withFallbackProvider(key: string) {
  rig.llm.addKey(key);
  return {
    llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_a', api_key: key }] },
  };
}

const switchesOf = (events: Array<{ type: string; data: Record<string, unknown> }>) =>
  events.filter((event) => event.type === 'call.vendor_fallback').map((event) => event.data);

describe('a vendor failing in the middle of an answer', () => {
  it('lets the fallback provider finish the answer the first model broke off, without repeating it', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      assistant: withFallbackProvider('fallback-llm-1'),
      // "You said: … tomorrow. How" and the stream breaks (an error event, no [DONE]).
      llm: [{ text: ANSWER, failAfterTokens: 12 }],
      script: askToBook,
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply).toMatchObject({ assistant_text: ANSWER, interrupted: false, llm_provider: 'llm_a' });
    const said = outcome.transcript.filter((segment) => segment.speaker === 'assistant').map((s) => s.text);
    expect(said.at(-1)).toBe(ANSWER);
    // The fallback was asked to continue after the words already said, as its own: "How", written
    // when the stream broke, may have been a word's start ("However"), so it was held back and the
    // fallback says it.
    const [first, second] = outcome.llmRequests;
    expect(outcome.llmRequests).toHaveLength(2);
    expect(first!.key).toMatch(/^llm-key-/);
    expect(second!.key).toBe('fallback-llm-1');
    expect(second!.messages.slice(-3)).toEqual([
      { role: 'user', content: BOOK },
      { role: 'system', content: expect.stringContaining('Continue that reply from exactly where it stops') },
      { role: 'assistant', content: `You said: ${BOOK}.` },
    ]);
    expect(switchesOf(outcome.events)).toEqual([
      expect.objectContaining({
        kind: 'llm',
        mid_stream: true,
        next: { provider: 'llm_a', key: 'llm_fallback_providers[0]' },
      }),
    ]);
    expect(outcome.events.map((event) => event.type)).not.toContain('call.llm_unavailable');
  }, 60_000);

  it('lets the next key of the voice speak the rest of an answer whose voice broke mid-way', async () => {
    const answer = 'Of course. We have openings tomorrow at nine, at ten thirty, and at eleven.';
    const connectionsBefore = rig.tts.connections.length;
    const outcome = await rig.call({
      heard: [BOOK],
      llm: [{ text: answer }],
      prepare: async (org) => {
        const spare = `spare-tts-${org.assistantId}`;
        rig.tts.addKey(spare);
        const added = await rig.t.app.inject({
          method: 'POST',
          url: '/api/v1/organization/fallback-keys/tts_a',
          headers: org.admin.headers,
          payload: { name: 'spare', api_key: spare, enabled: true },
        });
        expect(added.statusCode, added.body).toBe(201);
      },
      script: async (phone) => {
        await afterGreeting(phone);
        // The answer's voice is cut once it has sent 1.5 s of audio.
        rig.tts.failAfterAudio(1_500);
        await phone.say('book-appointment');
        await hearAnswer(phone);
      },
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply).toMatchObject({ assistant_text: answer, interrupted: false });
    const said = outcome.transcript.filter((segment) => segment.speaker === 'assistant').map((s) => s.text);
    expect(said.at(-1)).toBe(answer);
    expect(switchesOf(outcome.events)).toEqual([
      expect.objectContaining({
        kind: 'tts',
        mid_stream: true,
        next: { provider: 'tts_a', key: 'fallback key spare' },
      }),
    ]);
    // The broken voice spoke the start; the next one was given only the rest, from a word's start.
    const [, broken, next] = rig.tts.connections.slice(connectionsBefore);
    expect(broken!.audioMs).toBeGreaterThanOrEqual(1_500);
    const rest = next!.texts.join('').trim();
    expect(answer.endsWith(rest)).toBe(true);
    expect(rest.length).toBeLessThan(answer.length - 10);
    // The phone heard the answer go on: about the whole answer's audio after the caller spoke.
    const greetingEnd = outcome.phone.heardSegments[0]!.endMs;
    const answerHeardMs = outcome.phone.heardSegments
      .filter((segment) => segment.startMs > greetingEnd)
      .reduce((sum, segment) => sum + segment.endMs - segment.startMs, 0);
    const expectedMs = answer.length * rig.tts.options.msPerCharacter;
    expect(answerHeardMs).toBeGreaterThan(expectedMs * 0.85);
    expect(answerHeardMs).toBeLessThan(expectedMs * 1.3);
  }, 60_000);

  it('apologises, never falls silent, when the turn budget runs out before any model answers', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      assistant: withFallbackProvider('fallback-llm-3'),
      // The organization's model accepts the request and never sends a token.
      llm: [{ text: ANSWER, stallAfterTokens: 0 }],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await phone.waitForSpeech({ timeoutMs: 20_000 });
        await hearAnswer(phone);
      },
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toMatch(/^I'm sorry, I'm having trouble answering/);
    // The 10 s budget went on the first model: the fallback was never asked, and the record says so.
    expect(outcome.llmRequests.map((request) => request.key)).toEqual([outcome.llmRequests[0]!.key]);
    expect(switchesOf(outcome.events)).toEqual([
      expect.objectContaining({ kind: 'llm', mid_stream: false, next: null }),
    ]);
    expect(outcome.events.map((event) => event.type)).toContain('call.llm_unavailable');
  }, 60_000);
});

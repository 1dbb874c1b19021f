/**
 * An answer that outlives its model (voice/answer.ts, voice/continuation.ts): the OpenAI-dialect
 * adapter against the language model simulator, the voice through a real speech lane to the tts_a
 * simulator. A model that breaks off or stalls mid-answer is replaced by the next candidate, which is
 * asked to continue from the words already said; what it repeats anyway is dropped, so the voice gets
 * the answer once. The turn's budget bounds the waiting. The overlap filter is also checked alone.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProviderError } from '../src/providers/errors.js';
import { MessagesApiAdapter } from '../src/providers/llm/messages-api.js';
import { OpenAiChatAdapter } from '../src/providers/llm/openai-chat.js';
import type { ChatMessage } from '../src/providers/llm/types.js';
import { TtsAAdapter } from '../src/providers/tts/tts-a.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { generateAnswer } from '../src/voice/answer.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { CONTINUE_INSTRUCTION, joinSaid, OverlapFilter } from '../src/voice/continuation.js';
import { SpeechLane } from '../src/voice/speech-lane.js';
import type { LlmCandidate } from '../src/voice/vendors.js';

const llm = new LlmSimulator();
const tts = new TtsASimulator({ ttfbMs: 5, realtimeFactor: 50 });
let llmUrl = '';
let ttsUrl = '';
beforeAll(async () => {
  [llmUrl, ttsUrl] = await Promise.all([llm.start(), tts.start()]);
  tts.addKey('tts-key');
});
afterAll(() => Promise.all([llm.stop(), tts.stop()]));
beforeEach(() => llm.reset());

const ASKED = 'Can I come in tomorrow';
const messages: ChatMessage[] = [
  { role: 'system', content: 'You book visits.' },
  { role: 'user', content: ASKED },
];
/** The simulator's default answer to ASKED, which every model here gives in full when asked. */
const WHOLE = `You said: ${ASKED}. How else can I help?`;

function candidate(provider: string, key: string): LlmCandidate {
  return { provider, apiKey: key, baseUrl: llmUrl, model: 'm', label: `${key} key` };
}

/** Runs one answer through a real lane; returns the result, the switches, and what the voice got. */
async function answer(candidates: LlmCandidate[], options: { budgetMs?: number; stallMs?: number } = {}) {
  const switches: Array<{ from: string; next: string | null; midAnswer: boolean; error: ProviderError }> = [];
  const before = tts.connections.length;
  const abort = new AbortController();
  const lane = new SpeechLane({
    adapter: new TtsAAdapter(),
    candidates: [{ provider: 'tts_a', apiKey: 'tts-key', baseUrl: ttsUrl, label: 'organization key' }],
    format: MULAW_8K,
    voice: { voiceId: 'v', voiceSettings: {} },
    signal: abort.signal,
    clock: () => performance.now(),
    onAudio: () => undefined,
    onFallback: () => undefined,
  });
  const result = await generateAnswer({
    messages,
    tools: [],
    candidates,
    adapterFor: (provider) =>
      provider === 'llm_b' ? new MessagesApiAdapter(provider) : new OpenAiChatAdapter(provider),
    parameters: {},
    lane,
    signal: abort.signal,
    clock: () => performance.now(),
    marks: {},
    budgetMs: options.budgetMs ?? 5_000,
    stallMs: options.stallMs,
    onFallback: (from, error, next, midAnswer) =>
      switches.push({ from: from.apiKey ?? '', next: next?.apiKey ?? null, midAnswer, error }),
  });
  await lane.end();
  const voice = tts.connections
    .slice(before)
    .flatMap((connection) => connection.texts)
    .join('');
  return { result, switches, voice: voice.replace(/\s+/g, ' ').trim() };
}

describe('an answer whose model breaks off mid-answer', () => {
  it('is finished by the next model, asked to continue from the words said, without repeating them', async () => {
    // The first key says "You said: Can I come in tomorrow." and breaks; the next answers in full.
    // "tomorrow." had not reached the voice (no space after it yet): the next model is given the rest.
    llm.setScript('first', [{ text: WHOLE, failAfterTokens: 7 }]);
    const { result, switches, voice } = await answer([
      candidate('llm_a', 'first'),
      candidate('llm_c', 'second'),
    ]);
    expect(result).toMatchObject({ text: WHOLE, provider: 'llm_c', providers: ['llm_a', 'llm_c'] });
    expect(voice).toBe(WHOLE);
    expect(switches).toEqual([expect.objectContaining({ from: 'first', next: 'second', midAnswer: true })]);
    // The second model got the conversation, the instruction, and what was said as its own words.
    const second = llm.requests.find((request) => request.key === 'second')!;
    expect(second.messages).toEqual([
      { role: 'system', content: 'You book visits.' },
      { role: 'user', content: ASKED },
      { role: 'system', content: CONTINUE_INSTRUCTION },
      { role: 'assistant', content: 'You said: Can I come in' },
    ]);
  });

  it('is finished by llm_b through the messages API, the words said as its prefill', async () => {
    llm.setScript('first', [{ text: WHOLE, failAfterTokens: 7 }]);
    const { result, voice } = await answer([candidate('llm_a', 'first'), candidate('llm_b', 'messages')]);
    expect(result).toMatchObject({ text: WHOLE, provider: 'llm_b', providers: ['llm_a', 'llm_b'] });
    expect(voice).toBe(WHOLE);
    const second = llm.requests.find((request) => request.key === 'messages')!;
    expect(second.status).toBe(200);
    expect(String(second.body?.system)).toContain(CONTINUE_INSTRUCTION);
    // The prefill is last, without trailing whitespace (the API refuses that).
    expect(second.messages.at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'You said: Can I come in' }],
    });
  });

  it('takes a stall after the first tokens for a break, and joins a continuation that does not repeat', async () => {
    llm.setScript('stuck', [{ text: 'We are open from nine until five.', stallAfterTokens: 4 }]);
    // Asked to continue after "We are open" ("from" was cut), it repeats one word.
    llm.setScript('next', [{ text: 'open from nine until five.' }]);
    const started = performance.now();
    const { result, switches, voice } = await answer(
      [candidate('llm_a', 'stuck'), candidate('llm_a', 'next')],
      { stallMs: 300 },
    );
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(result.text).toBe('We are open from nine until five.');
    expect(voice).toBe('We are open from nine until five.');
    expect(switches[0]).toMatchObject({ from: 'stuck', midAnswer: true });
    expect(switches[0]!.error.message).toMatch(/stalled/);
    expect(llm.requests.find((request) => request.key === 'stuck')?.disconnected).toBe(true);
  });

  it('gives up, asking nobody else, once the budget is spent waiting', async () => {
    llm.setScript('slow', [{ text: 'Never heard.' }]);
    llm.pacing.ttftMs = 1_000;
    const { result, switches } = await answer([candidate('llm_a', 'slow'), candidate('llm_c', 'unused')], {
      budgetMs: 300,
    });
    expect(result).toMatchObject({ text: '', provider: null, providers: [] });
    expect(result.failure?.message).toMatch(/first token/);
    expect(result.failure?.retryable).toBe(true);
    // The budget went on the first model: the second is never asked, and the record says nobody is next.
    expect(switches).toEqual([expect.objectContaining({ from: 'slow', next: null, midAnswer: false })]);
    expect(llm.requests.map((request) => request.key)).toEqual(['slow']);
  });

  it('keeps what was said when no model is left to finish it', async () => {
    llm.setScript('only', [{ text: WHOLE, failAfterTokens: 7 }]);
    const { result, voice } = await answer([candidate('llm_a', 'only')]);
    expect(result).toMatchObject({ text: `You said: ${ASKED}.`, provider: null, providers: ['llm_a'] });
    expect(result.failure?.message).toMatch(/mid-stream/);
    expect(voice).toBe(`You said: ${ASKED}.`);
  });
});

describe('the overlap filter', () => {
  const run = (said: string, tokens: string[]) => {
    const filter = new OverlapFilter(said);
    const out = tokens.map((token) => filter.push(token));
    return { out, passed: out.join('') + filter.end() };
  };

  it('drops a repetition of the whole answer, or of its last words, ignoring case and punctuation', () => {
    expect(
      run('We have openings at nine,', [' We', ' have', ' openings', ' at', ' nine,', ' ten.']).passed,
    ).toBe('ten.');
    expect(run('We have openings at nine,', ['at', ' Nine', ' and', ' ten.']).passed).toBe('and ten.');
  });

  it('passes a continuation that repeats nothing, holding back only words that could still be a repeat', () => {
    const { out, passed } = run('We have openings at nine', [' and', ' at', ' ten.']);
    // "and" is no ending of what was said: it goes on as soon as it is known to be a whole word.
    expect(out).toEqual(['', ' and at', ' ten.']);
    expect(passed).toBe(' and at ten.');
    // "at ten" is the ending: held until the next word shows the repetition stops there.
    const held = run('at nine, at ten', ['at', ' ten,', ' or', ' eleven.']);
    expect(held.out).toEqual(['', '', 'or', ' eleven.']);
    expect(held.passed).toBe('or eleven.');
    // The same words from the middle of what was said are no repetition of its end.
    expect(run('at nine, at ten', ['at', ' nine,', ' at', ' eleven.']).passed).toBe('at nine, at eleven.');
  });

  it('joins the first words of a continuation with one space', () => {
    expect(joinSaid('at nine.', 'And ten.')).toBe('at nine. And ten.');
    expect(joinSaid('at nine ', ' and ten.')).toBe('at nine and ten.');
    expect(joinSaid('at nine', ', and ten.')).toBe('at nine, and ten.');
  });
});

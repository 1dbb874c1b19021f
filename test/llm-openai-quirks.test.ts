/**
 * What differs between the OpenAI-compatible vendors, each id against the simulator over loopback
 * HTTP: golden streams per vendor (Gemini's whole tool call without index finished with "stop",
 * Groq's whole tool call with its usage under x_groq, DeepSeek's reasoning that is not spoken and its
 * keep-alive comments), the parameters each id's requests carry, and the per-vendor table
 * (parameters.ts) both the adapters and the save-time validation read.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiChatAdapter } from '../src/providers/llm/openai-chat.js';
import { refusedSettings, wireParameters } from '../src/providers/llm/parameters.js';
import type { ChatRequest } from '../src/providers/llm/types.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { collect } from './support/llm-conformance.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures/vendors/llm-openai');
const ALL_PARAMS = {
  temperature: 0.3,
  maxTokens: 150,
  topP: 0.9,
  frequencyPenalty: 0.4,
  presencePenalty: 0.2,
  stop: ['Goodbye'],
};

describe('the OpenAI-compatible vendors on the wire', () => {
  const sim = new LlmSimulator();
  let baseUrl = '';
  const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
    apiKey: 'key-quirks-0001',
    baseUrl,
    model: 'some-model',
    messages: [{ role: 'user', content: 'When do you open?' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  });

  beforeAll(async () => {
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  const goldens = [
    {
      provider: 'llm_c',
      file: 'gemini-whole-tool-call.sse',
      text: '',
      toolCalls: [{ id: 'function-call-1', name: 'lookup_order', arguments: '{"order_id":"A-1042"}' }],
      finishReason: 'tool_calls',
      usage: { promptTokens: 88, completionTokens: 17 },
    },
    {
      provider: 'llm_d',
      file: 'groq-whole-tool-call.sse',
      text: '',
      toolCalls: [{ id: 'call_k3xw', name: 'lookup_order', arguments: '{"order_id":"A-1042"}' }],
      finishReason: 'tool_calls',
      usage: { promptTokens: 231, completionTokens: 19 },
    },
    {
      provider: 'llm_e',
      file: 'deepseek-reasoning.sse',
      // The reasoning ("The caller asks…") is not part of what is said.
      text: 'We open at nine.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 42, completionTokens: 27 },
    },
  ];
  for (const golden of goldens) {
    it(`${golden.provider}: ${golden.file}`, async () => {
      sim.setScript('*', [{ replaySse: readFileSync(path.join(FIXTURES, golden.file), 'utf8') }]);
      const outcome = await collect(new OpenAiChatAdapter(golden.provider).stream(request()));
      expect(outcome.error).toBeUndefined();
      expect(outcome.text).toBe(golden.text);
      expect(outcome.toolCalls).toEqual(golden.toolCalls);
      expect(outcome.done?.finishReason).toBe(golden.finishReason);
      expect(outcome.done?.usage).toEqual(golden.usage);
    });
  }

  it('each id carries the parameters its vendor takes, and asks every one for the usage', async () => {
    const sent: Record<string, Record<string, unknown>> = {};
    for (const provider of ['llm_a', 'llm_c', 'llm_d', 'llm_e', 'custom']) {
      await collect(new OpenAiChatAdapter(provider).stream(request(ALL_PARAMS)));
      const { model, messages, stream, ...rest } = sim.requests.at(-1)!.body!;
      sent[provider] = rest;
    }
    const everything = {
      stream_options: { include_usage: true },
      temperature: 0.3,
      max_tokens: 150,
      top_p: 0.9,
      frequency_penalty: 0.4,
      presence_penalty: 0.2,
      stop: ['Goodbye'],
    };
    const { frequency_penalty, presence_penalty, ...withoutPenalties } = everything;
    expect(sent).toEqual({
      llm_a: everything,
      llm_c: withoutPenalties,
      llm_d: everything,
      llm_e: everything,
      custom: everything,
    });
  });
});

describe('the per-vendor parameter table', () => {
  it('keeps stop sequences within what each vendor takes and a temperature within its range', () => {
    const stops = ['a', 'b', 'c', 'd', 'e', 'f'];
    expect(wireParameters('llm_a', { stop: stops }).stop).toHaveLength(4);
    expect(wireParameters('llm_c', { stop: stops }).stop).toHaveLength(5);
    expect(wireParameters('llm_e', { stop: stops }).stop).toHaveLength(6);
    expect(wireParameters('llm_b', { temperature: 1.8 })).toEqual({ temperature: 1 });
    expect(wireParameters('llm_a', { temperature: 1.8 })).toEqual({ temperature: 1.8 });
  });

  it('refuses only non-default settings a vendor cannot honour', () => {
    const defaults = {
      temperature: 0.7,
      max_tokens: 1000,
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
    };
    for (const provider of ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e', 'custom']) {
      expect(refusedSettings(provider, undefined, defaults)).toEqual([]);
    }
    const fields = (provider: string, model: string | undefined, settings: Record<string, unknown>) =>
      refusedSettings(provider, model, settings).map((r) => r.field);
    const penalties = { frequency_penalty: 0.5, presence_penalty: -0.3 };
    expect(fields('llm_a', undefined, penalties)).toEqual([]);
    expect(fields('llm_b', undefined, penalties)).toEqual(['frequency_penalty', 'presence_penalty']);
    expect(fields('llm_c', undefined, penalties)).toEqual(['frequency_penalty', 'presence_penalty']);
    expect(fields('llm_d', undefined, penalties)).toEqual([]);
    expect(fields('llm_e', undefined, penalties)).toEqual([]);
    expect(fields('llm_b', undefined, { temperature: 1.2 })).toEqual(['temperature']);
    expect(fields('llm_a', undefined, { temperature: 1.2 })).toEqual([]);
    expect(fields('llm_b', undefined, { temperature: 0.2, top_p: 0.8 })).toEqual(['top_p']);
    expect(fields('llm_b', undefined, { top_p: 0.8 })).toEqual([]);
    expect(fields('llm_c', undefined, { stop_sequences: ['1', '2', '3', '4', '5', '6'] })).toEqual([
      'stop_sequences',
    ]);
    expect(fields('llm_e', undefined, { max_tokens: 9000 })).toEqual(['max_tokens']);
    expect(fields('llm_e', 'deepseek-chat', { max_tokens: 9000 })).toEqual(['max_tokens']);
    expect(fields('llm_e', 'deepseek-reasoner', { max_tokens: 9000 })).toEqual([]);
    expect(fields('custom', undefined, { ...penalties, temperature: 1.9 })).toEqual([]);
  });
});

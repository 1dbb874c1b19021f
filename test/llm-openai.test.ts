/**
 * The OpenAI-compatible language model adapter (llm_a, llm_c, llm_d, llm_e, custom) against its
 * simulator, over real loopback HTTP: the shared LLM conformance suite with this dialect's golden
 * transcripts, then what is particular to the dialect — the request body's exact shape, the SSE
 * reader on awkward splits, retry-after parsing, and the registry (the simulator alone: llm-sim.test.ts).
 */
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { llmAdapterFor } from '../src/providers/llm/index.js';
import { OpenAiChatAdapter, retryAfterSeconds } from '../src/providers/llm/openai-chat.js';
import { SseReader } from '../src/providers/llm/sse.js';
import type { ChatMessage, ChatRequest } from '../src/providers/llm/types.js';
import { LlmSimulator } from '../src/sim/llm.js';
import {
  collect,
  providerError,
  type ReceivedRequest,
  runLlmConformance,
} from './support/llm-conformance.js';

const simulator = new LlmSimulator();

/** A recorded chat completions body, read back into the contract's terms. */
function received(index: number): ReceivedRequest {
  const recorded = simulator.requests[index]!;
  const body = recorded.body ?? {};
  const messages = recorded.messages.map((m): ChatMessage => {
    if (m.role === 'tool')
      return { role: 'tool', toolCallId: String(m.tool_call_id), content: String(m.content) };
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      return {
        role: 'assistant',
        content: typeof m.content === 'string' ? m.content : '',
        toolCalls: (m.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>).map(
          (call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }),
        ),
      };
    }
    return { role: m.role, content: m.content } as ChatMessage;
  });
  const tools = recorded.tools.map((t) => {
    const fn = t.function as { name: string; description: string; parameters: Record<string, unknown> };
    return { name: fn.name, description: fn.description, parameters: fn.parameters };
  });
  const params: ReceivedRequest['params'] = {};
  const names = {
    temperature: 'temperature',
    max_tokens: 'maxTokens',
    top_p: 'topP',
    frequency_penalty: 'frequencyPenalty',
    presence_penalty: 'presencePenalty',
    stop: 'stop',
  } as const;
  for (const [wire, name] of Object.entries(names)) {
    if (body[wire] !== undefined) Object.assign(params, { [name]: body[wire] });
  }
  return { key: recorded.key, model: String(recorded.model), messages, tools, params };
}

runLlmConformance({
  name: 'openai-chat',
  adapter: new OpenAiChatAdapter('llm_a'),
  simulator,
  model: 'gpt-4o-mini',
  fixturesDir: path.join(import.meta.dirname, 'fixtures/vendors/llm-openai'),
  received,
  goldens: [
    {
      file: 'text-with-usage.sse',
      expect: {
        text: 'Hello! How can I assist you today?',
        toolCalls: [],
        finishReason: 'stop',
        usage: { promptTokens: 19, completionTokens: 10 },
      },
    },
    {
      file: 'parallel-tool-calls.sse',
      expect: {
        text: '',
        toolCalls: [
          { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'lookup_order', arguments: { order_id: 'A-1042' } },
          {
            id: 'call_5Q3mZ1b2kVbGd0ZP8vJt7yXw',
            name: 'get_weather',
            arguments: { location: 'Paris, France' },
          },
        ],
        finishReason: 'tool_calls',
        usage: { promptTokens: 120, completionTokens: 48 },
      },
    },
    {
      file: 'mid-stream-error.sse',
      expect: { textBeforeError: 'Let me check', error: { retryable: true } },
    },
    {
      file: 'gemini-whole-tool-call.sse',
      expect: {
        text: '',
        toolCalls: [{ id: 'function-call-1', name: 'lookup_order', arguments: { order_id: 'A-1042' } }],
        // The endpoint says `stop`; a turn that called tools is a tool-call turn to the runtime.
        finishReason: 'tool_calls',
        usage: { promptTokens: 88, completionTokens: 17 },
      },
    },
  ],
});

/** A server that answers every request with one canned body, to feed the adapter shapes the simulator never makes. */
async function cannedServer(status: number, headers: Record<string, string>, body: string) {
  const server: Server = createServer((_req, res) => res.writeHead(status, headers).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('openai-chat: the dialect', () => {
  const sim = new LlmSimulator();
  const adapter = new OpenAiChatAdapter('llm_c');
  let baseUrl = '';
  const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
    apiKey: 'sk-dialect-key-0001',
    baseUrl,
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Book a table for two.' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  });

  beforeAll(async () => {
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('posts a streamed request with usage asked for, a bearer key, and no tools key when there are none', async () => {
    const outcome = await collect(adapter.stream(request({ baseUrl: `${baseUrl}/` })));
    expect(outcome.error).toBeUndefined();
    const recorded = sim.requests[0]!;
    expect(recorded.path).toBe('/v1/chat/completions');
    expect(recorded.headers.authorization).toBe('Bearer sk-dialect-key-0001');
    expect(recorded.headers.accept).toBe('text/event-stream');
    expect(recorded.body).toEqual({
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Book a table for two.' }],
    });
  });

  it('writes a tool-only assistant turn with null content and typed tool calls', async () => {
    await collect(
      adapter.stream(
        request({
          messages: [
            { role: 'user', content: 'What time is it?' },
            {
              role: 'assistant',
              content: '',
              toolCalls: [{ id: 'call_9', name: 'get_time', arguments: '{}' }],
            },
            { role: 'tool', toolCallId: 'call_9', content: '12:00' },
          ],
          tools: [{ name: 'get_time', description: 'The time now.', parameters: { type: 'object' } }],
        }),
      ),
    );
    const body = sim.requests[0]!.body!;
    expect(body.messages).toEqual([
      { role: 'user', content: 'What time is it?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_time', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_9', content: '12:00' },
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_time', description: 'The time now.', parameters: { type: 'object' } },
      },
    ]);
  });

  it('names its provider in errors and keeps vendor messages free of keys', async () => {
    sim.setScript('*', [
      { error: { status: 400, message: 'Bad key sk-leaked-abcdef123456 in messages[0]' } },
    ]);
    const error = providerError(await collect(adapter.stream(request())));
    expect(error.options.provider).toBe('llm_c');
    expect(error.message).toContain('messages[0]');
    expect(error.message).not.toContain('sk-leaked');
  });

  it('reads retry-after in seconds or as a date when retry-after-ms is absent', async () => {
    expect(retryAfterSeconds(new Headers({ 'retry-after-ms': '120', 'retry-after': '1' }))).toBe(0.12);
    expect(retryAfterSeconds(new Headers({ 'retry-after': '7' }))).toBe(7);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const fromDate = retryAfterSeconds(new Headers({ 'retry-after': inTenSeconds }));
    expect(fromDate).toBeGreaterThan(8);
    expect(fromDate).toBeLessThanOrEqual(10);
    expect(retryAfterSeconds(new Headers({}))).toBeUndefined();
  });

  it('takes the usage from x_groq and a finish_reason "error" as a retryable failure', async () => {
    const groq = await cannedServer(
      200,
      { 'content-type': 'text/event-stream' },
      [
        '{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"usage":{"prompt_tokens":5,"completion_tokens":1}}}',
        '[DONE]',
      ]
        .map((d) => `data: ${d}\n\n`)
        .join(''),
    );
    const gateway = await cannedServer(
      200,
      { 'content-type': 'text/event-stream' },
      'data: {"choices":[{"index":0,"delta":{"content":"Hm"},"finish_reason":"error"}]}\n\ndata: [DONE]\n\n',
    );
    try {
      const fromGroq = await collect(adapter.stream(request({ baseUrl: groq.baseUrl })));
      expect(fromGroq.done?.usage).toEqual({ promptTokens: 5, completionTokens: 1 });
      const fromGateway = await collect(adapter.stream(request({ baseUrl: gateway.baseUrl })));
      expect(providerError(fromGateway).retryable).toBe(true);
      expect(fromGateway.done).toBeUndefined();
    } finally {
      await groq.close();
      await gateway.close();
    }
  });

  it('assembles interleaved tool call fragments by their index', async () => {
    const chunk = (fragment: Record<string, unknown>) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [fragment] }, finish_reason: null }] })}\n\n`;
    const server = await cannedServer(
      200,
      { 'content-type': 'text/event-stream' },
      [
        chunk({ index: 0, id: 'call_a', type: 'function', function: { name: 'first', arguments: '' } }),
        chunk({ index: 1, id: 'call_b', type: 'function', function: { name: 'second', arguments: '{"b"' } }),
        chunk({ index: 0, function: { arguments: '{"a":' } }),
        chunk({ index: 1, function: { arguments: ':2}' } }),
        chunk({ index: 0, function: { arguments: '1}' } }),
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n',
      ].join(''),
    );
    try {
      const outcome = await collect(adapter.stream(request({ baseUrl: server.baseUrl })));
      expect(outcome.toolCalls).toEqual([
        { id: 'call_a', name: 'first', arguments: '{"a":1}' },
        { id: 'call_b', name: 'second', arguments: '{"b":2}' },
      ]);
    } finally {
      await server.close();
    }
  });

  it('takes a whole completion from an endpoint that does not stream', async () => {
    const completion = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              { id: 'call_w', type: 'function', function: { name: 'look', arguments: '{"q":1}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
    };
    const plain = await cannedServer(200, { 'content-type': 'application/json' }, JSON.stringify(completion));
    const junk = await cannedServer(200, { 'content-type': 'application/json' }, '{"hello":"world"}');
    try {
      const outcome = await collect(adapter.stream(request({ baseUrl: plain.baseUrl })));
      expect(outcome.events.map((e) => e.type)).toEqual(['text', 'tool_call', 'done']);
      expect(outcome.text).toBe('Checking.');
      expect(outcome.toolCalls).toEqual([{ id: 'call_w', name: 'look', arguments: '{"q":1}' }]);
      expect(outcome.done?.usage).toEqual({ promptTokens: 9, completionTokens: 4 });
      expect(providerError(await collect(adapter.stream(request({ baseUrl: junk.baseUrl })))).retryable).toBe(
        true,
      );
    } finally {
      await plain.close();
      await junk.close();
    }
  });

  it('an error body that is not JSON still gives a typed error', async () => {
    const proxy = await cannedServer(502, { 'content-type': 'text/html' }, '<html>Bad gateway</html>');
    try {
      const error = providerError(await collect(adapter.stream(request({ baseUrl: proxy.baseUrl }))));
      expect([error.status, error.retryable]).toEqual([502, true]);
    } finally {
      await proxy.close();
    }
  });
});

describe('the SSE reader', () => {
  const bytes = (text: string) => new TextEncoder().encode(text);

  it('splits anywhere: mid-line, mid-CRLF and mid-character', () => {
    const raw =
      'data: {"a":"é"}\r\n\r\n: keep-alive\r\n\r\ndata: line one\ndata: line two\n\ndata: [DONE]\r\n\r\n';
    const encoded = bytes(raw);
    for (let size = 1; size <= 5; size += 1) {
      const reader = new SseReader();
      const events: string[] = [];
      for (let i = 0; i < encoded.length; i += size)
        events.push(...reader.push(encoded.subarray(i, i + size)));
      events.push(...reader.end());
      expect(events).toEqual(['{"a":"é"}', 'line one\nline two', '[DONE]']);
    }
  });

  it('takes a last event without its blank line, and lone CR line ends', () => {
    const reader = new SseReader();
    expect(reader.push(bytes('data:x\r\rdata: y'))).toEqual(['x']);
    expect(reader.end()).toEqual(['y']);
  });
});

describe('llmAdapterFor', () => {
  it('gives the OpenAI-compatible ids the openai-chat adapter, llm_b the messages one', () => {
    for (const id of ['llm_a', 'llm_c', 'llm_d', 'llm_e', 'custom']) {
      expect(llmAdapterFor(id)?.dialect).toBe('openai-chat');
    }
    expect(llmAdapterFor('llm_b')?.dialect).toBe('messages');
    expect(llmAdapterFor('nope')).toBeUndefined();
  });
});

/**
 * llm_b's messages API adapter against the one language model simulator (speaking the messages
 * dialect at /v1/messages), over real loopback HTTP: the shared LLM conformance suite with golden
 * streams shaped after the vendor's documentation (text, text then a tool call in many
 * input_json_delta pieces, an overloaded `error` event mid-stream, thinking blocks and an unknown
 * event type around two tool calls), then what is particular to the dialect — the headers, the
 * conversation rewritten to the API's rules, the parameters it takes, 529, an abrupt close, a whole
 * (non-streamed) answer — and what the simulator refuses as the real API would.
 */
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { llmAdapterFor } from '../src/providers/llm/index.js';
import { ANTHROPIC_VERSION, CALL_START, MessagesApiAdapter } from '../src/providers/llm/messages-api.js';
import type { ChatMessage, ChatRequest } from '../src/providers/llm/types.js';
import { LlmSimulator } from '../src/sim/llm.js';
import {
  collect,
  providerError,
  type ReceivedRequest,
  runLlmConformance,
} from './support/llm-conformance.js';

type Block = Record<string, unknown>;
const simulator = new LlmSimulator();

/** A recorded messages API body, read back into the contract's terms. */
function received(index: number): ReceivedRequest {
  const recorded = simulator.requests[index]!;
  const body = recorded.body ?? {};
  const messages: ChatMessage[] =
    typeof body.system === 'string' ? [{ role: 'system', content: body.system }] : [];
  for (const message of recorded.messages) {
    const blocks = message.content as Block[];
    const text = blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('');
    if (message.role === 'assistant') {
      const uses = blocks.filter((b) => b.type === 'tool_use');
      messages.push({
        role: 'assistant',
        content: text,
        ...(uses.length > 0
          ? {
              toolCalls: uses.map((b) => ({
                id: String(b.id),
                name: String(b.name),
                arguments: JSON.stringify(b.input),
              })),
            }
          : {}),
      });
      continue;
    }
    for (const result of blocks.filter((b) => b.type === 'tool_result')) {
      messages.push({
        role: 'tool',
        toolCallId: String(result.tool_use_id),
        content: String(result.content),
      });
    }
    if (text !== '') messages.push({ role: 'user', content: text });
  }
  const tools = recorded.tools.map((t) => ({
    name: String(t.name),
    description: String(t.description),
    parameters: t.input_schema as Record<string, unknown>,
  }));
  const params: ReceivedRequest['params'] = {};
  const names = {
    temperature: 'temperature',
    max_tokens: 'maxTokens',
    top_p: 'topP',
    stop_sequences: 'stop',
  } as const;
  for (const [wire, name] of Object.entries(names)) {
    if (body[wire] !== undefined) Object.assign(params, { [name]: body[wire] });
  }
  return { key: recorded.key, model: String(recorded.model), messages, tools, params };
}

runLlmConformance({
  name: 'messages (llm_b)',
  adapter: new MessagesApiAdapter('llm_b'),
  simulator,
  model: 'claude-3-5-haiku-latest',
  fixturesDir: path.join(import.meta.dirname, 'fixtures/vendors/llm_b'),
  received,
  // No penalties at all, and top_p (it narrows: 0.9) instead of temperature, never both.
  carriedParams: ({ maxTokens, topP, stop }) => ({ maxTokens, topP, stop }),
  errorCodes: { rateLimited: 'rate_limit_error', quotaExhausted: 'enforced_spend_limit_reached' },
  // retry-after in whole seconds.
  retryAfterSeconds: 2,
  goldens: [
    {
      file: 'text.sse',
      expect: {
        text: 'Hello! How can I help you today?',
        toolCalls: [],
        finishReason: 'stop',
        usage: { promptTokens: 25, completionTokens: 15 },
      },
    },
    {
      file: 'tool-use.sse',
      expect: {
        text: "Okay, let's check the weather for San Francisco, CA:",
        toolCalls: [
          {
            id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
            name: 'get_weather',
            arguments: { location: 'San Francisco, CA', unit: 'fahrenheit' },
          },
        ],
        finishReason: 'tool_calls',
        usage: { promptTokens: 472, completionTokens: 89 },
      },
    },
    {
      file: 'overloaded-mid-stream.sse',
      expect: { textBeforeError: 'Let me check', error: { retryable: true } },
    },
    {
      file: 'thinking-then-parallel-tools.sse',
      expect: {
        text: '',
        toolCalls: [
          {
            id: 'toolu_01A09q90qw90lq917835lq9',
            name: 'lookup_order',
            arguments: { order_id: 'A-1042', include: ['items'] },
          },
          { id: 'toolu_01B7kLm2xQ9aZ3cV8nR4tY6w', name: 'get_time', arguments: {} },
        ],
        finishReason: 'tool_calls',
        // Cache reads are prompt tokens too.
        usage: { promptTokens: 120 + 2048, completionTokens: 61 },
      },
    },
  ],
});

/** A server that answers every request with `respond`, for shapes the simulator never makes. */
async function rawServer(respond: (res: import('node:http').ServerResponse) => void) {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => respond(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    baseUrl: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('messages (llm_b): the dialect', () => {
  const sim = new LlmSimulator();
  const adapter = new MessagesApiAdapter('llm_b');
  let baseUrl = '';
  const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
    apiKey: 'sk-ant-dialect-key-0001',
    baseUrl,
    model: 'claude-3-5-haiku-latest',
    messages: [
      { role: 'system', content: 'You are a dental receptionist.' },
      { role: 'user', content: 'Book a cleaning.' },
    ],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  });

  beforeAll(async () => {
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('posts to /messages with x-api-key and anthropic-version, the system prompt on top and max_tokens 1000 by default', async () => {
    const outcome = await collect(adapter.stream(request({ baseUrl: `${baseUrl}/` })));
    expect(outcome.error).toBeUndefined();
    expect(outcome.text).toBe('You said: Book a cleaning. How else can I help?');
    const recorded = sim.requests[0]!;
    expect(recorded.dialect).toBe('messages');
    expect(recorded.path).toBe('/v1/messages');
    expect(recorded.headers['x-api-key']).toBe('sk-ant-dialect-key-0001');
    expect(recorded.headers.authorization).toBeUndefined();
    expect(recorded.headers['anthropic-version']).toBe(ANTHROPIC_VERSION);
    expect(recorded.body).toEqual({
      model: 'claude-3-5-haiku-latest',
      max_tokens: 1000,
      stream: true,
      system: 'You are a dental receptionist.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Book a cleaning.' }] }],
    });
  });

  it('rewrites a call history to the API rules: the user first, roles alternating, results after their calls', async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      // The tool call of this result fell out of the history window: the API refuses a lone result.
      { role: 'tool', toolCallId: 'call_gone', content: 'stale' },
      { role: 'assistant', content: 'Hello, Example Dental!' },
      { role: 'user', content: 'Hi.' },
      { role: 'user', content: 'Is Tuesday free?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'check_slot', arguments: '{"day":"tuesday"}' },
          { id: 'call_2', name: 'get_time', arguments: 'not json' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', content: '{"free":true}' },
      { role: 'tool', toolCallId: 'call_2', content: '09:00' },
      { role: 'user', content: '   ' },
      { role: 'user', content: 'Great.' },
    ];
    const outcome = await collect(adapter.stream(request({ messages })));
    expect(outcome.error).toBeUndefined();
    expect(sim.requests[0]!.body!.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: CALL_START }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello, Example Dental!' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi.' },
          { type: 'text', text: 'Is Tuesday free?' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'check_slot', input: { day: 'tuesday' } },
          { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '{"free":true}' },
          { type: 'tool_result', tool_use_id: 'call_2', content: '09:00' },
          { type: 'text', text: 'Great.' },
        ],
      },
    ]);
  });

  it('sends the parameters llm_b takes: no penalties, temperature or top_p (never both), a temperature within 0–1', async () => {
    const bodies: Array<Record<string, unknown>> = [];
    for (const params of [
      // What a call sends with the llm_settings defaults: top_p 1 narrows nothing.
      { temperature: 0.7, topP: 1, frequencyPenalty: 0, presencePenalty: 0, maxTokens: 1000 },
      { temperature: 0.7, topP: 0.5, maxTokens: 300, stop: ['Bye'] },
      // Saved before the range was checked.
      { temperature: 1.6, frequencyPenalty: 0.5 },
    ]) {
      await collect(adapter.stream(request(params)));
      bodies.push(sim.requests.at(-1)!.body!);
    }
    const pick = (body: Record<string, unknown>) => {
      const { model, messages, system, stream, ...params } = body;
      return params;
    };
    expect(bodies.map(pick)).toEqual([
      { max_tokens: 1000, temperature: 0.7 },
      { max_tokens: 300, top_p: 0.5, stop_sequences: ['Bye'] },
      { max_tokens: 1000, temperature: 1 },
    ]);
    // The simulator refuses what the real API refuses: every one of these was answered.
    expect(sim.requests.map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('529 overloaded is retryable; 402 billing and 403 permission are not', async () => {
    sim.setScript('*', [{ error: { status: 529 } }, { error: { status: 402 } }, { error: { status: 403 } }]);
    const errors = [];
    for (let i = 0; i < 3; i += 1) errors.push(providerError(await collect(adapter.stream(request()))));
    expect(errors.map((e) => [e.status, e.retryable, e.code])).toEqual([
      [529, true, 'overloaded_error'],
      [402, false, 'billing_error'],
      [403, false, 'permission_error'],
    ]);
    expect(errors[0]!.options.provider).toBe('llm_b');
  });

  it('a connection closed in the middle of an event: the text so far, then a retryable error', async () => {
    const server = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}\n\n' +
          'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
          'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sure"}}\n\n' +
          'event: content_block_delta\ndata: {"type":"content_block_delta","ind',
      );
      setTimeout(() => res.socket?.destroy(), 20);
    });
    try {
      const outcome = await collect(adapter.stream(request({ baseUrl: server.baseUrl })));
      expect(outcome.text).toBe('Sure');
      const error = providerError(outcome);
      expect([error.retryable, error.code]).toEqual([true, 'stream_incomplete']);
      expect(outcome.done).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it('takes a whole message from a gateway that does not stream', async () => {
    const message = {
      id: 'msg_whole',
      type: 'message',
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_w', name: 'look', input: { q: 1 } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 9, output_tokens: 4 },
    };
    const server = await rawServer((res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message)),
    );
    try {
      const outcome = await collect(adapter.stream(request({ baseUrl: server.baseUrl })));
      expect(outcome.events.map((e) => e.type)).toEqual(['text', 'tool_call', 'done']);
      expect(outcome.toolCalls).toEqual([{ id: 'toolu_w', name: 'look', arguments: '{"q":1}' }]);
      expect(outcome.done?.finishReason).toBe('tool_calls');
      expect(outcome.done?.usage).toEqual({ promptTokens: 9, completionTokens: 4 });
    } finally {
      await server.close();
    }
  });

  it('is the adapter llmAdapterFor gives llm_b', () => {
    expect(llmAdapterFor('llm_b')?.dialect).toBe('messages');
  });
});

describe('the simulator in the messages dialect', () => {
  const sim = new LlmSimulator();
  let baseUrl = '';
  const post = (
    body: unknown,
    headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION },
  ) =>
    fetch(`${baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const valid = { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] };

  beforeAll(async () => {
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('refuses with 400, in the vendor error shape, what the real API refuses', async () => {
    const cases: Array<[unknown, string]> = [
      [{ ...valid, frequency_penalty: 0.1 }, 'frequency_penalty: Extra inputs are not permitted'],
      [{ model: 'm', messages: valid.messages }, 'max_tokens: Field required'],
      [{ ...valid, temperature: 0.5, top_p: 0.9 }, 'cannot both be specified'],
      [{ ...valid, temperature: 1.5 }, 'temperature'],
      [
        { ...valid, messages: [{ role: 'assistant', content: 'Hello' }] },
        'first message must use the "user" role',
      ],
      [{ ...valid, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }, 'non-empty'],
      [
        {
          ...valid,
          messages: [
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' }] },
          ],
        },
        'unexpected `tool_use_id`',
      ],
    ];
    for (const [body, message] of cases) {
      const response = await post(body);
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { type: string; error: { type: string; message: string } };
      expect(answer.type).toBe('error');
      expect(answer.error.type).toBe('invalid_request_error');
      expect(answer.error.message).toContain(message);
    }
    const unversioned = await post(valid, {});
    expect(unversioned.status).toBe(400);
  });

  it('takes its key from x-api-key, and answers a request without stream as one message', async () => {
    sim.addKey('sk-ant-sim-1');
    expect(
      (await post(valid, { 'anthropic-version': ANTHROPIC_VERSION, authorization: 'Bearer sk-ant-sim-1' }))
        .status,
    ).toBe(401);
    const response = await post(valid, {
      'anthropic-version': ANTHROPIC_VERSION,
      'x-api-key': 'sk-ant-sim-1',
    });
    expect(response.status).toBe(200);
    const message = (await response.json()) as { type: string; content: Block[]; stop_reason: string };
    expect(message.type).toBe('message');
    expect(message.content).toEqual([{ type: 'text', text: 'You said: Hi. How else can I help?' }]);
    expect(message.stop_reason).toBe('end_turn');
  });

  it('streams named events with tool input in many pieces, the first one empty', async () => {
    sim.setScript('*', [
      { toolCalls: [{ name: 'lookup_order', arguments: { order_id: 'A-1042', include: ['items'] } }] },
    ]);
    // The key the test before added stays (reset keeps keys).
    const response = await post(
      { ...valid, stream: true },
      { 'anthropic-version': ANTHROPIC_VERSION, 'x-api-key': 'sk-ant-sim-1' },
    );
    expect(response.status).toBe(200);
    const events = (await response.text())
      .split('\n\n')
      .filter(Boolean)
      .map((raw) => {
        const [eventLine, dataLine] = raw.split('\n');
        const data = JSON.parse(dataLine!.slice('data: '.length)) as Record<string, unknown>;
        expect(eventLine).toBe(`event: ${String(data.type)}`);
        return data;
      });
    const pieces = events
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => (e.delta as { partial_json: string }).partial_json);
    expect(pieces[0]).toBe('');
    expect(pieces.length).toBeGreaterThan(4);
    expect(JSON.parse(pieces.join(''))).toEqual({ order_id: 'A-1042', include: ['items'] });
    expect(events.map((e) => e.type).at(-2)).toBe('message_delta');
    expect(events.at(-2)!.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
    expect(events.at(-1)).toEqual({ type: 'message_stop' });
  });
});

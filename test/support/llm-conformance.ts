/**
 * The conformance suite every language model adapter runs against its dialect's simulator, over real
 * loopback HTTP: golden transcripts from the vendor's documentation replayed byte for byte (and again
 * with CRLF line ends, keep-alive comments and one-byte writes), text streamed as it comes, tool calls
 * assembled from fragments, the request as the simulator received it, typed failures (429 with
 * retry-after retryable, exhausted quota and a wrong key permanent, 5xx and network retryable), a slow
 * first token, a stream that breaks, and abort. The dialect-specific parts — the goldens with what
 * they must give, reading a recorded request back into the contract's terms, which parameters the
 * vendor takes, its error codes and how precisely it says retry-after — come from the caller.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProviderError } from '../../src/providers/errors.js';
import type {
  ChatMessage,
  ChatRequest,
  FinishReason,
  LlmAdapter,
  LlmEvent,
  ToolCall,
  ToolDefinition,
} from '../../src/providers/llm/types.js';
import type { LlmReply, StreamPacing } from '../../src/sim/llm.js';

/** What the suite needs of a simulator (the one language model simulator, in the target's dialect). */
export interface ConformanceSimulator {
  start(port?: number): Promise<string>;
  stop(): Promise<void>;
  addKey(key: string): void;
  setScript(key: string, replies: LlmReply[]): void;
  reset(): void;
  pacing: StreamPacing;
  readonly requests: ReadonlyArray<{ disconnected: boolean; completed: boolean }>;
  readonly peakStreams: number;
}

/** A recorded request read back in the contract's terms. */
export interface ReceivedRequest {
  key: string | null;
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  params: Partial<
    Pick<ChatRequest, 'temperature' | 'maxTokens' | 'topP' | 'frequencyPenalty' | 'presencePenalty' | 'stop'>
  >;
}

export type GoldenExpectation =
  | {
      text: string;
      toolCalls: Array<Omit<ToolCall, 'arguments'> & { arguments: unknown }>;
      finishReason: FinishReason;
      usage?: { promptTokens: number; completionTokens: number };
    }
  | { textBeforeError: string; error: { retryable: boolean } };

export interface LlmConformanceTarget {
  name: string;
  adapter: LlmAdapter;
  simulator: ConformanceSimulator;
  model: string;
  fixturesDir: string;
  goldens: Array<{ file: string; expect: GoldenExpectation }>;
  /** The n-th request the simulator recorded, in the contract's terms. */
  received(index: number): ReceivedRequest;
  /**
   * The parameters a request carries to the vendor, given every one of them (default: all of them,
   * as they are). A vendor that does not take some leaves them out.
   */
  carriedParams?(params: Required<ReceivedRequest['params']>): ReceivedRequest['params'];
  /** The codes the adapter reports for a rate limit and an exhausted quota (default: the OpenAI ones). */
  errorCodes?: { rateLimited: string; quotaExhausted: string };
  /** What the adapter reports when asked to wait 1.5 s (default 1.5; a vendor sending whole seconds: 2). */
  retryAfterSeconds?: number;
}

/** Everything one streamed request gave: its events, and the error it ended with, if any. */
export interface Outcome {
  events: LlmEvent[];
  text: string;
  toolCalls: ToolCall[];
  done?: Extract<LlmEvent, { type: 'done' }>;
  error?: unknown;
}

export async function collect(stream: AsyncIterable<LlmEvent>): Promise<Outcome> {
  const outcome: Outcome = { events: [], text: '', toolCalls: [] };
  try {
    for await (const event of stream) {
      outcome.events.push(event);
      if (event.type === 'text') outcome.text += event.text;
      if (event.type === 'tool_call') outcome.toolCalls.push(event.call);
      if (event.type === 'done') outcome.done = event;
    }
  } catch (error) {
    outcome.error = error;
  }
  return outcome;
}

/** The error an outcome ended with, checked to be a ProviderError. */
export function providerError(outcome: Outcome): ProviderError {
  expect(outcome.error).toBeInstanceOf(ProviderError);
  return outcome.error as ProviderError;
}

/** The same transcript as a picky gateway sends it: CRLF line ends and a keep-alive comment between events. */
export function roughened(raw: string): string {
  return raw
    .split(/\r?\n\r?\n/)
    .map((event) => event.replace(/\r?\n/g, '\r\n'))
    .join('\r\n\r\n: keep-alive\r\n\r\n');
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

const KEY = 'sk-conformance-0123456789abcdef';

export function runLlmConformance(target: LlmConformanceTarget): void {
  const { adapter, simulator: sim } = target;
  let baseUrl = '';

  function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
    return {
      apiKey: KEY,
      baseUrl,
      model: target.model,
      messages: [{ role: 'user', content: 'Hello there' }],
      tools: [],
      signal: new AbortController().signal,
      ...overrides,
    };
  }

  describe(`${target.name}: LLM conformance`, () => {
    beforeAll(async () => {
      baseUrl = await sim.start();
      sim.addKey(KEY);
    });
    afterAll(() => sim.stop());
    beforeEach(() => sim.reset());

    describe('golden transcripts from the vendor documentation', () => {
      for (const golden of target.goldens) {
        const raw = readFileSync(path.join(target.fixturesDir, golden.file), 'utf8');
        const variants: Array<[string, string, number]> = [
          ['as documented', raw, 7],
          ['with CRLF, keep-alive comments and one-byte writes', roughened(raw), 1],
        ];
        for (const [how, transcript, bytes] of variants) {
          it(`${golden.file} ${how}`, async () => {
            sim.pacing.replayChunkBytes = bytes;
            sim.setScript('*', [{ replaySse: transcript }]);
            const outcome = await collect(adapter.stream(request()));
            const expected = golden.expect;
            if ('error' in expected) {
              expect(outcome.text).toBe(expected.textBeforeError);
              expect(providerError(outcome).retryable).toBe(expected.error.retryable);
              expect(outcome.done).toBeUndefined();
              return;
            }
            expect(outcome.error).toBeUndefined();
            expect(outcome.text).toBe(expected.text);
            expect(outcome.toolCalls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) }))).toEqual(
              expected.toolCalls,
            );
            expect(outcome.done?.finishReason).toBe(expected.finishReason);
            expect(outcome.done?.usage).toEqual(expected.usage);
            // All text first, then the tool calls, then one `done`.
            const kinds = outcome.events.map((e) => e.type);
            const rank = { text: 0, tool_call: 1, done: 2 };
            expect(kinds).toEqual([...kinds].sort((a, b) => rank[a] - rank[b]));
            expect(kinds.filter((k) => k === 'done')).toEqual(['done']);
          });
        }
      }

      it('a transcript cut before its end marker is a retryable failure, after the text it had', async () => {
        const golden = target.goldens.find((g) => 'text' in g.expect && g.expect.text !== '');
        expect(golden).toBeDefined();
        const raw = readFileSync(path.join(target.fixturesDir, golden!.file), 'utf8');
        const cut = raw.slice(0, raw.lastIndexOf('data:'));
        sim.setScript('*', [{ replaySse: cut }]);
        const outcome = await collect(adapter.stream(request()));
        expect(outcome.text).toBe((golden!.expect as { text: string }).text);
        expect(providerError(outcome).retryable).toBe(true);
        expect(outcome.done).toBeUndefined();
        expect(outcome.toolCalls).toEqual([]);
      });
    });

    describe('streaming', () => {
      it('yields text while the answer is still being written, then done with usage and timing', async () => {
        sim.pacing.tokensPerSecond = 20;
        const text = 'One two three four five six.';
        sim.setScript(KEY, [{ text }]);
        const textEvents: string[] = [];
        let streamingAtFirstText: boolean | undefined;
        let done: Extract<LlmEvent, { type: 'done' }> | undefined;
        for await (const event of adapter.stream(request())) {
          if (event.type === 'text') {
            streamingAtFirstText ??= !sim.requests[0]!.completed;
            textEvents.push(event.text);
          }
          if (event.type === 'done') done = event;
        }
        expect(textEvents.length).toBeGreaterThan(1);
        expect(textEvents.join('')).toBe(text);
        expect(streamingAtFirstText).toBe(true);
        expect(done?.finishReason).toBe('stop');
        expect(done?.usage?.completionTokens).toBeGreaterThan(0);
        const { startedAt, firstByteAt, endedAt } = done!.timing;
        expect(firstByteAt).toBeGreaterThanOrEqual(startedAt);
        expect(endedAt).toBeGreaterThanOrEqual(firstByteAt!);
      });

      it('assembles tool calls from their fragments and gives them after the text', async () => {
        sim.setScript(KEY, [
          {
            text: 'Let me look that up.',
            toolCalls: [
              { name: 'lookup_order', arguments: { order_id: 'A-1042', include: ['items', 'status'] } },
              { name: 'get_time', arguments: {} },
            ],
          },
        ]);
        const outcome = await collect(adapter.stream(request()));
        expect(outcome.error).toBeUndefined();
        expect(outcome.text).toBe('Let me look that up.');
        expect(outcome.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
          ['lookup_order', { order_id: 'A-1042', include: ['items', 'status'] }],
          ['get_time', {}],
        ]);
        expect(new Set(outcome.toolCalls.map((c) => c.id)).size).toBe(2);
        expect(outcome.events.map((e) => e.type)).toEqual([
          ...outcome.events.filter((e) => e.type === 'text').map(() => 'text'),
          'tool_call',
          'tool_call',
          'done',
        ]);
        expect(outcome.done?.finishReason).toBe('tool_calls');
      });

      it('keeps concurrent streams apart', async () => {
        sim.pacing.tokensPerSecond = 20;
        const replies = ['Alpha beta gamma.', 'Delta epsilon zeta.', 'Eta theta iota.'];
        sim.setScript(
          KEY,
          replies.map((text) => ({ text })),
        );
        const outcomes = await Promise.all(replies.map(() => collect(adapter.stream(request()))));
        expect(outcomes.map((o) => o.text).sort()).toEqual([...replies].sort());
        expect(sim.peakStreams).toBe(3);
      });
    });

    describe('the request', () => {
      it('carries the messages, tools and parameters in the dialect', async () => {
        const messages: ChatMessage[] = [
          { role: 'system', content: 'You are a booking assistant.' },
          { role: 'user', content: 'Where is order A-1042?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"A-1042"}' }],
          },
          { role: 'tool', toolCallId: 'call_1', content: '{"status":"shipped"}' },
          { role: 'assistant', content: 'It has shipped.' },
          { role: 'user', content: 'Thanks!' },
        ];
        const tools: ToolDefinition[] = [
          {
            name: 'lookup_order',
            description: 'Finds an order by its id.',
            parameters: {
              type: 'object',
              properties: { order_id: { type: 'string' } },
              required: ['order_id'],
            },
          },
        ];
        const params: Required<ReceivedRequest['params']> = {
          temperature: 0.3,
          maxTokens: 150,
          topP: 0.9,
          frequencyPenalty: 0.1,
          presencePenalty: 0.2,
          stop: ['Goodbye'],
        };
        const outcome = await collect(adapter.stream(request({ messages, tools, ...params })));
        expect(outcome.error).toBeUndefined();
        expect(target.received(0)).toEqual({
          key: KEY,
          model: target.model,
          messages,
          tools,
          params: target.carriedParams ? target.carriedParams(params) : params,
        });
      });

      it('sends no key when there is none (a custom model at its own address)', async () => {
        const open = await collect(adapter.stream(request({ apiKey: null })));
        // The simulator holds a key, so it refuses: what matters is what it was (not) sent.
        expect(providerError(open).status).toBe(401);
        expect(target.received(0).key).toBeNull();
      });

      it('sends nothing for a signal aborted before the start', async () => {
        const controller = new AbortController();
        controller.abort();
        const outcome = await collect(adapter.stream(request({ signal: controller.signal })));
        expect(outcome).toEqual({ events: [], text: '', toolCalls: [] });
        expect(sim.requests).toHaveLength(0);
      });
    });

    describe('failures', () => {
      it('429 rate limit: retryable, with the retry-after the vendor asked for', async () => {
        sim.setScript(KEY, [{ error: { status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 1.5 } }]);
        const outcome = await collect(adapter.stream(request()));
        const error = providerError(outcome);
        expect(outcome.events).toEqual([]);
        expect(error.retryable).toBe(true);
        expect(error.status).toBe(429);
        expect(error.code).toBe(target.errorCodes?.rateLimited ?? 'rate_limit_exceeded');
        expect(error.options.retryAfterSeconds).toBe(target.retryAfterSeconds ?? 1.5);
      });

      it('429 insufficient quota: permanent', async () => {
        sim.setScript(KEY, [
          { error: { status: 429, code: 'insufficient_quota', type: 'insufficient_quota' } },
        ]);
        const error = providerError(await collect(adapter.stream(request())));
        expect(error.retryable).toBe(false);
        expect(error.status).toBe(429);
        expect(error.code).toBe(target.errorCodes?.quotaExhausted ?? 'insufficient_quota');
        expect(error.options.retryAfterSeconds).toBeUndefined();
      });

      it('401 wrong key: permanent, and the key is not in the message', async () => {
        const wrong = 'sk-wrong-key-abcdefghijklmnop';
        const error = providerError(await collect(adapter.stream(request({ apiKey: wrong }))));
        expect(error.retryable).toBe(false);
        expect(error.status).toBe(401);
        expect(error.message).not.toContain(wrong);
        expect(error.message).not.toContain(wrong.slice(-4));
      });

      it('400 and 404: permanent; 500, 503 and 408: retryable', async () => {
        const statuses = [400, 404, 500, 503, 408];
        sim.setScript(
          KEY,
          statuses.map((status) => ({ error: { status } })),
        );
        const errors = [];
        for (const _ of statuses) errors.push(providerError(await collect(adapter.stream(request()))));
        expect(errors.map((e) => [e.status, e.retryable])).toEqual([
          [400, false],
          [404, false],
          [500, true],
          [503, true],
          [408, true],
        ]);
      });

      it('an address nobody answers: retryable', async () => {
        const port = await closedPort();
        const error = providerError(
          await collect(adapter.stream(request({ baseUrl: `http://127.0.0.1:${port}/v1` }))),
        );
        expect(error.retryable).toBe(true);
        expect(error.status).toBeUndefined();
      });

      it('no first token in time: a retryable time-out, and the request is dropped', async () => {
        sim.pacing.ttftMs = 5_000;
        const error = providerError(await collect(adapter.stream(request({ firstTokenTimeoutMs: 150 }))));
        expect(error.retryable).toBe(true);
        expect(error.code).toBe('first_token_timeout');
        await vi.waitFor(() => expect(sim.requests[0]!.disconnected).toBe(true));
      });

      it('an error mid-stream: the text so far, then a retryable error and no done', async () => {
        sim.setScript(KEY, [{ text: 'Sure, I can help with that booking.', failAfterTokens: 3 }]);
        const outcome = await collect(adapter.stream(request()));
        expect(outcome.text).toBe('Sure, I can');
        expect(providerError(outcome).retryable).toBe(true);
        expect(outcome.done).toBeUndefined();
      });
    });

    describe('abort', () => {
      it('aborting mid-stream ends the iteration quietly and drops the request', async () => {
        sim.pacing.tokensPerSecond = 20;
        sim.setScript(KEY, [{ text: 'This answer is long enough to be interrupted by the caller.' }]);
        const controller = new AbortController();
        const events: LlmEvent[] = [];
        for await (const event of adapter.stream(request({ signal: controller.signal }))) {
          events.push(event);
          // From outside, as a barge-in does: the adapter is then waiting for the next token.
          setImmediate(() => controller.abort());
        }
        expect(events).toHaveLength(1);
        expect(events[0]!.type).toBe('text');
        await vi.waitFor(() => expect(sim.requests[0]!.disconnected).toBe(true));
        expect(sim.requests[0]!.completed).toBe(false);
      });

      it('a reader that stops early drops the request too', async () => {
        sim.pacing.tokensPerSecond = 20;
        sim.setScript(KEY, [{ text: 'Another long answer that nobody waits to hear to its end.' }]);
        for await (const event of adapter.stream(request())) {
          if (event.type === 'text') break;
        }
        await vi.waitFor(() => expect(sim.requests[0]!.disconnected).toBe(true));
      });
    });
  });
}

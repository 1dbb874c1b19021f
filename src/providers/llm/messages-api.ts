/**
 * llm_b's language models, which speak the messages API: one streamed `POST {baseUrl}/messages` per
 * turn (`x-api-key`, `anthropic-version`, `stream: true`), read as server-sent events whose order is
 * `message_start`, content blocks (start, deltas, stop), `message_delta`, `message_stop`
 * (messages-events.ts reads them). Same contract and shape as the chat completions adapter
 * (openai-chat.ts): text passed on as it arrives, tool calls once the answer has stopped, failures as
 * ProviderErrors that say whether another try may help — 429 (with retry-after) and 529 overloaded
 * may, a spent monthly limit (429 `enforced_spend_limit_reached`), a wrong key or a bad request not.
 *
 * The conversation is rewritten to the API's rules: the system prompt goes to the top-level
 * `system`; tool calls become `tool_use` blocks of the assistant, tool results `tool_result` blocks
 * of a user message; consecutive messages of one role become one message; the first message must be
 * the user's (a call's history starts with the greeting); a tool result whose call fell out of the
 * history window is dropped, as the API refuses a result without its call.
 */
import type { ProviderError, RequestTiming } from '../errors.js';
import { answerErrors, parseJson, refusalError } from './http-answer.js';
import { MessagesEventAssembler } from './messages-events.js';
import { wireParameters } from './parameters.js';
import { SseReader } from './sse.js';
import type { ChatMessage, ChatRequest, LlmAdapter, LlmEvent } from './types.js';

const DEFAULT_FIRST_TOKEN_TIMEOUT_MS = 10_000;
/** The API version the dialect here is written against. */
export const ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` is required by this API; the llm_settings default when a request has none. */
const DEFAULT_MAX_TOKENS = 1000;
/** What opens a conversation that starts with the assistant (a call's greeting): a user turn is required first. */
export const CALL_START = '(The call has started.)';
/** The monthly spend limit: a 429 that waiting minutes will not cure. */
const SPEND_LIMIT_CODES = new Set(['enforced_spend_limit_reached']);

type Block = Record<string, unknown>;

export class MessagesApiAdapter implements LlmAdapter {
  readonly dialect = 'messages';

  readonly #errors: ReturnType<typeof answerErrors>;

  constructor(private readonly provider = 'llm_b') {
    this.#errors = answerErrors(provider);
  }

  async *stream(request: ChatRequest): AsyncGenerator<LlmEvent> {
    if (request.signal.aborted) return;
    const http = new AbortController();
    const abortHttp = () => http.abort();
    request.signal.addEventListener('abort', abortHttp, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      http.abort();
    }, request.firstTokenTimeoutMs ?? DEFAULT_FIRST_TOKEN_TIMEOUT_MS);
    const timing: RequestTiming = { startedAt: performance.now() };
    const events = new MessagesEventAssembler();
    const finish = (): LlmEvent => ({
      type: 'done',
      finishReason: events.finishReason(),
      usage: events.usage(),
      timing,
    });
    // Whatever ends the iteration — the last event, an error, the reader breaking off — ends the request.
    try {
      let response: Response;
      try {
        response = await fetch(`${request.baseUrl.replace(/\/+$/, '')}/messages`, {
          method: 'POST',
          headers: this.#headers(request.apiKey),
          body: JSON.stringify(messagesBody(request, this.provider)),
          signal: http.signal,
        });
      } catch (error) {
        if (request.signal.aborted) return;
        throw timedOut ? this.#errors.timeout(error) : this.#errors.unreachable(error);
      }
      if (!response.ok) throw await this.#refusal(response, request.apiKey);
      if (!response.body) throw this.#errors.broken('the answer had no body');
      if ((response.headers.get('content-type') ?? '').includes('application/json')) {
        // A gateway that ignores `stream: true` answers the whole message at once.
        let text: string;
        try {
          text = await response.text();
        } catch (error) {
          if (request.signal.aborted) return;
          throw timedOut ? this.#errors.timeout(error) : this.#errors.broken('the answer broke off', error);
        }
        const texts: string[] = [];
        for (const event of wholeAsEvents(parseJson(text))) {
          const outcome = events.add(event);
          if (outcome.error) throw this.#errors.reported(outcome.error);
          texts.push(...outcome.text);
          if (outcome.stopped) {
            timing.firstByteAt = timing.endedAt = performance.now();
            for (const piece of texts) yield { type: 'text', text: piece };
            for (const call of events.toolCalls()) yield { type: 'tool_call', call };
            yield finish();
            return;
          }
        }
        throw this.#errors.broken('the answer was no message');
      }

      const reader = response.body.getReader();
      const sse = new SseReader();
      for (;;) {
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (error) {
          if (request.signal.aborted) return;
          throw timedOut ? this.#errors.timeout(error) : this.#errors.broken('the stream broke off', error);
        }
        for (const data of step.done ? sse.end() : sse.push(step.value)) {
          const outcome = events.add(parseJson(data));
          if (outcome.error) throw this.#errors.reported(outcome.error);
          if (outcome.output && timing.firstByteAt === undefined) {
            timing.firstByteAt = performance.now();
            clearTimeout(timer);
          }
          for (const text of outcome.text) {
            yield { type: 'text', text };
            if (request.signal.aborted) return;
          }
          if (outcome.stopped) {
            timing.endedAt = performance.now();
            for (const call of events.toolCalls()) yield { type: 'tool_call', call };
            yield finish();
            return;
          }
        }
        if (step.done) {
          if (request.signal.aborted) return;
          throw this.#errors.broken('the stream ended without message_stop');
        }
      }
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', abortHttp);
      http.abort();
    }
  }

  #headers(apiKey: string | null): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'anthropic-version': ANTHROPIC_VERSION,
    };
    if (apiKey) headers['x-api-key'] = apiKey;
    return headers;
  }

  #refusal(response: Response, apiKey: string | null): Promise<ProviderError> {
    return refusalError(
      this.provider,
      response,
      apiKey,
      (described) => described.code !== undefined && SPEND_LIMIT_CODES.has(described.code),
    );
  }
}

/** The request body in the messages API's terms, with only the parameters llm_b takes (parameters.ts). */
export function messagesBody(request: ChatRequest, provider = 'llm_b'): Record<string, unknown> {
  const params = wireParameters(provider, request);
  const system = request.messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .filter((text) => text !== '')
    .join('\n\n');
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: params.maxTokens ?? DEFAULT_MAX_TOKENS,
    stream: true,
    messages: wireMessages(request.messages),
  };
  if (system !== '') body.system = system;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.parameters,
    }));
  }
  if (params.temperature !== undefined) body.temperature = params.temperature;
  if (params.topP !== undefined) body.top_p = params.topP;
  if (params.stop && params.stop.length > 0) body.stop_sequences = params.stop;
  return body;
}

/** The conversation as alternating user and assistant messages of content blocks, the user's first. */
export function wireMessages(
  messages: ChatMessage[],
): Array<{ role: 'user' | 'assistant'; content: Block[] }> {
  const wire: Array<{ role: 'user' | 'assistant'; content: Block[] }> = [];
  const calls = new Set<string>();
  const add = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = wire.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else wire.push({ role, content: blocks });
  };
  // The API refuses empty text blocks: a turn with nothing said has no text block.
  const text = (content: string): Block[] => (content.trim() === '' ? [] : [{ type: 'text', text: content }]);
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        add('user', text(message.content));
        break;
      case 'assistant': {
        const uses = (message.toolCalls ?? []).map((call) => {
          calls.add(call.id);
          return { type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.arguments) };
        });
        add('assistant', [...text(message.content), ...uses]);
        break;
      }
      case 'tool':
        if (calls.has(message.toolCallId)) {
          add('user', [{ type: 'tool_result', tool_use_id: message.toolCallId, content: message.content }]);
        }
        break;
    }
  }
  if (wire[0]?.role === 'assistant')
    wire.unshift({ role: 'user', content: [{ type: 'text', text: CALL_START }] });
  return wire;
}

/** A tool call's arguments as the object `tool_use.input` must be (`{}` for text that is no JSON object). */
function inputOf(args: string): Record<string, unknown> {
  const parsed = parseJson(args);
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}

/** A whole (non-streamed) message read as the events a stream of it would have been. */
function wholeAsEvents(message: unknown): unknown[] {
  if (typeof message !== 'object' || message === null) return [];
  const record = message as Record<string, unknown>;
  if (record.type === 'error') return [record];
  if (record.type !== 'message' || !Array.isArray(record.content)) return [];
  // A block's start carries all of it: the text, or the tool call with its whole input.
  const blocks = (record.content as Block[]).map((block, index) => ({
    type: 'content_block_start',
    index,
    content_block: block,
  }));
  return [
    { type: 'message_start', message: { usage: record.usage } },
    ...blocks,
    { type: 'message_delta', delta: { stop_reason: record.stop_reason }, usage: record.usage },
    { type: 'message_stop' },
  ];
}

/**
 * The language models that speak the OpenAI chat completions dialect (llm_a, llm_c, llm_d, llm_e and
 * custom endpoints): one streamed `POST {baseUrl}/chat/completions` per turn, read as server-sent
 * events. Text is passed on as it arrives, because the call runtime starts speaking at the first
 * sentence; tool calls only once the stream has finished, because their arguments are JSON that is
 * complete only then. Failures become ProviderErrors that say whether trying again (the next key, the
 * fallback provider) may help: a rate limit may, an exhausted quota or a wrong key will not.
 */
import type { ProviderError, RequestTiming } from '../errors.js';
import { answerErrors, parseJson, quotaExhausted, refusalError } from './http-answer.js';
import { ChatChunkAssembler } from './openai-chat-chunks.js';
import { wireParameters } from './parameters.js';
import { SseReader } from './sse.js';
import type { ChatMessage, ChatRequest, LlmAdapter, LlmEvent } from './types.js';

const DEFAULT_FIRST_TOKEN_TIMEOUT_MS = 10_000;

export { retryAfterSeconds } from './http-answer.js';

export class OpenAiChatAdapter implements LlmAdapter {
  readonly dialect = 'openai-chat';

  /** `provider` names the vendor in errors (llm_a, custom…). */
  readonly #errors: ReturnType<typeof answerErrors>;

  constructor(private readonly provider: string) {
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
    // Whatever ends the iteration — the last event, an error, the reader breaking off — ends the request.
    try {
      let response: Response;
      try {
        response = await fetch(completionsUrl(request.baseUrl), {
          method: 'POST',
          headers: this.#headers(request.apiKey),
          body: JSON.stringify(requestBody(request, this.provider)),
          signal: http.signal,
        });
      } catch (error) {
        if (request.signal.aborted) return;
        throw timedOut ? this.#errors.timeout(error) : this.#errors.unreachable(error);
      }
      if (!response.ok) {
        throw await this.#refusal(response, request.apiKey);
      }
      if (!response.body) throw this.#errors.broken('the answer had no body');
      if ((response.headers.get('content-type') ?? '').includes('application/json')) {
        // An endpoint that ignores `stream: true` answers the whole completion at once.
        const chunks = new ChatChunkAssembler();
        let text: string;
        try {
          text = await response.text();
        } catch (error) {
          if (request.signal.aborted) return;
          throw timedOut ? this.#errors.timeout(error) : this.#errors.broken('the answer broke off', error);
        }
        const whole = parseJson(text) as { choices?: unknown; error?: unknown } | undefined;
        if (!Array.isArray(whole?.choices) && !whole?.error)
          throw this.#errors.broken('the answer was no completion');
        const outcome = chunks.add(wholeAsChunk(whole));
        if (outcome.error) throw this.#errors.reported(outcome.error);
        timing.firstByteAt = timing.endedAt = performance.now();
        for (const piece of outcome.text) yield { type: 'text', text: piece };
        for (const call of chunks.toolCalls()) yield { type: 'tool_call', call };
        yield { type: 'done', finishReason: chunks.finishReason(), usage: chunks.usage(), timing };
        return;
      }

      const reader = response.body.getReader();
      const sse = new SseReader();
      const chunks = new ChatChunkAssembler();
      for (;;) {
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (error) {
          if (request.signal.aborted) return;
          throw timedOut ? this.#errors.timeout(error) : this.#errors.broken('the stream broke off', error);
        }
        for (const data of step.done ? sse.end() : sse.push(step.value)) {
          if (data.trim() === '[DONE]') {
            timing.endedAt = performance.now();
            for (const call of chunks.toolCalls()) yield { type: 'tool_call', call };
            yield { type: 'done', finishReason: chunks.finishReason(), usage: chunks.usage(), timing };
            return;
          }
          const outcome = chunks.add(parseJson(data));
          if (outcome.error) throw this.#errors.reported(outcome.error);
          if (outcome.output && timing.firstByteAt === undefined) {
            timing.firstByteAt = performance.now();
            clearTimeout(timer);
          }
          for (const text of outcome.text) {
            yield { type: 'text', text };
            if (request.signal.aborted) return;
          }
        }
        if (step.done) {
          if (request.signal.aborted) return;
          throw this.#errors.broken('the stream ended without [DONE]');
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
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    return headers;
  }

  /** The error for an answer that is not a stream: retryable or not by its status and the vendor's code. */
  #refusal(response: Response, apiKey: string | null): Promise<ProviderError> {
    return refusalError(this.provider, response, apiKey, quotaExhausted);
  }
}

function completionsUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
}

/**
 * The request body: the contract's names in the dialect's, optional parameters only when set and
 * only those `provider` takes (parameters.ts). Usage is asked for from every vendor: OpenAI, Gemini,
 * Groq and DeepSeek all accept `stream_options.include_usage` (Groq also puts it under `x_groq`).
 */
export function requestBody(request: ChatRequest, provider: string): Record<string, unknown> {
  const params = wireParameters(provider, request);
  const body: Record<string, unknown> = {
    model: request.model,
    stream: true,
    stream_options: { include_usage: true },
    messages: request.messages.map(wireMessage),
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  const optional: Array<[string, unknown]> = [
    ['temperature', params.temperature],
    ['max_tokens', params.maxTokens],
    ['top_p', params.topP],
    ['frequency_penalty', params.frequencyPenalty],
    ['presence_penalty', params.presencePenalty],
    ['stop', params.stop && params.stop.length > 0 ? params.stop : undefined],
  ];
  for (const [name, value] of optional) if (value !== undefined) body[name] = value;
  return body;
}

function wireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      if (!message.toolCalls || message.toolCalls.length === 0) {
        return { role: 'assistant', content: message.content };
      }
      return {
        role: 'assistant',
        // A turn that only called tools has no text: the dialect wants null there, not ''.
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    default:
      return { role: message.role, content: message.content };
  }
}

/** A whole chat.completion read as one chunk: its message is the delta of everything. */
function wholeAsChunk(completion: unknown): unknown {
  if (typeof completion !== 'object' || completion === null) return completion;
  const record = completion as { choices?: unknown; error?: unknown; usage?: unknown };
  if (!Array.isArray(record.choices)) return record;
  return {
    ...record,
    choices: record.choices.map((choice: { message?: unknown }) => ({ ...choice, delta: choice?.message })),
  };
}

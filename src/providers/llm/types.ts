/**
 * The contract of a language model in a live call: one streamed completion per request. `stream`
 * returns at once; iterating it sends the request and yields text as it arrives, each tool call once
 * it is complete (its arguments joined from their fragments), then `done`. Errors are ProviderErrors
 * thrown by the iterator: before the first event for a refused or failed request (429 with
 * `retryAfterSeconds`, 5xx, network and time-outs retryable; 400/401/403 and exhausted quota
 * permanent), or later when the stream breaks (no `[DONE]`, an error event). Aborting `signal` stops
 * the request and ends the iteration without an error.
 */
import type { RequestTiming } from '../errors.js';

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text (the caller parses it). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

/** The sampling parameters an assistant's llm_settings give a request. */
export interface LlmParameters {
  temperature?: number;
  maxTokens?: number;
  topP?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  stop?: string[];
}

export interface ChatRequest extends LlmParameters {
  /** null for a custom model at its own address that needs no key. */
  apiKey: string | null;
  /** The provider's base URL (…/v1), or the assistant's own `llm_provider_config.base_url`. */
  baseUrl: string;
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  signal: AbortSignal;
  /** How long to wait for the first event before failing with a retryable time-out (default 10000 ms). */
  firstTokenTimeoutMs?: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export type LlmEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | {
      type: 'done';
      finishReason: FinishReason;
      usage?: { promptTokens: number; completionTokens: number };
      timing: RequestTiming;
    };

export interface LlmAdapter {
  /** The dialect this adapter speaks ('openai-chat' for the OpenAI-compatible ids, 'messages' for llm_b). */
  readonly dialect: string;
  stream(request: ChatRequest): AsyncIterable<LlmEvent>;
}

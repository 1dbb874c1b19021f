/**
 * The events of a streamed answer of llm_b's messages API, put together: text as it comes, tool
 * calls assembled from their `input_json_delta` pieces, the stop reason, the token usage, and the
 * end. Kept apart from the HTTP side (messages-api.ts) as the chat completions chunks are, so the
 * dialect's rules live in one place:
 * - every event names its `type` in its data (the SSE `event:` line says the same), and new event
 *   types may appear at any time: unknown ones are ignored, as the vendor's versioning policy asks;
 * - `content_block_start` opens block `index` (text, or tool_use with its id and name); its deltas
 *   (`text_delta`, `input_json_delta` with `partial_json`, and `thinking_delta`/`signature_delta`,
 *   which are not for the caller's ears) follow; `content_block_stop` closes it;
 * - `message_start` carries the input tokens, `message_delta` the stop reason and the output tokens
 *   so far (cumulative: the last one counts), `message_stop` ends the answer;
 * - `ping` keeps the connection alive; `error` (e.g. `overloaded_error`) ends it mid-stream.
 */
import type { FinishReason, ToolCall } from './types.js';

export interface MessagesOutcome {
  /** New text, in order. */
  text: string[];
  /** Whether the event carried model output (text or a tool call): the first token. */
  output: boolean;
  /** `message_stop` arrived: the answer is complete. */
  stopped: boolean;
  /** A failure the stream reported (an `error` event). */
  error?: { message: string; type?: string };
}

interface ToolBlock {
  id: string;
  name: string;
  /** The `partial_json` pieces so far. */
  json: string;
  /** The input the block started with (a proxy may send it whole there, with no deltas). */
  initial: unknown;
}

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export class MessagesEventAssembler {
  readonly #tools = new Map<number, ToolBlock>();
  #stopReason: string | undefined;
  #inputTokens: number | undefined;
  #outputTokens: number | undefined;

  /** Takes one parsed `data:` payload. */
  add(event: unknown): MessagesOutcome {
    const outcome: MessagesOutcome = { text: [], output: false, stopped: false };
    if (typeof event !== 'object' || event === null) return outcome;
    const record = event as Record<string, unknown>;
    switch (record.type) {
      case 'message_start': {
        const message = record.message as { usage?: unknown } | undefined;
        this.#takeUsage(message?.usage);
        break;
      }
      case 'content_block_start': {
        const block = record.content_block as Record<string, unknown> | undefined;
        const index = typeof record.index === 'number' ? record.index : this.#tools.size;
        if (block?.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          outcome.text.push(block.text);
          outcome.output = true;
        }
        if (block?.type === 'tool_use') {
          this.#tools.set(index, {
            id: typeof block.id === 'string' ? block.id : '',
            name: typeof block.name === 'string' ? block.name : '',
            json: '',
            initial: block.input,
          });
          outcome.output = true;
        }
        break;
      }
      case 'content_block_delta': {
        const delta = record.delta as Record<string, unknown> | undefined;
        if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') {
          outcome.text.push(delta.text);
          outcome.output = true;
        }
        if (delta?.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          const tool = typeof record.index === 'number' ? this.#tools.get(record.index) : undefined;
          if (tool) tool.json += delta.partial_json;
          if (delta.partial_json !== '') outcome.output = true;
        }
        break;
      }
      case 'message_delta': {
        const delta = record.delta as { stop_reason?: unknown } | undefined;
        if (typeof delta?.stop_reason === 'string') this.#stopReason = delta.stop_reason;
        this.#takeUsage(record.usage);
        break;
      }
      case 'message_stop':
        outcome.stopped = true;
        break;
      case 'error':
        outcome.error = describeError(record.error);
        break;
      default:
      // `ping`, `content_block_stop` and event types added later carry nothing for the caller.
    }
    return outcome;
  }

  /** The complete tool calls, in block order (call once the answer has stopped). */
  toolCalls(): ToolCall[] {
    return [...this.#tools.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, tool]) => ({
        id: tool.id || `toolu_${index}`,
        name: tool.name,
        arguments: argumentsOf(tool),
      }));
  }

  finishReason(): FinishReason {
    if (this.#stopReason === undefined) return this.#tools.size > 0 ? 'tool_calls' : 'stop';
    return STOP_REASONS[this.#stopReason] ?? 'other';
  }

  usage(): { promptTokens: number; completionTokens: number } | undefined {
    if (this.#inputTokens === undefined || this.#outputTokens === undefined) return undefined;
    return { promptTokens: this.#inputTokens, completionTokens: this.#outputTokens };
  }

  #takeUsage(usage: unknown): void {
    if (typeof usage !== 'object' || usage === null) return;
    const record = usage as Record<string, unknown>;
    const count = (name: string) => (typeof record[name] === 'number' ? (record[name] as number) : 0);
    // Cached prompt tokens are prompt tokens too: the three together are what the model read.
    if (typeof record.input_tokens === 'number') {
      this.#inputTokens =
        record.input_tokens + count('cache_creation_input_tokens') + count('cache_read_input_tokens');
    }
    if (typeof record.output_tokens === 'number') this.#outputTokens = record.output_tokens;
  }
}

/** The JSON text of a tool call's input: its pieces joined, or the input it started with; `{}` for none. */
function argumentsOf(tool: ToolBlock): string {
  if (tool.json.trim() !== '') return tool.json;
  if (typeof tool.initial === 'object' && tool.initial !== null && Object.keys(tool.initial).length > 0) {
    return JSON.stringify(tool.initial);
  }
  return '{}';
}

function describeError(error: unknown): { message: string; type?: string } {
  const record = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  return {
    message:
      typeof record.message === 'string' ? record.message.slice(0, 200) : 'the stream reported an error',
    type: typeof record.type === 'string' ? record.type : undefined,
  };
}

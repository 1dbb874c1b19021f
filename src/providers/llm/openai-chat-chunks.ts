/**
 * The chunks of a streamed chat completion (the OpenAI-compatible dialect), put together: text as it
 * comes, tool calls assembled from their fragments, the finish reason and the token usage. Kept apart
 * from the HTTP side so the differences between the compatible vendors live in one place:
 * - the usage arrives in a last chunk with `choices: []` (OpenAI), in the finishing chunk itself, or
 *   under `x_groq.usage` (Groq's older API);
 * - a tool call's fragments are matched by `index`; Gemini's compatible endpoint omits `index`, sends
 *   a whole call in one delta, and finishes such a turn with `stop` rather than `tool_calls`; Groq
 *   sends a whole call in one delta too, with its index;
 * - only `delta.content` is spoken: DeepSeek's reasoner streams its thinking in
 *   `delta.reasoning_content` first, which the caller must not hear;
 * - a mid-stream failure is an event `{"error": {...}}` (OpenAI), or `finish_reason: "error"`
 *   (OpenRouter-style gateways).
 */
import type { FinishReason, ToolCall } from './types.js';

/** What one chunk added, for the adapter to pass on. */
export interface ChunkOutcome {
  /** New text, in order. */
  text: string[];
  /** Whether the chunk carried model output (text or a tool call fragment): the first token. */
  output: boolean;
  /** A failure the stream reported (an error event or an error finish). */
  error?: { message: string; code?: string; type?: string };
}

interface ToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: unknown };
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

export class ChatChunkAssembler {
  readonly #calls = new Map<number, PartialCall>();
  #lastSlot: number | undefined;
  #finish: string | undefined;
  #usage: { promptTokens: number; completionTokens: number } | undefined;

  /** Takes one parsed `data:` payload. */
  add(chunk: unknown): ChunkOutcome {
    const outcome: ChunkOutcome = { text: [], output: false };
    if (typeof chunk !== 'object' || chunk === null) return outcome;
    const record = chunk as Record<string, unknown>;
    if (record.error !== undefined && record.error !== null) {
      outcome.error = describeStreamError(record.error);
      return outcome;
    }
    this.#takeUsage(record.usage ?? (record.x_groq as Record<string, unknown> | undefined)?.usage);
    const choices = Array.isArray(record.choices) ? record.choices : [];
    // Only the first choice is ours: requests never ask for `n` > 1.
    const choice = choices.find((c) => (c as { index?: number })?.index === 0 || choices.length === 1) as
      | { delta?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }
      | undefined;
    if (!choice) return outcome;
    const content = choice.delta?.content;
    if (typeof content === 'string' && content !== '') {
      outcome.text.push(content);
      outcome.output = true;
    }
    const toolCalls = choice.delta?.tool_calls;
    if (Array.isArray(toolCalls)) {
      toolCalls.forEach((fragment, position) => {
        if (this.#addFragment(fragment as ToolCallDelta, position, toolCalls.length)) outcome.output = true;
      });
    }
    if (typeof choice.finish_reason === 'string') {
      this.#finish = choice.finish_reason;
      if (choice.finish_reason === 'error') {
        outcome.error = { message: 'the model stopped with an error', code: 'finish_reason_error' };
      }
    }
    return outcome;
  }

  /** The complete tool calls, in index order (call once the stream has finished). */
  toolCalls(): ToolCall[] {
    return [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([slot, call]) => ({ id: call.id || `call_${slot}`, name: call.name, arguments: call.arguments }));
  }

  /** The finish reason in the contract's terms. A turn that produced tool calls is a tool-call turn. */
  finishReason(): FinishReason {
    if (this.#calls.size > 0 && (this.#finish === undefined || this.#finish === 'stop')) return 'tool_calls';
    if (this.#finish === undefined) return 'stop';
    return FINISH_REASONS[this.#finish] ?? 'other';
  }

  usage(): { promptTokens: number; completionTokens: number } | undefined {
    return this.#usage;
  }

  /** Returns whether the fragment carried anything of the call (a name or arguments). */
  #addFragment(fragment: ToolCallDelta, position: number, count: number): boolean {
    if (typeof fragment !== 'object' || fragment === null) return false;
    const slot = this.#slotOf(fragment, position, count);
    let call = this.#calls.get(slot);
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.#calls.set(slot, call);
    }
    this.#lastSlot = slot;
    if (typeof fragment.id === 'string' && fragment.id !== '') call.id = fragment.id;
    const name = fragment.function?.name;
    if (typeof name === 'string' && name !== '') call.name = name;
    const args = fragment.function?.arguments;
    // Some compatible endpoints send the arguments as an object instead of JSON text.
    const piece =
      typeof args === 'string' ? args : args === undefined || args === null ? '' : JSON.stringify(args);
    call.arguments += piece;
    return piece !== '' || (typeof name === 'string' && name !== '');
  }

  /**
   * Which call a fragment belongs to: its `index`; without one, the call with the same id, a new
   * call when it brings a new id, its position when the delta holds several, else the call the
   * previous fragment continued.
   */
  #slotOf(fragment: ToolCallDelta, position: number, count: number): number {
    if (typeof fragment.index === 'number') return fragment.index;
    if (typeof fragment.id === 'string' && fragment.id !== '') {
      for (const [slot, call] of this.#calls) if (call.id === fragment.id) return slot;
      return this.#calls.size === 0 ? 0 : Math.max(...this.#calls.keys()) + 1;
    }
    if (count > 1 || this.#lastSlot === undefined) return position;
    return this.#lastSlot;
  }

  #takeUsage(usage: unknown): void {
    if (typeof usage !== 'object' || usage === null) return;
    const { prompt_tokens: prompt, completion_tokens: completion } = usage as Record<string, unknown>;
    if (typeof prompt === 'number' && typeof completion === 'number') {
      this.#usage = { promptTokens: prompt, completionTokens: completion };
    }
  }
}

function describeStreamError(error: unknown): { message: string; code?: string; type?: string } {
  if (typeof error === 'string') return { message: error.slice(0, 200) };
  const record = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  return {
    message:
      typeof record.message === 'string' ? record.message.slice(0, 200) : 'the stream reported an error',
    code:
      typeof record.code === 'string' || typeof record.code === 'number' ? String(record.code) : undefined,
    type: typeof record.type === 'string' ? record.type : undefined,
  };
}

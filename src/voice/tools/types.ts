/**
 * The contract of a tool the language model may call in a live call, beyond the built-in end_call and
 * transfer_call (answer-actions.ts): custom HTTP and serverless tools (custom-tools), the graph's
 * update_context, and the keypad's collect_digits and send_digits. The session runs the calls of one
 * answer together, tells the caller a short filler when they take longer than FILLER_AFTER_MS,
 * records each on the call (`call.tool`), gives the model the results and asks it again — so a tool
 * never speaks for itself: it returns what the model is told.
 *
 * A tool never throws for a failure the model should hear about (a time-out, a refused URL, a 500):
 * it returns `ok: false` with a result that says what went wrong in words the model can use. A throw
 * is a bug; the session still tells the model the tool failed, and logs it.
 */
import type { ToolDefinition } from '../../providers/llm/types.js';

/** A tool still running after this long: the caller hears the filler (runtime.md §4). */
export const FILLER_AFTER_MS = 1_500;
/** What the caller hears then, unless the tool has its own. */
export const DEFAULT_FILLER = 'One moment, please.';
/** At most this many rounds of tool calls in one answer: a model that keeps calling is cut off. */
export const MAX_TOOL_ROUNDS = 5;

export interface CallTool {
  /** What the model is shown (its name is unique in the call). */
  definition: ToolDefinition;
  /** What the caller hears while it runs long; '' for nothing (default DEFAULT_FILLER). */
  filler?: string;
  /** Runs one call; `args` are the model's arguments parsed from JSON ({} when unreadable). */
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutcome>;
}

export interface ToolContext {
  /** Aborted when the caller interrupts the answer or the call ends: stop and return. */
  signal: AbortSignal;
  /** The call the tool runs in. */
  callId: number;
  /** What a tool may ask of the call itself (keypad tools). */
  call: CallControls;
}

/** What the call offers its tools (implemented by the session; see keypad.ts). */
export interface CallControls {
  /**
   * Plays DTMF tones to the other side (0-9, *, #, A-D; `w` waits 0.5 s): by the carrier's command,
   * or in-band after what the assistant is saying. Throws when they cannot be sent.
   */
  sendDigits(digits: string, signal: AbortSignal): Promise<void>;
  /**
   * Waits for the caller to key digits: resolves with them when `maxDigits` are in, when the
   * terminator is pressed (not included; '' when it came first), or when `timeoutMs` passes without
   * a key (null when none came).
   */
  collectDigits(
    options: { maxDigits: number; terminator?: string; timeoutMs: number },
    signal: AbortSignal,
  ): Promise<string | null>;
}

export interface ToolOutcome {
  /** What the model is told the tool returned: text, usually JSON. */
  result: string;
  /** False when the tool failed (the result says how). */
  ok: boolean;
  /** Recorded on the call with its `call.tool` event, beside name, arguments, ok and duration. Never secrets. */
  record?: Record<string, unknown>;
}

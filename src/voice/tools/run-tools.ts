/**
 * Runs the tool calls of one answer: all at once, each bounded by the turn's abort signal, a filler
 * said once when any is still running after FILLER_AFTER_MS, and one `call.tool` record each. What a
 * tool returns is what the model is told; a tool the call does not have, or one that throws, is told
 * to the model as a failure — never a crash, never silence.
 */
import type { ToolCall } from '../../providers/llm/types.js';
import {
  type CallControls,
  type CallTool,
  DEFAULT_FILLER,
  FILLER_AFTER_MS,
  type ToolOutcome,
} from './types.js';

/** How much of a tool's arguments and result the call's record keeps. */
const RECORDED_CHARS = 2_000;

export interface ToolRun {
  call: ToolCall;
  outcome: ToolOutcome;
  durationMs: number;
}

export interface RunToolsOptions {
  tools: readonly CallTool[];
  signal: AbortSignal;
  callId: number;
  controls: CallControls;
  clock: () => number;
  /** Say this now: the tools are taking a while. */
  filler(text: string): void;
  /** Record a `call.tool` event. */
  record(data: Record<string, unknown>): void;
  log: { warn(data: object, message: string): void };
}

export async function runTools(calls: readonly ToolCall[], options: RunToolsOptions): Promise<ToolRun[]> {
  const byName = new Map(options.tools.map((tool) => [tool.definition.name, tool]));
  const running = new Set<string>();
  const timer = setTimeout(() => {
    if (options.signal.aborted || running.size === 0) return;
    // The first running tool's own filler, when it has one ('' says nothing).
    const tool = calls.map((call) => byName.get(call.name)).find((t) => t && running.has(t.definition.name));
    const text = tool?.filler ?? DEFAULT_FILLER;
    if (text) options.filler(text);
  }, FILLER_AFTER_MS);
  try {
    return await Promise.all(
      calls.map(async (call) => {
        const startedAt = options.clock();
        const tool = byName.get(call.name);
        running.add(call.name);
        const args = parseArguments(call.arguments);
        let outcome: ToolOutcome;
        try {
          outcome = tool
            ? await tool.run(args, { signal: options.signal, callId: options.callId, call: options.controls })
            : { ok: false, result: `The tool ${call.name} is not available in this call.` };
        } catch (error) {
          options.log.warn({ err: error, tool: call.name }, 'a tool threw');
          outcome = { ok: false, result: `The tool ${call.name} failed.` };
        } finally {
          running.delete(call.name);
        }
        const durationMs = Math.round(options.clock() - startedAt);
        if (!options.signal.aborted) {
          options.record({
            name: call.name,
            arguments: clip(JSON.stringify(args)),
            ok: outcome.ok,
            duration_ms: durationMs,
            result: clip(outcome.result),
            ...outcome.record,
          });
        }
        return { call, outcome, durationMs };
      }),
    );
  } finally {
    clearTimeout(timer);
  }
}

/** The model's arguments as an object; {} when they are not a JSON object. */
export function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function clip(text: string): string {
  return text.length > RECORDED_CHARS ? `${text.slice(0, RECORDED_CHARS)}…` : text;
}

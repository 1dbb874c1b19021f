/**
 * What the session does with a finished answer beyond speaking it: the built-in tools the model
 * called (end_call says goodbye and ends the call once it has played, transfer_call says the transfer
 * message and moves the call to a configured number), and the apology when no model answered or none
 * could finish a broken answer, so the caller is never left in silence. Pure: it returns what to say, what to record and what the
 * call does next; the session carries it out (session.ts stays about turn-taking and the audio).
 */
import type { ToolCall, ToolDefinition } from '../providers/llm/types.js';
import type { AnswerResult } from './answer.js';
import { transferTarget } from './conversation.js';

/** Said when the model asks to transfer a call whose line cannot be moved (a web call). */
export const CANNOT_TRANSFER = "I'm sorry, I can't transfer this call.";

export const APOLOGY =
  "I'm sorry, I'm having trouble answering right now. Please give me a moment and try again.";

export interface AnswerActions {
  /** The utterance's whole text: the model's words and whatever is added here. */
  text: string;
  /** Text to send to the voice after the model's own, in order. */
  say: string[];
  /** Call events to record, in order. */
  events: Array<{ type: string; data: Record<string, unknown> }>;
  /** The call ends (or moves) once this utterance has played. */
  finishAfterResponse: boolean;
  /** Where the call moves once the last words have played (transfer_call). */
  transferTo?: string;
}

export function answerActions(
  result: AnswerResult,
  spec: { tools: ToolDefinition[]; goodbyeMessage: string; transferMessage: string; transferable?: boolean },
): AnswerActions {
  if (result.provider === null) {
    // No model answered, or none could finish: say so, rather than leave the caller in silence
    // (after whatever was said before the last model broke off).
    return {
      text: `${result.text} ${APOLOGY}`.trim(),
      say: [APOLOGY],
      events: [
        {
          type: 'call.llm_unavailable',
          data: {
            reason: result.failure?.message ?? 'no language model',
            ...(result.text ? { mid_answer: true } : {}),
          },
        },
      ],
      finishAfterResponse: false,
    };
  }
  const actions: AnswerActions = { text: result.text, say: [], events: [], finishAfterResponse: false };
  const add = (said: string) => {
    actions.say.push(said);
    actions.text = `${actions.text} ${said}`.trim();
  };
  for (const call of result.toolCalls) {
    if (call.name === 'end_call') {
      add(spec.goodbyeMessage);
      actions.finishAfterResponse = true;
      actions.events.push({ type: 'call.tool', data: { name: 'end_call' } });
    } else if (call.name === 'transfer_call') {
      const to = transferTarget(call, spec.tools);
      if (!to) continue;
      if (spec.transferable === false) {
        // The call goes on: the caller is told, and the model learns it from the tool's result.
        add(CANNOT_TRANSFER);
        actions.events.push({
          type: 'call.transfer_refused',
          data: { to, reason: 'this call cannot be transferred' },
        });
        continue;
      }
      add(spec.transferMessage);
      // Said first, then moved: the call ends here by the transfer, not by a hang-up.
      actions.transferTo = to;
      actions.finishAfterResponse = true;
      actions.events.push({ type: 'call.tool', data: { name: 'transfer_call', to } });
    }
  }
  return actions;
}

/** What the conversation is told a tool call returned. */
export function toolResult(call: ToolCall, spec: { transferable?: boolean } = {}): string {
  if (call.name === 'transfer_call' && spec.transferable === false)
    return 'Not done: this call cannot be transferred (it is not a phone call). Keep helping the caller yourself.';
  return call.name === 'end_call' || call.name === 'transfer_call' ? 'done' : 'This tool is not available.';
}

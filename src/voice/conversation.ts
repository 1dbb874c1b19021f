/**
 * What the language model is told: the assistant's system prompt (with the call's template variables
 * and agenda), the built-in tools it may use, and the conversation so far — in which each assistant
 * message is what the caller actually heard, cut where an interruption cut it.
 */
import type { AssistantSettings } from '../domains/assistants/schemas.js';
import { renderTemplate, type TemplateVariables } from '../lib/templates.js';
import type { ChatMessage, ToolCall, ToolDefinition } from '../providers/llm/types.js';

/** The newest messages kept besides the system prompt: a long call must not grow the prompt forever. */
const MAX_HISTORY = 60;

export interface CallContext {
  variables: TemplateVariables;
  agenda?: string;
  /** The call's own (rendered) welcome message, if it was given one. */
  welcomeMessage?: string;
}

/** Renders a template leniently: a variable the call lacks stays empty rather than failing the call. */
export function renderLenient(template: string, variables: TemplateVariables): string {
  try {
    return renderTemplate(template, variables).text;
  } catch {
    return template;
  }
}

export function systemPrompt(settings: AssistantSettings, context: CallContext): string {
  const base = renderLenient(
    settings.llm_settings?.system_prompt ?? 'You are a helpful voice assistant.',
    context.variables,
  );
  const parts = [base];
  if (context.agenda) parts.push(`Agenda for this call: ${context.agenda}`);
  parts.push(
    'You are speaking on a phone call: answer briefly, in plain spoken sentences, without lists, markup or emoji.',
  );
  return parts.join('\n\n');
}

export function welcomeMessage(settings: AssistantSettings, context: CallContext): string {
  return (
    context.welcomeMessage ?? renderLenient(settings.llm_settings?.welcome_message ?? '', context.variables)
  );
}

/** The built-in tools the assistant has enabled, which answer-actions.ts carries out. */
export function builtInTools(settings: AssistantSettings): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  const endCall = settings.tools_settings?.end_call;
  if (endCall?.enabled) {
    tools.push({
      name: 'end_call',
      description: describe('End the call, after saying goodbye.', endCall.scenarios),
      parameters: { type: 'object', properties: { reason: { type: 'string' } } },
    });
  }
  const transfer = settings.tools_settings?.transfer_call;
  if (transfer?.enabled && (transfer.transfer_numbers ?? []).length > 0) {
    tools.push({
      name: 'transfer_call',
      description: describe(
        'Transfer the caller to a person at one of the given numbers.',
        transfer.scenarios,
      ),
      parameters: {
        type: 'object',
        properties: { phone_number: { type: 'string', enum: transfer.transfer_numbers } },
        required: ['phone_number'],
      },
    });
  }
  return tools;
}

function describe(what: string, scenarios: string[] | undefined): string {
  return scenarios && scenarios.length > 0 ? `${what} Use it when: ${scenarios.join('; ')}.` : what;
}

export class Conversation {
  readonly #history: ChatMessage[] = [];

  constructor(private system: string) {}

  messages(): ChatMessage[] {
    // The oldest messages kept never start with a tool result: its call would be missing.
    let history = this.#history.slice(-MAX_HISTORY);
    while (history[0]?.role === 'tool') history = history.slice(1);
    return [{ role: 'system', content: this.system }, ...history];
  }

  /** Another assistant takes the call over (a graph hand-off): its prompt, the same history. */
  setSystem(system: string): void {
    this.system = system;
  }

  user(text: string): void {
    this.#history.push({ role: 'user', content: text });
  }

  /** What the assistant said, as heard; nothing when nothing was heard and no tool was called. */
  assistant(text: string, toolCalls: ToolCall[] = []): void {
    if (!text && toolCalls.length === 0) return;
    this.#history.push({ role: 'assistant', content: text, ...(toolCalls.length > 0 ? { toolCalls } : {}) });
  }

  toolResult(toolCallId: string, content: string): void {
    this.#history.push({ role: 'tool', toolCallId, content });
  }
}

/** The number a transfer_call goes to: one the assistant was given, never another. */
export function transferTarget(call: ToolCall, tools: ToolDefinition[]): string | undefined {
  const allowed = ((
    tools.find((tool) => tool.name === 'transfer_call')?.parameters.properties as
      | { phone_number?: { enum?: string[] } }
      | undefined
  )?.phone_number?.enum ?? []) as string[];
  let wanted: unknown;
  try {
    wanted = (JSON.parse(call.arguments || '{}') as { phone_number?: unknown }).phone_number;
  } catch {
    wanted = undefined;
  }
  // Only a number the assistant was given: the model must not send a caller anywhere else.
  return typeof wanted === 'string' && allowed.includes(wanted) ? wanted : allowed[0];
}

/**
 * The language model adapters, by provider id. The OpenAI-compatible vendors (llm_a, llm_c, llm_d,
 * llm_e) and `custom` endpoints speak one dialect and share one adapter class, each instance naming
 * its provider in the errors it raises and sending only the parameters it takes (parameters.ts);
 * llm_b speaks the messages API.
 */
import { MessagesApiAdapter } from './messages-api.js';
import { OpenAiChatAdapter } from './openai-chat.js';
import type { LlmAdapter } from './types.js';

const OPENAI_COMPATIBLE = ['llm_a', 'llm_c', 'llm_d', 'llm_e', 'custom'] as const;

const adapters = new Map<string, LlmAdapter>([
  ...OPENAI_COMPATIBLE.map((id): [string, LlmAdapter] => [id, new OpenAiChatAdapter(id)]),
  ['llm_b', new MessagesApiAdapter('llm_b')],
]);

/** The adapter for an assistant's `llm_provider`, or undefined for an id nobody speaks. */
export function llmAdapterFor(provider: string): LlmAdapter | undefined {
  return adapters.get(provider);
}

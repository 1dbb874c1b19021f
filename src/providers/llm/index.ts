/**
 * The language model adapters, by provider id. The OpenAI-compatible vendors (llm_a, llm_c, llm_d,
 * llm_e) and `custom` endpoints speak one dialect and share one adapter class, each instance naming
 * its provider in the errors it raises; llm_b speaks another dialect, not built yet.
 */
import { OpenAiChatAdapter } from './openai-chat.js';
import type { LlmAdapter } from './types.js';

const OPENAI_COMPATIBLE = ['llm_a', 'llm_c', 'llm_d', 'llm_e', 'custom'] as const;

const adapters = new Map<string, LlmAdapter>(OPENAI_COMPATIBLE.map((id) => [id, new OpenAiChatAdapter(id)]));

/** The adapter for an assistant's `llm_provider`, or undefined when none speaks its dialect yet. */
export function llmAdapterFor(provider: string): LlmAdapter | undefined {
  return adapters.get(provider);
}

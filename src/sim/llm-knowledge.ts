/**
 * Knowledge in the language model simulator (llm.ts): a scripted reply may say what the request's
 * knowledge passages hold, so a test proves an answer came from retrieval and not from the script
 * alone. `{{knowledge}}` is replaced by the first sentence of the first `<passage>` the request's
 * system text carries (voice/knowledge.ts writes them; chat completions send it as a system message,
 * the messages API in the top-level `system`); a request without one reads "(no knowledge)".
 */
import type { LlmReply } from './llm-replies.js';

const PLACEHOLDER = /\{\{\s*knowledge\s*\}\}/g;
const PASSAGE = /<passage\b[^>]*>\s*([\s\S]*?)\s*<\/passage>/;

/** The text of a message's content: a string, or the text blocks of a content array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('\n');
}

/** Every system instruction of the request, in either dialect. */
function systemText(body: Record<string, unknown> | undefined): string {
  if (!body) return '';
  const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
  return [
    textOf(body.system),
    ...messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content)),
  ].join('\n\n');
}

/** The first sentence of the first passage the request carries, or undefined without one. */
export function firstPassageSentence(body: Record<string, unknown> | undefined): string | undefined {
  const passage = PASSAGE.exec(systemText(body))?.[1];
  if (!passage) return undefined;
  const sentence = /^[\s\S]*?[.!?](?=\s|$)/.exec(passage)?.[0] ?? passage;
  return sentence.replace(/\s+/g, ' ').trim();
}

/** The reply with `{{knowledge}}` filled in from the request (see the module header). */
export function quoteKnowledge(reply: LlmReply, body: Record<string, unknown> | undefined): LlmReply {
  if (!('text' in reply) || typeof reply.text !== 'string' || !reply.text.includes('{{')) return reply;
  const quoted = firstPassageSentence(body) ?? '(no knowledge)';
  return { ...reply, text: reply.text.replace(PLACEHOLDER, () => quoted) };
}

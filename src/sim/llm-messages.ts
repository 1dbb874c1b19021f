/**
 * How the language model simulator (llm.ts) speaks llm_b's messages API (`POST /v1/messages`): the
 * same scripted replies (llm-replies.ts) written in that dialect, so a test scripts a reply once and
 * every language model id hears it in its own wire format.
 * - A streamed reply is `message_start` (input tokens), a `ping`, a text block (`content_block_start`,
 *   one `text_delta` per token, `content_block_stop`), one `tool_use` block per tool call with its
 *   input in many small `input_json_delta` pieces (the first one empty, as the vendor's are),
 *   `message_delta` (stop reason, output tokens), `message_stop`. Every event has its `event:` line.
 * - A reply that fails after some tokens sends an `error` event (`overloaded_error`) and closes.
 * - Errors answered before the stream are `{"type":"error","error":{"type","message"},"request_id"}`
 *   with the vendor's types; an exhausted quota is its monthly spend limit, a 429 whose
 *   `error.details.error_code` is `enforced_spend_limit_reached` and which has no retry-after.
 * - What the real API refuses with 400 is refused here too (invalidMessagesBody): no `max_tokens`,
 *   fields it does not know (penalties), `temperature` with `top_p`, a temperature above 1, a first
 *   message that is not the user's, empty text, a `tool_result` without its `tool_use`.
 */
import type { ServerResponse } from 'node:http';
import { type LlmReply, pause, replay, type StreamContext, wordTokens } from './llm-replies.js';

type ErrorReply = Extract<LlmReply, { error: unknown }>['error'];

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const KNOWN_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'tools',
  'tool_choice',
  'metadata',
  'thinking',
  'service_tier',
]);

/** The reply's tool call input split in pieces of a few characters, as the vendor streams it. */
export function jsonPieces(json: string, size = 6): string[] {
  const pieces = [''];
  for (let i = 0; i < json.length; i += size) pieces.push(json.slice(i, i + size));
  return pieces;
}

export async function writeMessagesStream(
  context: StreamContext,
  reply: Exclude<LlmReply, { error: unknown }>,
): Promise<void> {
  const { res, gone, pacing } = context;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': `req_sim${context.completionId.slice(-6)}`,
  });
  res.flushHeaders();
  await pause(pacing.ttftMs, gone);
  if ('replaySse' in reply) return replay(context, reply.replaySse);

  const gap = pacing.tokensPerSecond > 0 ? 1000 / pacing.tokensPerSecond : 0;
  let tokens = 0;
  /** Writes one event; `paced` events (model output) wait their turn after the first. */
  const send = async (event: Record<string, unknown>, paced = false) => {
    if (gone.aborted) return;
    if (paced && tokens > 0) await pause(gap, gone);
    if (gone.aborted) return;
    res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    if (paced) tokens += 1;
  };

  await send({
    type: 'message_start',
    message: {
      id: context.completionId,
      type: 'message',
      role: 'assistant',
      model: context.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: context.promptTokens, output_tokens: 1 },
    },
  });
  await send({ type: 'ping' });
  let index = 0;
  const text = 'text' in reply && reply.text ? reply.text : '';
  const failAfter = 'failAfterTokens' in reply ? reply.failAfterTokens : undefined;
  if (text !== '') {
    await send({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const [i, token] of wordTokens(text, pacing.wordsPerToken).entries()) {
      if (failAfter !== undefined && i >= failAfter) break;
      await send({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: token } }, true);
    }
    if (failAfter !== undefined) {
      await send({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      res.end();
      return;
    }
    await send({ type: 'content_block_stop', index });
    index += 1;
  }
  const calls = 'toolCalls' in reply ? reply.toolCalls : [];
  for (const call of calls) {
    const json = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    await send({
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: context.nextCallId(), name: call.name, input: {} },
    });
    for (const piece of jsonPieces(json)) {
      await send(
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } },
        true,
      );
    }
    await send({ type: 'content_block_stop', index });
    index += 1;
  }
  await send({
    type: 'message_delta',
    delta: { stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: tokens },
  });
  await send({ type: 'message_stop' });
  res.end();
}

/** The answer to a request without `stream: true`: one whole message. */
export function messageObject(
  context: Omit<StreamContext, 'res' | 'gone' | 'pacing'>,
  reply: { text?: string; toolCalls?: Array<{ name: string; arguments: string | Record<string, unknown> }> },
): Record<string, unknown> {
  const content: Array<Record<string, unknown>> = [];
  if (reply.text) content.push({ type: 'text', text: reply.text });
  for (const call of reply.toolCalls ?? []) {
    const input = typeof call.arguments === 'string' ? JSON.parse(call.arguments || '{}') : call.arguments;
    content.push({ type: 'tool_use', id: context.nextCallId(), name: call.name, input });
  }
  const outputTokens = wordTokens(reply.text ?? '', 1).length + (reply.toolCalls?.length ?? 0);
  return {
    id: context.completionId,
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: (reply.toolCalls?.length ?? 0) > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: context.promptTokens, output_tokens: outputTokens },
  };
}

/** Writes an error answer in the dialect's shape. */
export function writeMessagesError(res: ServerResponse, error: ErrorReply, requestId: string): void {
  const spent = error.code === 'insufficient_quota';
  const type = error.type && error.type !== 'insufficient_quota' ? error.type : ERROR_TYPES[error.status];
  const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': requestId };
  // The vendor sends whole seconds, and none for a limit that lifts only next month.
  if (error.retryAfterSeconds !== undefined && !spent) {
    headers['retry-after'] = String(Math.ceil(error.retryAfterSeconds));
  }
  const message =
    error.message ??
    (spent
      ? 'You have reached your specified API usage limits.'
      : error.status === 529
        ? 'Overloaded'
        : error.status >= 500
          ? 'Internal server error'
          : `Error ${error.status}`);
  const body = {
    type: 'error',
    error: {
      type: type ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error'),
      message,
      ...(spent ? { details: { error_code: 'enforced_spend_limit_reached' } } : {}),
    },
    request_id: requestId,
  };
  res.writeHead(error.status, headers).end(JSON.stringify(body));
}

/** What the real API refuses with 400 before it streams anything (the part a client can get wrong). */
export function invalidMessagesBody(body: Record<string, unknown> | undefined): string | undefined {
  if (!body) return 'There was an error parsing the body of your request.';
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field)) return `${field}: Extra inputs are not permitted`;
  }
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1)
    return 'max_tokens: Field required';
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1))
    return 'temperature: range: 0..1';
  if (body.temperature !== undefined && body.top_p !== undefined)
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: Field required';
  const uses = new Set<string>();
  for (const [i, message] of (body.messages as Array<Record<string, unknown>>).entries()) {
    if (message?.role !== 'user' && message?.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && message.role !== 'user') return 'messages: first message must use the "user" role';
    const blocks =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (!Array.isArray(blocks) || blocks.length === 0)
      return `messages.${i}: all messages must have non-empty content`;
    for (const block of blocks as Array<Record<string, unknown>>) {
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text.trim() === ''))
        return `messages.${i}: text content blocks must be non-empty`;
      if (block.type === 'tool_use') {
        if (message.role !== 'assistant') return `messages.${i}: tool_use blocks belong to the assistant`;
        if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input))
          return `messages.${i}: tool_use.input: Input should be a valid dictionary`;
        uses.add(String(block.id));
      }
      if (block.type === 'tool_result' && !uses.has(String(block.tool_use_id)))
        return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}`;
    }
    if (i > 0 && (body.messages as Array<Record<string, unknown>>)[i - 1]?.role === message.role)
      return `messages.${i}: roles must alternate between "user" and "assistant"`;
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
    for (const tool of body.tools as Array<Record<string, unknown>>) {
      if (typeof tool?.name !== 'string' || typeof tool.input_schema !== 'object')
        return 'tools: each tool needs a name and an input_schema';
    }
  }
  return undefined;
}

/** The text of a message's content, a string or blocks (for the default answer and the token count). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join(' ');
}

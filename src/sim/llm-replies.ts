/**
 * How the language model simulator (llm.ts) writes one reply as the OpenAI chat completions stream
 * does: a first chunk with the role, the text in word tokens, each tool call as a head fragment (index,
 * id, name, empty arguments) followed by its arguments in several pieces, a finishing chunk, the
 * usage chunk with `choices: []` when the request asked for it, then `data: [DONE]`. A reply may
 * instead fail mid-stream (an error event, then the connection closes without `[DONE]`), hang
 * mid-stream (the connection stays open and silent until the client gives up), or be a
 * recorded transcript written back byte for byte, in small pieces, so that events straddle writes.
 * Every wait ends early when the client has gone.
 */
import type { ServerResponse } from 'node:http';

export type LlmReply =
  /**
   * `failAfterTokens`: an error event and a cut after that many; `stallAfterTokens`: silence until the
   * client leaves. The text may quote the tools' results given in the request (`quoteToolResults`).
   */
  | { text: string; failAfterTokens?: number; stallAfterTokens?: number }
  | { toolCalls: Array<{ name: string; arguments: string | Record<string, unknown> }>; text?: string }
  | {
      error: { status: number; code?: string; type?: string; message?: string; retryAfterSeconds?: number };
    }
  /** A recorded SSE transcript, sent as is (status 200, `text/event-stream`). */
  | { replaySse: string };

export interface StreamPacing {
  /** Milliseconds between the answer's headers and its first token. */
  ttftMs: number;
  /** Tokens per second after the first; 0: as fast as the socket takes them. */
  tokensPerSecond: number;
  /** Words in each text token. */
  wordsPerToken: number;
  /** Bytes per write when replaying a transcript. */
  replayChunkBytes: number;
}

export interface StreamContext {
  res: ServerResponse;
  /** Aborted when the client disconnects: writing stops. */
  gone: AbortSignal;
  pacing: StreamPacing;
  completionId: string;
  model: string;
  includeUsage: boolean;
  promptTokens: number;
  /** Makes the ids of tool calls (`call_…`). */
  nextCallId: () => string;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A stream that hangs: resolves only when the client has gone. */
export function untilGone(gone: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    gone.aborted ? resolve() : gone.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/** Splits text into tokens of `wordsPerToken` words, each keeping the space before it (" there,"). */
export function wordTokens(text: string, wordsPerToken: number): string[] {
  const words = text.match(/\s*\S+/g) ?? [];
  const size = Math.max(1, Math.floor(wordsPerToken));
  const tokens: string[] = [];
  for (let i = 0; i < words.length; i += size) tokens.push(words.slice(i, i + size).join(''));
  return tokens;
}

/** Splits tool call arguments into three pieces or so, as the real stream cuts them mid-token. */
export function argumentPieces(text: string): string[] {
  if (text.length <= 1) return [text];
  const size = Math.ceil(text.length / 3);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Writes a streamed (200) reply. Returns the number of tokens written. */
export async function writeStream(
  context: StreamContext,
  reply: Exclude<LlmReply, { error: unknown }>,
): Promise<number> {
  const { res, gone, pacing } = context;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  await pause(pacing.ttftMs, gone);
  if ('replaySse' in reply) {
    await replay(context, reply.replaySse);
    return 0;
  }
  const gap = pacing.tokensPerSecond > 0 ? 1000 / pacing.tokensPerSecond : 0;
  let tokens = 0;
  const send = async (chunk: Record<string, unknown>) => {
    if (gone.aborted) return;
    if (tokens > 0) await pause(gap, gone);
    if (gone.aborted) return;
    res.write(`data: ${JSON.stringify(frame(context, chunk))}\n\n`);
    tokens += 1;
  };

  await send({ choices: [choice({ role: 'assistant', content: '' })] });
  const text = 'text' in reply && reply.text ? reply.text : '';
  const textTokens = wordTokens(text, pacing.wordsPerToken);
  const failAfter = 'failAfterTokens' in reply ? reply.failAfterTokens : undefined;
  const stallAfter = 'stallAfterTokens' in reply ? reply.stallAfterTokens : undefined;
  for (const [i, token] of textTokens.entries()) {
    if (failAfter !== undefined && i >= failAfter) break;
    if (stallAfter !== undefined && i >= stallAfter) {
      await untilGone(gone);
      res.end();
      return tokens;
    }
    await send({ choices: [choice({ content: token })] });
  }
  if (failAfter !== undefined) {
    if (!gone.aborted) {
      const error = {
        message: 'The server had an error while processing your request.',
        type: 'server_error',
      };
      res.write(`data: ${JSON.stringify({ error: { ...error, param: null, code: null } })}\n\n`);
    }
    res.end();
    return tokens;
  }
  const calls = 'toolCalls' in reply ? reply.toolCalls : [];
  for (const [index, call] of calls.entries()) {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    const head = {
      index,
      id: context.nextCallId(),
      type: 'function',
      function: { name: call.name, arguments: '' },
    };
    await send({
      choices: [choice({ ...(index === 0 ? { role: 'assistant', content: null } : {}), tool_calls: [head] })],
    });
    for (const piece of argumentPieces(args)) {
      await send({ choices: [choice({ tool_calls: [{ index, function: { arguments: piece } }] })] });
    }
  }
  await send({ choices: [choice({}, calls.length > 0 ? 'tool_calls' : 'stop')] });
  if (context.includeUsage && !gone.aborted) {
    const usage = {
      prompt_tokens: context.promptTokens,
      completion_tokens: tokens,
      total_tokens: context.promptTokens + tokens,
    };
    res.write(`data: ${JSON.stringify({ ...frame(context, { choices: [] }), usage })}\n\n`);
  }
  if (!gone.aborted) res.write('data: [DONE]\n\n');
  res.end();
  return tokens;
}

/** Writes the transcript in `replayChunkBytes` pieces, one per turn of the event loop. */
export async function replay(context: StreamContext, raw: string): Promise<void> {
  const bytes = Buffer.from(raw, 'utf8');
  const size = Math.max(1, context.pacing.replayChunkBytes);
  for (let offset = 0; offset < bytes.length && !context.gone.aborted; offset += size) {
    context.res.write(bytes.subarray(offset, offset + size));
    await new Promise((resolve) => setImmediate(resolve));
  }
  context.res.end();
}

/** The answer to a request without `stream: true`: one chat.completion object. */
export function completionObject(
  context: Omit<StreamContext, 'res' | 'gone' | 'pacing'>,
  reply: { text?: string; toolCalls?: Array<{ name: string; arguments: string | Record<string, unknown> }> },
): Record<string, unknown> {
  const calls = (reply.toolCalls ?? []).map((call) => ({
    id: context.nextCallId(),
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const completionTokens = wordTokens(reply.text ?? '', 1).length + calls.length;
  return {
    id: context.completionId,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: context.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? (calls.length > 0 ? null : ''),
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: context.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: context.promptTokens + completionTokens,
    },
  };
}

function choice(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { index: 0, delta, logprobs: null, finish_reason: finishReason };
}

function frame(context: StreamContext, chunk: Record<string, unknown>): Record<string, unknown> {
  return {
    id: context.completionId,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: context.model,
    system_fingerprint: 'fp_sim',
    ...chunk,
    ...(context.includeUsage ? { usage: null } : {}),
  };
}

/** A tool result found in the messages of a request: the tool's name (when known) and its text. */
interface ToolResult {
  name: string | undefined;
  text: string;
}

const blockText = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .filter((block) => block?.type === 'text' && typeof block.text === 'string')
          .map((block) => block.text as string)
          .join('')
      : '';

/** Every tool result in `messages`, in order, in either dialect (tool messages, tool_result blocks). */
export function toolResults(messages: Array<Record<string, unknown>>): ToolResult[] {
  const names = new Map<string, string>();
  const results: ToolResult[] = [];
  for (const message of messages) {
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      if (typeof call?.id === 'string') names.set(call.id, String(call.function?.name));
    }
    if (message.role === 'tool') {
      results.push({ name: names.get(String(message.tool_call_id)), text: blockText(message.content) });
    }
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content as Array<Record<string, unknown>>) {
      if (block?.type === 'tool_use' && typeof block.id === 'string') names.set(block.id, String(block.name));
      if (block?.type === 'tool_result')
        results.push({ name: names.get(String(block.tool_use_id)), text: blockText(block.content) });
    }
  }
  return results;
}

const QUOTE = /\{\{\s*tool_result(?::([A-Za-z0-9_-]+))?((?:\.[A-Za-z0-9_]+)*)\s*\}\}/g;

/**
 * The reply with its text's quotes of tool results filled in from the request, so that a scripted
 * answer can say what a tool returned: `{{tool_result}}` is the last tool result, `{{tool_result:name}}`
 * the last result of that tool, and a `.field.field` after either picks a field of a JSON result. A
 * quote of nothing reads "(no tool result)".
 */
export function quoteToolResults(reply: LlmReply, messages: Array<Record<string, unknown>>): LlmReply {
  if (!('text' in reply) || typeof reply.text !== 'string' || !reply.text.includes('{{')) return reply;
  const results = toolResults(messages);
  const text = reply.text.replace(QUOTE, (_quote, name: string | undefined, path: string) => {
    const found = [...results].reverse().find((result) => name === undefined || result.name === name);
    if (!found) return '(no tool result)';
    if (!path) return found.text;
    let value: unknown;
    try {
      value = JSON.parse(found.text);
    } catch {
      return '(no tool result)';
    }
    for (const key of path.slice(1).split('.')) value = (value as Record<string, unknown> | null)?.[key];
    if (value === undefined) return '(no tool result)';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
  return { ...reply, text };
}

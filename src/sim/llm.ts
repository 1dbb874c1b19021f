/**
 * A local language model for every language model id, one simulator speaking two dialects: the
 * OpenAI chat completions API (`POST /v1/chat/completions`, streamed as server-sent events or answered
 * whole) for llm_a, llm_c, llm_d, llm_e and custom endpoints, and llm_b's messages API
 * (`POST /v1/messages`, written by llm-messages.ts). Tests and local development decide what it
 * answers and how fast, once for both dialects:
 * - keys: with none added, any key (or none) is accepted, as a local model without auth would; once
 *   keys are added, any other key, or none, is refused with 401. The key is the bearer token of a
 *   chat completion, the `x-api-key` header of a messages request;
 * - replies: scripted per key (`setScript(key | '*', replies)`, consumed in order, the key's own
 *   script before the '*' one), then the `respond` hook, then a short answer derived from the last
 *   user message ("You said: … How else can I help?");
 * - a reply is text, tool calls (with optional text before them), an HTTP error (429 with
 *   retry-after, quota, 5xx…), text that fails after some tokens, or a recorded transcript replayed;
 *   its text may quote the tool results the request carries (`{{tool_result:name.field}}`), so that a
 *   scripted answer says what a tool returned, and the knowledge passages it was given
 *   (`{{knowledge}}`, llm-knowledge.ts);
 * - pacing: time to first token, tokens per second, words per token (settable at any time).
 * Every request is recorded (dialect, key, body, whether the client hung up), and concurrent streams
 * counted.
 *
 * The platform's after-call analysis requests (llm-analysis.ts) are answered from the transcript and
 * schema they carry, before any script: a call's scripted replies are never spent on its analysis.
 * `setAnalysisScript` overrides those answers per key and task (a 500, invalid JSON once…). They are
 * recorded apart, in `analysisRequests`, so a test's count of a call's requests is not disturbed by
 * an earlier call's analysis arriving meanwhile.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AnalysisTask } from '../domains/analysis/prompts.js';
import { closeServer, listenOnLoopback } from '../lib/net.js';
import { type AnalysisRequest, analysisAnswer, analysisRequestOf } from './llm-analysis.js';
import { quoteKnowledge } from './llm-knowledge.js';
import {
  contentText,
  invalidMessagesBody,
  messageObject,
  writeMessagesError,
  writeMessagesStream,
} from './llm-messages.js';
import {
  completionObject,
  type LlmReply,
  quoteToolResults,
  type StreamPacing,
  writeStream,
} from './llm-replies.js';

export type { LlmReply, StreamPacing } from './llm-replies.js';

/** Which API a request spoke: chat completions, or llm_b's messages API. */
export type LlmDialect = 'openai-chat' | 'messages';

export interface LlmRecordedRequest {
  dialect: LlmDialect;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The key (bearer token, or `x-api-key` for messages), or null when none was sent. */
  key: string | null;
  /** The JSON body as received (undefined when it was not JSON). */
  body: Record<string, unknown> | undefined;
  model: string | undefined;
  /** The messages as the dialect wrote them (content strings, or messages API content blocks). */
  messages: Array<Record<string, unknown>>;
  tools: Array<Record<string, unknown>>;
  /** The status the simulator answered. */
  status?: number;
  /** The client closed the connection before the answer ended. */
  disconnected: boolean;
  /** An after-call analysis request: its task and what it carries (recorded in `analysisRequests`). */
  analysis?: AnalysisRequest;
  /** The answer was written to its end. */
  completed: boolean;
  at: number;
}

const PATHS: Record<string, LlmDialect> = {
  '/v1/chat/completions': 'openai-chat',
  '/v1/messages': 'messages',
};
const DEFAULT_PACING: StreamPacing = { ttftMs: 0, tokensPerSecond: 0, wordsPerToken: 1, replayChunkBytes: 7 };
const DEFAULT_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'requests',
};

export class LlmSimulator {
  readonly requests: LlmRecordedRequest[] = [];
  /** The after-call analysis requests, apart from the conversation's. */
  readonly analysisRequests: LlmRecordedRequest[] = [];
  /** How fast replies stream; change any field at any time (applies to the next request). */
  pacing: StreamPacing = { ...DEFAULT_PACING };
  readonly #keys = new Set<string>();
  readonly #scripts = new Map<string, LlmReply[]>();
  /** Keyed `<key or *> <task>`. */
  readonly #analysisScripts = new Map<string, LlmReply[]>();
  #respond: ((request: LlmRecordedRequest) => LlmReply | undefined) | undefined;
  #server: Server | undefined;
  #baseUrl = '';
  #active = 0;
  #peak = 0;
  #counter = 0;

  /** The base URL clients are given (…/v1), once started. */
  get baseUrl(): string {
    return this.#baseUrl;
  }

  /** Streams being written right now. */
  get activeStreams(): number {
    return this.#active;
  }

  /** The most streams written at once since the start (or the last `reset`). */
  get peakStreams(): number {
    return this.#peak;
  }

  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#serve(req, res));
    const listening = await listenOnLoopback(this.#server, port);
    this.#baseUrl = `http://127.0.0.1:${listening}/v1`;
    return this.#baseUrl;
  }

  async stop(): Promise<void> {
    await closeServer(this.#server);
  }

  /** Accepts `key` (and, from now on, refuses keys never added). */
  addKey(key: string): void {
    this.#keys.add(key);
  }

  /** The replies for requests made with `key` ('*': any key), consumed in order; replaces any left. */
  setScript(key: string, replies: LlmReply[]): void {
    this.#scripts.set(key, [...replies]);
  }

  /**
   * Replies to the analysis task `task` with `key` ('*': any key), consumed in order before the
   * generated answer: an error (`{ error: { status: 500 } }`), or text that is no valid answer
   * (`{ text: 'not json' }`) to see the platform ask again.
   */
  setAnalysisScript(key: string, task: AnalysisTask, replies: LlmReply[]): void {
    this.#analysisScripts.set(`${key} ${task}`, [...replies]);
  }

  /** Replies left in the script of `key`. */
  scriptLeft(key: string): number {
    return this.#scripts.get(key)?.length ?? 0;
  }

  /** Decides the reply when no script has one; returning undefined falls back to the default answer. */
  respond(fn: ((request: LlmRecordedRequest) => LlmReply | undefined) | undefined): void {
    this.#respond = fn;
  }

  /** Forgets scripts, the hook, recorded requests and the peak, and restores the default pacing. Keys stay. */
  reset(): void {
    this.#scripts.clear();
    this.#analysisScripts.clear();
    this.#respond = undefined;
    this.requests.length = 0;
    this.analysisRequests.length = 0;
    this.pacing = { ...DEFAULT_PACING };
    this.#peak = this.#active;
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const dialect = PATHS[path] ?? 'openai-chat';
    const apiKeyHeader = req.headers['x-api-key'];
    const key =
      dialect === 'messages'
        ? typeof apiKeyHeader === 'string' && apiKeyHeader.trim() !== ''
          ? apiKeyHeader.trim()
          : null
        : (/^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim() ?? null);
    let body: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        body = parsed as Record<string, unknown>;
      }
    } catch {
      body = undefined;
    }
    const messages = Array.isArray(body?.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
    const analysis = analysisRequestOf(body, messages);
    const record: LlmRecordedRequest = {
      dialect,
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      key,
      body,
      model: typeof body?.model === 'string' ? body.model : undefined,
      messages,
      tools: Array.isArray(body?.tools) ? (body.tools as Array<Record<string, unknown>>) : [],
      disconnected: false,
      ...(analysis ? { analysis } : {}),
      completed: false,
      at: Date.now(),
    };
    (analysis ? this.analysisRequests : this.requests).push(record);
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) {
        record.disconnected = true;
        gone.abort();
      }
    });

    if (req.method !== 'POST' || PATHS[path] === undefined) {
      return this.#error(res, record, { status: 404, message: `Invalid URL (${req.method} ${path})` });
    }
    if (this.#keys.size > 0 && (key === null || !this.#keys.has(key))) {
      return this.#error(res, record, refusedKey(dialect, key));
    }
    const problem =
      dialect === 'messages'
        ? req.headers['anthropic-version']
          ? invalidMessagesBody(body)
          : 'anthropic-version: header is required'
        : invalidBody(body);
    if (problem) return this.#error(res, record, { status: 400, message: problem });

    const reply = quoteKnowledge(quoteToolResults(this.#replyFor(record), record.messages), body);
    if ('error' in reply) return this.#error(res, record, reply.error);
    this.#counter += 1;
    const completion = this.#counter;
    let callCounter = 0;
    const context = {
      completionId: `${dialect === 'messages' ? 'msg_sim' : 'chatcmpl-sim'}${String(completion).padStart(6, '0')}`,
      model: record.model ?? '',
      includeUsage: (body?.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true,
      promptTokens: promptTokens(record.messages),
      nextCallId: () => {
        callCounter += 1;
        return `${dialect === 'messages' ? 'toolu_sim' : 'call_sim'}${completion}_${callCounter}`;
      },
    };
    record.status = 200;
    if (body?.stream !== true) {
      const whole = 'replaySse' in reply ? { text: '' } : reply;
      const answer =
        dialect === 'messages' ? messageObject(context, whole) : completionObject(context, whole);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      record.completed = true;
      return;
    }
    this.#active += 1;
    this.#peak = Math.max(this.#peak, this.#active);
    try {
      const stream = { ...context, res, gone: gone.signal, pacing: { ...this.pacing } };
      if (dialect === 'messages') await writeMessagesStream(stream, reply);
      else await writeStream(stream, reply);
      record.completed = !gone.signal.aborted;
    } finally {
      this.#active -= 1;
    }
  }

  #replyFor(record: LlmRecordedRequest): LlmReply {
    if (record.analysis) {
      for (const scriptKey of [record.key ?? '', '*']) {
        const script = this.#analysisScripts.get(`${scriptKey} ${record.analysis.task}`);
        if (script && script.length > 0) return script.shift()!;
      }
      return { text: analysisAnswer(record.analysis) };
    }
    for (const scriptKey of [record.key ?? '', '*']) {
      const script = this.#scripts.get(scriptKey);
      if (script && script.length > 0) return script.shift()!;
    }
    return this.#respond?.(record) ?? defaultReply(record.messages);
  }

  #error(
    res: ServerResponse,
    record: LlmRecordedRequest,
    error: { status: number; code?: string; type?: string; message?: string; retryAfterSeconds?: number },
  ): void {
    record.status = error.status;
    record.completed = true;
    if (record.dialect === 'messages') {
      writeMessagesError(res, error, `req_sim${String(this.requests.length).padStart(6, '0')}`);
      return;
    }
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (error.retryAfterSeconds !== undefined) {
      headers['retry-after'] = String(Math.ceil(error.retryAfterSeconds));
      headers['retry-after-ms'] = String(Math.round(error.retryAfterSeconds * 1000));
    }
    const type =
      error.type ??
      (error.code === 'insufficient_quota' ? 'insufficient_quota' : undefined) ??
      DEFAULT_ERROR_TYPES[error.status] ??
      (error.status >= 500 ? 'server_error' : 'invalid_request_error');
    const message =
      error.message ??
      (error.status >= 500
        ? 'The server had an error while processing your request.'
        : `Error ${error.status}`);
    res
      .writeHead(error.status, headers)
      .end(JSON.stringify({ error: { message, type, param: null, code: error.code ?? null } }));
  }
}

/** "You said: <the last user message>. How else can I help?" */
export function defaultReply(messages: Array<Record<string, unknown>>): LlmReply {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user' && contentText(m.content) !== '');
  const said = contentText(lastUser?.content)
    .trim()
    .replace(/[.!?]+$/, '');
  return { text: said ? `You said: ${said}. How else can I help?` : 'Hello! How can I help?' };
}

/** What the real API refuses with 400 before it streams anything (the part a client can get wrong). */
function invalidBody(body: Record<string, unknown> | undefined): string | undefined {
  if (!body) return 'We could not parse the JSON body of your request.';
  if (typeof body.model !== 'string' || body.model === '') return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must be a non-empty array";
  for (const message of body.messages as Array<Record<string, unknown>>) {
    if (!['system', 'user', 'assistant', 'tool', 'developer'].includes(String(message?.role))) {
      return `Invalid value for 'role': ${String(message?.role)}`;
    }
    if (message.role === 'tool' && typeof message.tool_call_id !== 'string') {
      return "Missing required parameter: 'messages[].tool_call_id'";
    }
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools) || body.tools.length === 0) return "'tools' must be a non-empty array";
    for (const tool of body.tools as Array<Record<string, unknown>>) {
      const fn = tool?.function as Record<string, unknown> | undefined;
      if (tool?.type !== 'function' || typeof fn?.name !== 'string')
        return "Missing required parameter: 'tools[].function.name'";
    }
  }
  return undefined;
}

/** A rough prompt size in tokens (words), for the usage the simulator reports. */
function promptTokens(messages: Array<Record<string, unknown>>): number {
  return messages.reduce((sum, m) => sum + contentText(m.content).split(/\s+/).filter(Boolean).length, 0);
}

/** The 401 each dialect answers for a missing or wrong key. */
function refusedKey(dialect: LlmDialect, key: string | null) {
  if (dialect === 'messages') {
    return { status: 401, message: key === null ? 'x-api-key header is required' : 'invalid x-api-key' };
  }
  return {
    status: 401,
    code: 'invalid_api_key',
    message:
      key === null
        ? "You didn't provide an API key."
        : `Incorrect API key provided: ${maskKey(key)}. You can find your API key in your account settings.`,
  };
}

/** As the real API quotes a refused key: its start and its last four characters. */
function maskKey(key: string): string {
  return key.length <= 8 ? '****' : `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}`;
}

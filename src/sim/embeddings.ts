/**
 * A local OpenAI-compatible embeddings API (`POST /v1/embeddings`) for tests and local development.
 * Its vectors come from embedding-vectors.ts: deterministic, and close for texts that share words.
 * What the real API does that a client can get wrong is done too:
 * - keys: with none added, any key (or none) is accepted; once keys are added, any other key, or
 *   none, is refused with 401 and OpenAI's error body (the key quoted, masked);
 * - the body: `model`, `input` (a string or up to 2048 strings, none empty), `encoding_format`
 *   ('float', the default, or 'base64': little-endian float32), `dimensions` (text-embedding-3-*
 *   only; other models refuse it with 400); anything else wrong is a 400; another path a 404;
 * - faults: replies queued with `inject` (or `failNext`) answer the next requests in order instead —
 *   an error (429 with retry-after, 500…), a delay before the answer, the answer's items in reverse
 *   order (clients must order by `index`), or any raw JSON (a golden answer, a malformed one).
 * Every request is recorded (key, body, status).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from '../lib/net.js';
import { dimensionsOf, simulatedEmbedding } from './embedding-vectors.js';

export interface EmbeddingsError {
  status: number;
  code?: string;
  type?: string;
  message?: string;
  retryAfterSeconds?: number;
}

/** An injected answer to one request. */
export type EmbeddingsReply =
  | { error: EmbeddingsError }
  /** The normal answer, after `delayMs` (a slow vendor; a time-out test). */
  | { delayMs: number }
  /** The normal answer with its `data` reversed: indexes still right, order not. */
  | { reversed: true }
  /** This answer (status 200 unless given): a string as it is, byte for byte; anything else as JSON. */
  | { raw: unknown; status?: number };

export interface EmbeddingsRecordedRequest {
  method: string;
  path: string;
  /** The bearer token, or null when none was sent. */
  key: string | null;
  /** The JSON body as received (undefined when it was not JSON). */
  body: Record<string, unknown> | undefined;
  /** The status answered (set once answered). */
  status?: number;
  at: number;
}

/** OpenAI's own limit of inputs per request. */
export const SIM_MAX_INPUTS = 2048;

export class EmbeddingsSimulator {
  readonly requests: EmbeddingsRecordedRequest[] = [];
  readonly #keys = new Set<string>();
  readonly #injected: EmbeddingsReply[] = [];
  #server: Server | undefined;
  #url = '';

  /** The base URL clients are given (…/v1), once started. */
  get url(): string {
    return this.#url;
  }

  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#serve(req, res));
    const listening = await listenOnLoopback(this.#server, port);
    this.#url = `http://127.0.0.1:${listening}/v1`;
    return this.#url;
  }

  async stop(): Promise<void> {
    await closeServer(this.#server);
  }

  /** Accepts `key` (and, from now on, refuses keys never added). */
  addKey(key: string): void {
    this.#keys.add(key);
  }

  /** Queues replies for the next requests, in order (after any already queued). */
  inject(...replies: EmbeddingsReply[]): void {
    this.#injected.push(...replies);
  }

  /** The next `count` requests get `reply` (429, 500, a delay…). */
  failNext(count: number, reply: EmbeddingsReply): void {
    for (let i = 0; i < count; i++) this.#injected.push(reply);
  }

  /** Forgets injected replies and recorded requests. Keys stay. */
  reset(): void {
    this.#injected.length = 0;
    this.requests.length = 0;
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const key = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim() ?? null;
    let body: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        body = parsed as Record<string, unknown>;
      }
    } catch {
      body = undefined;
    }
    const record: EmbeddingsRecordedRequest = {
      method: req.method ?? 'GET',
      path,
      key,
      body,
      at: Date.now(),
    };
    this.requests.push(record);

    if (req.method !== 'POST' || path !== '/v1/embeddings') {
      return answerError(res, record, { status: 404, message: `Invalid URL (${req.method} ${path})` });
    }
    if (this.#keys.size > 0 && (key === null || !this.#keys.has(key))) {
      return answerError(res, record, refusedKey(key));
    }
    const reply = this.#injected.shift();
    if (reply && 'error' in reply) return answerError(res, record, reply.error);
    if (reply && 'raw' in reply) return answer(res, record, reply.status ?? 200, reply.raw);
    const valid = readBody(body);
    if (typeof valid === 'string') return answerError(res, record, { status: 400, message: valid });
    if (reply && 'delayMs' in reply) {
      await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      if (res.destroyed) return;
    }
    const { model, inputs, base64, dimensions } = valid;
    const data = inputs.map((text, index) => {
      const vector = simulatedEmbedding(text, dimensions);
      return { object: 'embedding', index, embedding: base64 ? toBase64(vector) : Array.from(vector) };
    });
    if (reply && 'reversed' in reply) data.reverse();
    const tokens = inputs.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
    answer(res, record, 200, {
      object: 'list',
      data,
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }
}

interface ValidBody {
  model: string;
  inputs: string[];
  base64: boolean;
  dimensions: number;
}

/** The request as the simulator serves it, or what the real API would refuse it for (400). */
function readBody(body: Record<string, unknown> | undefined): ValidBody | string {
  if (!body) return 'We could not parse the JSON body of your request.';
  const { model, input, encoding_format: format, dimensions } = body;
  if (typeof model !== 'string' || model === '') return 'you must provide a model parameter';
  const inputs = typeof input === 'string' ? [input] : input;
  if (
    !Array.isArray(inputs) ||
    inputs.length === 0 ||
    inputs.length > SIM_MAX_INPUTS ||
    inputs.some((text) => typeof text !== 'string' || text === '')
  ) {
    return "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";
  }
  if (format !== undefined && format !== 'float' && format !== 'base64') {
    return `'${String(format)}' is not one of ['float', 'base64'] - 'encoding_format'`;
  }
  if (dimensions !== undefined) {
    if (!model.startsWith('text-embedding-3-')) return 'This model does not support specifying dimensions.';
    const native = dimensionsOf(model);
    if (!Number.isInteger(dimensions) || (dimensions as number) < 1 || (dimensions as number) > native) {
      return `Invalid 'dimensions': must be an integer between 1 and ${native}.`;
    }
  }
  return {
    model,
    inputs: inputs as string[],
    base64: format === 'base64',
    dimensions: dimensionsOf(model, dimensions as number | undefined),
  };
}

/** A vector as OpenAI's base64 answer: its float32 numbers, little-endian, base64-encoded. */
export function toBase64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

function answer(res: ServerResponse, record: EmbeddingsRecordedRequest, status: number, body: unknown): void {
  record.status = status;
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(typeof body === 'string' ? body : JSON.stringify(body));
}

function answerError(res: ServerResponse, record: EmbeddingsRecordedRequest, error: EmbeddingsError): void {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (error.retryAfterSeconds !== undefined) {
    headers['retry-after'] = String(Math.ceil(error.retryAfterSeconds));
    headers['retry-after-ms'] = String(Math.round(error.retryAfterSeconds * 1000));
  }
  const type =
    error.type ??
    (error.status === 429 ? 'requests' : error.status >= 500 ? 'server_error' : 'invalid_request_error');
  const message =
    error.message ??
    (error.status >= 500
      ? 'The server had an error while processing your request.'
      : `Error ${error.status}`);
  record.status = error.status;
  res
    .writeHead(error.status, headers)
    .end(JSON.stringify({ error: { message, type, param: null, code: error.code ?? null } }));
}

function refusedKey(key: string | null): EmbeddingsError {
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

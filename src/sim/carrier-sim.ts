/**
 * What the three carrier simulators share: a real HTTP server on loopback, a record of every request,
 * accounts it accepts, configurable outcomes for calls and messages, injected failures, and the
 * asynchronous callbacks (status updates, delivery receipts) a real carrier posts after answering.
 * Each simulator (carrier-a.ts, carrier-b.ts, carrier-c.ts) implements its carrier's routes and
 * callback format on top; `settle()` lets a test wait until every callback has been posted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from '../lib/net.js';

export type CallOutcome =
  | { status: 'completed'; durationSeconds: number; answeredBy?: 'human' | 'machine' }
  | { status: 'busy' | 'no-answer' | 'failed' | 'canceled' };
export type MessageOutcome = 'delivered' | 'undelivered' | 'failed';

export interface RecordedRequest {
  method: string;
  path: string;
  /** Path and query string, as requested. */
  url: string;
  headers: IncomingMessage['headers'];
  /** Form fields or JSON, parsed; the raw text when neither. */
  body: unknown;
  rawBody: string;
  at: number;
}

export interface SimulatedCall {
  sid: string;
  from: string;
  to: string;
  outcome: CallOutcome;
  /** Everything the carrier was given for the call (callback URLs, stream URL…). */
  request: Record<string, unknown>;
  /** What our platform answered when the simulator fetched the call's instructions (answer URL). */
  answer?: { status: number; contentType: string | undefined; body: string };
  hungUp: boolean;
  transferredTo?: string;
  /** The carrier's status of the call as it progresses (what a status lookup answers). */
  status?: string;
  createdAt?: Date;
  endedAt?: Date;
}

export interface SimulatedMessage {
  id: string;
  from: string;
  to: string;
  body: string;
  mediaUrls: string[];
  outcome: MessageOutcome;
  at: number;
}

export interface CallbackDelivery {
  url: string;
  status: number | 'error' | 'dropped';
  body: string;
}

export interface Route {
  method: string;
  /** Matched against the path without query; named groups become `params`. */
  pattern: RegExp;
  handle(request: RecordedRequest, params: Record<string, string>): Promise<SimResponse> | SimResponse;
}

export interface SimResponse {
  status: number;
  body?: unknown;
  contentType?: string;
}

export abstract class CarrierSimulatorBase {
  readonly requests: RecordedRequest[] = [];
  readonly calls = new Map<string, SimulatedCall>();
  readonly messages: SimulatedMessage[] = [];
  /** Every callback the simulator posted to the platform, with the answer it got. */
  readonly callbacks: CallbackDelivery[] = [];
  /** Milliseconds before each answer (a slow carrier). */
  delayMs = 0;
  /** Post no callbacks (they are recorded as `dropped`): a platform that never hears back. */
  dropCallbacks = false;
  #server: Server | undefined;
  #baseUrl = '';
  readonly #pending = new Set<Promise<unknown>>();
  readonly #callOutcomes = new Map<string, CallOutcome>();
  readonly #messageOutcomes = new Map<string, MessageOutcome>();
  #failures: Array<{ status: number; body: unknown }> = [];
  #counter = 0;

  protected abstract routes(): Route[];
  /** The carrier's "not authenticated" answer. */
  protected abstract unauthorized(): SimResponse;

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async start(port = 0): Promise<string> {
    const routes = this.routes();
    this.#server = createServer((req, res) => void this.#serve(routes, req, res));
    const listening = await listenOnLoopback(this.#server, port);
    this.#baseUrl = `http://127.0.0.1:${listening}`;
    return this.#baseUrl;
  }

  async stop(): Promise<void> {
    await this.settle();
    await closeServer(this.#server);
  }

  /** The outcome of calls to `to` (`*`: every call without its own); default: completed after 30 s. */
  setCallOutcome(to: string, outcome: CallOutcome): void {
    this.#callOutcomes.set(to, outcome);
  }

  /** The delivery receipt of messages to `to` (`*`: every message); default: delivered. */
  setMessageOutcome(to: string, outcome: MessageOutcome): void {
    this.#messageOutcomes.set(to, outcome);
  }

  /** The next `count` API requests fail with `status` (500: retryable; 400: permanent). */
  failNext(count: number, status: number, body: unknown = { message: 'simulated failure' }): void {
    for (let i = 0; i < count; i++) this.#failures.push({ status, body });
  }

  /** Resolves when every callback started so far (and those they start) has been posted. */
  async settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  protected callOutcome(to: string): CallOutcome {
    return (
      this.#callOutcomes.get(to) ??
      this.#callOutcomes.get('*') ?? { status: 'completed', durationSeconds: 30 }
    );
  }

  protected messageOutcome(to: string): MessageOutcome {
    return this.#messageOutcomes.get(to) ?? this.#messageOutcomes.get('*') ?? 'delivered';
  }

  /** A fresh identifier: `prefix` and 32 hex characters. */
  protected nextId(prefix: string): string {
    this.#counter += 1;
    return `${prefix}${this.#counter.toString(16).padStart(8, '0')}${'0'.repeat(24)}`.slice(
      0,
      prefix.length + 32,
    );
  }

  /** Runs `work` in the background; settle() waits for it. */
  protected background(work: () => Promise<unknown>): void {
    const promise: Promise<unknown> = work().finally(() => this.#pending.delete(promise));
    this.#pending.add(promise);
  }

  /** Posts a callback to the platform, recording what it answered. */
  protected async post(
    url: string,
    body: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; contentType: string | undefined; body: string } | undefined> {
    if (this.dropCallbacks) {
      this.callbacks.push({ url, status: 'dropped', body });
      return undefined;
    }
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      this.callbacks.push({ url, status: response.status, body: text });
      return {
        status: response.status,
        contentType: response.headers.get('content-type') ?? undefined,
        body: text,
      };
    } catch (error) {
      this.callbacks.push({ url, status: 'error', body: (error as Error).message });
      return undefined;
    }
  }

  async #serve(routes: Route[], req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://sim');
    const type = req.headers['content-type'] ?? '';
    let body: unknown = rawBody;
    if (type.includes('application/x-www-form-urlencoded')) {
      body = Object.fromEntries(groupForm(new URLSearchParams(rawBody)));
    } else if (type.includes('json') && rawBody !== '') {
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = rawBody;
      }
    }
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      url: req.url ?? '/',
      headers: req.headers,
      body,
      rawBody,
      at: Date.now(),
    };
    this.requests.push(recorded);
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    let answer: SimResponse;
    const failure = this.#failures.shift();
    if (failure) {
      answer = { status: failure.status, body: failure.body };
    } else {
      answer = { status: 404, body: { message: `No route for ${recorded.method} ${recorded.path}` } };
      for (const route of routes) {
        const match = route.method === recorded.method ? route.pattern.exec(url.pathname) : null;
        if (match) {
          try {
            answer = await route.handle(recorded, match.groups ?? {});
          } catch (error) {
            answer = { status: 500, body: { message: (error as Error).message } };
          }
          break;
        }
      }
    }
    const payload =
      answer.body === undefined
        ? ''
        : typeof answer.body === 'string'
          ? answer.body
          : JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json' });
    res.end(payload);
  }
}

/** Form fields; a field given several times (MediaUrl) becomes an array. */
function groupForm(params: URLSearchParams): Map<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  for (const [key, value] of params) {
    const current = fields.get(key);
    if (current === undefined) fields.set(key, value);
    else fields.set(key, Array.isArray(current) ? [...current, value] : [current, value]);
  }
  return fields;
}

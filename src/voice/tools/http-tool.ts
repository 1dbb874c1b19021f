/**
 * A custom HTTP tool: one request to the customer's endpoint per call of the tool. The model's
 * arguments go as the JSON body (POST, PUT, PATCH) or the query (GET, DELETE); the request is signed
 * like an outgoing webhook (webhooks/signature.ts, the organization's secret) — over the body, or over
 * the query string when there is no body — and says which call and tool it comes from. The URL is
 * judged by the outbound-target policy at every call (DNS may have changed since it was saved) and
 * the connection pinned to the address judged; redirects are not followed. The answer is read up to
 * MAX_ANSWER_BYTES and given to the model as text. Every failure — refused address, time-out, no
 * connection, a status outside 2xx — is an `ok: false` outcome in words the model can pass on.
 */
import http from 'node:http';
import https from 'node:https';
import { signatureHeader } from '../../domains/webhooks/signature.js';
import { type OutboundTargets, pinnedLookup } from '../../lib/outbound-target.js';
import { VERSION } from '../../version.js';
import type { ToolContext, ToolOutcome } from './types.js';

/** How much of an answer the model is given; the rest is dropped (and the model told so). */
export const MAX_ANSWER_BYTES = 64 * 1024;

export type HttpToolMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HttpToolSpec {
  name: string;
  url: string;
  method: HttpToolMethod;
  /** The configured headers, in clear (never recorded or logged). */
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface HttpToolDeps {
  targets: OutboundTargets;
  /** The organization's webhook signing secret (the webhooks domain makes it on first use). */
  signingSecret(): Promise<string>;
}

const WITH_BODY = new Set<HttpToolMethod>(['POST', 'PUT', 'PATCH']);

/** The URL with the arguments in its query: strings as they are, anything else as JSON. */
export function queryUrl(url: string, args: Record<string, unknown>): URL {
  const target = new URL(url);
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    target.searchParams.append(key, typeof value === 'string' ? value : JSON.stringify(value));
  }
  return target;
}

type Exchange =
  | { kind: 'answer'; status: number; statusText: string; body: Buffer; truncated: boolean }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'unreachable'; code: string };

/** Calls the tool's endpoint once with `args`. Never throws for the endpoint's failures. */
export async function runHttpTool(
  spec: HttpToolSpec,
  deps: HttpToolDeps,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<ToolOutcome> {
  const record = (extra: Record<string, unknown>) => ({
    type: 'http',
    method: spec.method,
    ...extra,
  });
  const hasBody = WITH_BODY.has(spec.method);
  const url = hasBody ? new URL(spec.url) : queryUrl(spec.url, args);
  const verdict = await deps.targets.check(url);
  if (!verdict.ok) {
    return {
      ok: false,
      result: verdict.refused
        ? `The ${spec.name} tool could not be used: its address is not allowed.`
        : `The ${spec.name} tool could not be reached: its address did not resolve.`,
      record: record({
        status: null,
        error: verdict.refused ? 'refused' : 'unresolved',
        reason: verdict.reason,
      }),
    };
  }
  const body = hasBody ? JSON.stringify(args) : '';
  const timestamp = Math.floor(Date.now() / 1000);
  const signed = hasBody ? body : url.search.replace(/^\?/, '');
  const headers: Record<string, string> = {
    ...spec.headers,
    'user-agent': `Switchboard-Tools/${VERSION}`,
    'x-switchboard-call-id': String(context.callId),
    'x-switchboard-tool': spec.name,
    'x-switchboard-timestamp': String(timestamp),
    'x-switchboard-signature': signatureHeader(await deps.signingSecret(), timestamp, signed),
    ...(hasBody
      ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
      : {}),
  };
  const exchange = await send(
    url,
    spec.method,
    headers,
    body,
    verdict.target,
    spec.timeoutMs,
    context.signal,
  );
  switch (exchange.kind) {
    case 'timeout':
      return {
        ok: false,
        result: `The ${spec.name} tool did not answer within ${Math.round(spec.timeoutMs / 1000)} seconds.`,
        record: record({ status: null, error: 'timeout' }),
      };
    case 'cancelled':
      return {
        ok: false,
        result: `The ${spec.name} tool was cancelled.`,
        record: record({ status: null, error: 'cancelled' }),
      };
    case 'unreachable':
      return {
        ok: false,
        result: `The ${spec.name} tool could not be reached (${exchange.code}).`,
        record: record({ status: null, error: 'unreachable', code: exchange.code }),
      };
  }
  const text = exchange.body.toString('utf8');
  const truncated = exchange.truncated
    ? `\n[truncated: the answer was longer than ${MAX_ANSWER_BYTES / 1024} KB]`
    : '';
  const details = record({
    status: exchange.status,
    bytes: exchange.body.length,
    ...(exchange.truncated ? { truncated: true } : {}),
  });
  if (exchange.status >= 200 && exchange.status < 300) {
    return {
      ok: true,
      result: text === '' ? `(no content, status ${exchange.status})` : text + truncated,
      record: details,
    };
  }
  if (exchange.status >= 300 && exchange.status < 400) {
    return {
      ok: false,
      result: `The ${spec.name} tool answered a redirect (${exchange.status}), which is not followed.`,
      record: { ...details, error: 'redirect' },
    };
  }
  const said = text.slice(0, 1000);
  return {
    ok: false,
    result:
      `The ${spec.name} tool failed: its server answered ${exchange.status}` +
      `${exchange.statusText ? ` ${exchange.statusText}` : ''}${said ? `: ${said}` : '.'}`,
    record: { ...details, error: 'status' },
  };
}

/** One request over a connection to `target`; resolves with what came back, or why nothing did. */
function send(
  url: URL,
  method: HttpToolMethod,
  headers: Record<string, string>,
  body: string,
  target: { address: string; family: number },
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Exchange> {
  if (signal.aborted) return Promise.resolve({ kind: 'cancelled' });
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (exchange: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      request.destroy();
      resolve(exchange);
    };
    const request = client.request(url, { method, headers, lookup: pinnedLookup(target), agent: false });
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
    const onAbort = () => finish({ kind: 'cancelled' });
    signal.addEventListener('abort', onAbort, { once: true });
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({ kind: 'unreachable', code: error.code ?? error.message }),
    );
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const answer = (truncated: boolean) =>
        finish({
          kind: 'answer',
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          body: Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES),
          truncated,
        });
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        read += chunk.length;
        // Enough for the model: the rest is not read.
        if (read > MAX_ANSWER_BYTES) answer(true);
      });
      response.on('end', () => answer(false));
      response.on('error', () => answer(false));
    });
    request.end(body === '' ? undefined : body);
  });
}

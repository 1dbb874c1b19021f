/**
 * stt_a's live streaming transcription (`GET /v1/listen` over a WebSocket): one stream per call.
 * The handshake carries everything as query parameters (model, language, the audio's encoding and
 * rate — `mulaw`, `alaw` or `linear16`, the carrier's own —, interim results, endpointing, utterance
 * end, VAD events, punctuation and smart formatting, and the vocabulary the model takes) and the key as
 * `Authorization: Token …`; a refusal is an HTTP answer whose `dg-error` header says why. Audio goes
 * out as binary frames, the controls (`KeepAlive`, `Finalize`, `CloseStream`) as JSON text; the vendor
 * answers `Results` (interim or final, `speech_final` at its endpointing pause), `SpeechStarted`,
 * `UtteranceEnd` and, on closing, `Metadata`. A close nobody asked for (1011 `NET-0001` after ~10 s
 * without audio, 1008 `DATA-0000` for undecodable audio, a dropped connection) fails the events.
 */

import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { takesKeyterms, takesKeywords } from '../../domains/assistants/schemas.js';
import { Channel } from '../../lib/channel.js';
import { isRetryableStatus, ProviderError, type RequestTiming } from '../errors.js';
import type { SttAdapter, SttEvent, SttStream, SttStreamOptions } from './types.js';

const PROVIDER = 'stt_a';
const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** How long `close()` waits for the vendor's last results and its close frame before cutting. */
const CLOSE_GRACE_MS = 5000;
/** Close codes that say the request itself was wrong (bad audio, protocol, policy): retrying is futile. */
const PERMANENT_CLOSE_CODES = new Set([1002, 1003, 1007, 1008, 1009]);

/** The WebSocket URL of a stream opened with `options` (the key travels in a header, never here). */
export function sttAListenUrl(options: Omit<SttStreamOptions, 'apiKey' | 'signal'>): string {
  const base = options.baseUrl.replace(/\/+$/, '').replace(/^http(s?):/i, 'ws$1:');
  const interimResults = options.interimResults ?? true;
  const query = new URLSearchParams({
    model: options.model,
    language: options.language,
    encoding: options.format.encoding,
    sample_rate: String(options.format.sampleRate),
    channels: '1',
    interim_results: String(interimResults),
    // The vendor disables endpointing with `false`; 0 ms would mean the same.
    endpointing: options.endpointingMs > 0 ? String(options.endpointingMs) : 'false',
    vad_events: 'true',
    punctuate: String(options.punctuate),
    smart_format: String(options.smartFormat),
  });
  // The vendor sends UtteranceEnd only alongside interim results, and refuses the parameter without them.
  if (options.utteranceEndMs > 0 && interimResults)
    query.set('utterance_end_ms', String(options.utteranceEndMs));
  // Each generation takes its own vocabulary parameter and refuses the other's at the handshake.
  if (takesKeyterms(options.model)) {
    for (const term of options.keyterms) query.append('keyterm', term);
  } else if (takesKeywords(options.model)) {
    for (const { keyword, intensifier } of options.keywords)
      query.append('keywords', intensifier === undefined ? keyword : `${keyword}:${intensifier}`);
  }
  return `${base}/v1/listen?${query}`;
}

type Json = Record<string, unknown>;
const object = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
const number = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/**
 * One text message of the vendor as the contract's event, or undefined for what the runtime does not
 * use (`Metadata`, unknown types, interim results without words, anything that is not JSON).
 */
export function parseSttAMessage(text: string): SttEvent | undefined {
  let message: Json | undefined;
  try {
    message = object(JSON.parse(text));
  } catch {
    return undefined;
  }
  switch (message?.type) {
    case 'Results': {
      const alternative = object((object(message.channel)?.alternatives as unknown[] | undefined)?.[0]);
      const transcript = typeof alternative?.transcript === 'string' ? alternative.transcript : '';
      const isFinal = message.is_final === true;
      // An empty interim says nothing; an empty final still marks the span (and may end the turn).
      if (!isFinal && transcript === '') return undefined;
      const startSeconds = number(message.start);
      const confidence = alternative?.confidence;
      return {
        type: 'transcript',
        text: transcript,
        isFinal,
        speechFinal: message.speech_final === true,
        startSeconds,
        endSeconds: startSeconds + number(message.duration),
        ...(typeof confidence === 'number' ? { confidence } : {}),
      };
    }
    case 'SpeechStarted':
      return { type: 'speech_started', atSeconds: number(message.timestamp) };
    case 'UtteranceEnd':
      return { type: 'utterance_end', lastWordEndSeconds: number(message.last_word_end) };
    default:
      return undefined;
  }
}

/** The failure a close the client did not ask for stands for. */
export function sttACloseError(code: number, reason: string, cause?: unknown): ProviderError {
  const vendorCode = /\b[A-Z]{2,}-\d{4}\b/.exec(reason)?.[0];
  const said = reason.trim().slice(0, 120);
  return new ProviderError(`${PROVIDER} closed the stream (${code}${said ? `: ${said}` : ''})`, {
    provider: PROVIDER,
    retryable: !PERMANENT_CLOSE_CODES.has(code),
    code: vendorCode,
    cause,
  });
}

export class SttAAdapter implements SttAdapter {
  readonly id = PROVIDER;

  async open(options: SttStreamOptions): Promise<SttStream> {
    options.signal.throwIfAborted();
    const timing: RequestTiming = { startedAt: performance.now() };
    const socket = new WebSocket(sttAListenUrl(options), {
      headers: { Authorization: `Token ${options.apiKey}` },
      perMessageDeflate: false,
    });
    await handshake(socket, options);
    timing.connectedAt = performance.now();
    return new SttAStream(socket, options.signal, timing);
  }
}

/** Resolves once the socket is open; rejects with a ProviderError (or the abort reason) otherwise. */
function handshake(socket: WebSocket, options: SttStreamOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const settle = (error?: unknown) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      socket.off('open', onOpen);
      socket.off('unexpected-response', onRefused);
      // Later errors of an abandoned handshake (its socket being cut) must not go unhandled.
      socket.off('error', onError).on('error', () => {});
      if (error === undefined) resolve();
      else {
        socket.terminate();
        reject(error);
      }
    };
    const onOpen = () => settle();
    const onAbort = () => settle(options.signal.reason);
    const onError = (cause: Error) =>
      settle(
        new ProviderError(`${PROVIDER} could not be reached`, { provider: PROVIDER, retryable: true, cause }),
      );
    const onRefused = (_request: unknown, response: IncomingMessage) => {
      response.resume();
      const status = response.statusCode ?? 0;
      const header = (name: string) => {
        const value = response.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const said = header('dg-error')?.slice(0, 200);
      const retryAfter = Number(header('retry-after'));
      settle(
        new ProviderError(`${PROVIDER} refused the stream: ${status}${said ? ` ${said}` : ''}`, {
          provider: PROVIDER,
          retryable: isRetryableStatus(status),
          status,
          ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterSeconds: retryAfter } : {}),
        }),
      );
    };
    const timer = setTimeout(
      () =>
        settle(
          new ProviderError(`${PROVIDER} did not open the stream within ${timeoutMs} ms`, {
            provider: PROVIDER,
            retryable: true,
          }),
        ),
      timeoutMs,
    );
    options.signal.addEventListener('abort', onAbort, { once: true });
    socket.once('open', onOpen);
    socket.on('unexpected-response', onRefused);
    socket.on('error', onError);
  });
}

class SttAStream implements SttStream {
  readonly events: Channel<SttEvent>;
  /** Set once the client asked the stream to end (close, abort, the reader stopped): no error then. */
  #ending = false;
  #lastError: Error | undefined;
  readonly #closed: Promise<void>;

  constructor(
    private readonly socket: WebSocket,
    signal: AbortSignal,
    readonly timing: RequestTiming,
  ) {
    this.events = new Channel<SttEvent>(() => this.#cut());
    this.#closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    signal.addEventListener('abort', this.#onAbort, { once: true });
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const event = parseSttAMessage(data.toString());
      if (!event) return;
      if (event.type === 'transcript') this.timing.firstByteAt ??= performance.now();
      this.events.push(event);
    });
    socket.on('error', (error) => {
      this.#lastError = error;
    });
    socket.on('close', (code, reason) => {
      signal.removeEventListener('abort', this.#onAbort);
      this.timing.endedAt = performance.now();
      if (this.#ending) this.events.end();
      else this.events.fail(sttACloseError(code, reason.toString(), this.#lastError));
    });
    if (signal.aborted) this.#cut();
  }

  send(audio: Uint8Array): void {
    if (this.socket.readyState === WebSocket.OPEN && !this.#ending) this.socket.send(audio);
  }

  finalize(): void {
    this.#control('Finalize');
  }

  keepAlive(): void {
    this.#control('KeepAlive');
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    const alreadyEnding = this.#ending;
    this.#control('CloseStream');
    this.#ending = true;
    if (alreadyEnding) return this.#closed;
    // The vendor flushes its finals, sends Metadata and closes; one that does not is cut.
    const grace = setTimeout(() => this.socket.terminate(), CLOSE_GRACE_MS);
    await this.#closed;
    clearTimeout(grace);
  }

  #control(type: 'KeepAlive' | 'Finalize' | 'CloseStream'): void {
    if (this.socket.readyState === WebSocket.OPEN && !this.#ending)
      this.socket.send(JSON.stringify({ type }));
  }

  readonly #onAbort = () => this.#cut();

  /** Ends at once: no flush, no error (an abort or a reader that stopped listening). */
  #cut(): void {
    this.#ending = true;
    this.events.end();
    this.socket.terminate();
  }
}

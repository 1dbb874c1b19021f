/**
 * tts_a: the vendor's WebSocket stream-input, one socket per assistant utterance (the wire format is
 * in tts-a-wire.ts). `open` connects and sends the first message with the voice settings, so the
 * session can open the stream while the language model is still thinking; text then goes in as it
 * is written, audio comes back in the carrier's own format (μ-law 8 kHz asks for `ulaw_8000`), so
 * nothing is transcoded. Handshake refusals, error frames and broken sockets become ProviderErrors;
 * aborting the signal (a barge-in) closes the socket at once and drops whatever audio is in flight.
 */
import WebSocket, { type RawData } from 'ws';
import { Channel } from '../../lib/channel.js';
import { pcm16ToAlaw, ulawToPcm16 } from '../../voice/audio.js';
import { isRetryableStatus, ProviderError, type RequestTiming } from '../errors.js';
import type { TtsProvider } from '../ids.js';
import {
  isRetryableTtsAError,
  parseTtsAMessage,
  TTS_A,
  ttsAOutputFormat,
  ttsAStreamError,
  ttsAStreamPath,
} from './tts-a-wire.js';
import type { TtsAdapter, TtsEvent, TtsStream, TtsStreamOptions } from './types.js';

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/**
 * The vendor ends a stream that gets no text for 20 s (`input_timeout_exceeded`). A stream opened
 * early, while the language model thinks or a tool runs, is kept alive with a single space, which the
 * vendor documents as the keep-alive (an empty text would end the stream).
 */
const DEFAULT_KEEP_ALIVE_MS = 10_000;
/** How much of a refused handshake's body is read for its error code. */
const MAX_REFUSAL_BODY = 4_096;

/** The stream's URL: the base URL's scheme turned to ws(s), the voice in the path, options in the query. */
export function ttsAStreamUrl(options: TtsStreamOptions): string {
  const outputFormat = ttsAOutputFormat(options.format);
  if (!outputFormat) {
    throw new ProviderError(
      `${TTS_A} offers no ${options.format.encoding} audio at ${options.format.sampleRate} Hz`,
      {
        provider: TTS_A,
        retryable: false,
        code: 'unsupported_format',
      },
    );
  }
  const url = new URL(options.baseUrl);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${ttsAStreamPath(options.voiceId)}`;
  const query = new URLSearchParams();
  if (options.modelId) query.set('model_id', options.modelId);
  query.set('output_format', outputFormat);
  // Text arrives sentence by sentence from the language model: the vendor speaks each as it comes
  // instead of waiting for its character schedule to fill.
  query.set('auto_mode', 'true');
  if (options.language) query.set('language_code', options.language);
  url.search = query.toString();
  return url.toString();
}

export class TtsAAdapter implements TtsAdapter {
  readonly id: TtsProvider = TTS_A;
  readonly #keepAliveMs: number;

  constructor(options: { keepAliveMs?: number } = {}) {
    this.#keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  }

  async open(options: TtsStreamOptions): Promise<TtsStream> {
    const url = ttsAStreamUrl(options);
    options.signal.throwIfAborted();
    const timing: RequestTiming = { startedAt: performance.now() };
    const socket = new WebSocket(url, { headers: { 'xi-api-key': options.apiKey } });
    await connect(socket, options);
    timing.connectedAt = performance.now();
    return new TtsAStream(socket, options, timing, this.#keepAliveMs);
  }
}

/** Resolves once the socket is open; rejects with a typed error for every way the handshake fails. */
function connect(socket: WebSocket, options: TtsStreamOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      socket.off('open', onOpen);
      if (error === undefined) return resolve();
      socket.terminate();
      reject(error);
    };
    const onOpen = () => settle();
    const onAbort = () => settle(options.signal.reason);
    const timer = setTimeout(
      () =>
        settle(
          new ProviderError(`${TTS_A} did not open the stream in time`, {
            provider: TTS_A,
            retryable: true,
            code: 'connect_timeout',
          }),
        ),
      options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    );
    options.signal.addEventListener('abort', onAbort, { once: true });
    socket.once('open', onOpen);
    // The socket's own errors after a refusal or time-out are expected: this listener keeps them quiet.
    socket.on('error', (error) =>
      settle(
        new ProviderError(`${TTS_A} could not be reached`, {
          provider: TTS_A,
          retryable: true,
          cause: error,
        }),
      ),
    );
    socket.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        if (size < MAX_REFUSAL_BODY) chunks.push(chunk);
        size += chunk.length;
      });
      const refuse = () => {
        const status = response.statusCode ?? 0;
        const retryAfter = Number(response.headers['retry-after']);
        const code = refusalCode(Buffer.concat(chunks).toString('utf8').slice(0, MAX_REFUSAL_BODY));
        settle(
          new ProviderError(`${TTS_A} refused the stream: ${status}${code ? ` (${code})` : ''}`, {
            provider: TTS_A,
            retryable: status === 401 || status === 403 ? false : isRetryableStatus(status),
            status,
            code,
            retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
          }),
        );
      };
      response.once('end', refuse);
      response.once('error', refuse);
      response.once('close', refuse);
    });
  });
}

/** The vendor's error code in a refusal body (`{"detail":{"status":"invalid_api_key",…}}`), if any. */
function refusalCode(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown; error?: unknown };
    const detail = parsed.detail as { status?: unknown; code?: unknown } | undefined;
    const code = detail?.status ?? detail?.code ?? parsed.error;
    return typeof code === 'string' ? code.slice(0, 100) : undefined;
  } catch {
    return undefined;
  }
}

class TtsAStream implements TtsStream {
  readonly events: AsyncIterable<TtsEvent>;
  readonly #channel: Channel<TtsEvent>;
  #ended = false;
  #done = false;
  readonly #keepAlive: NodeJS.Timeout;

  constructor(
    private readonly socket: WebSocket,
    private readonly options: TtsStreamOptions,
    readonly timing: RequestTiming,
    keepAliveMs: number,
  ) {
    this.#keepAlive = setTimeout(() => this.#send({ text: ' ' }), keepAliveMs);
    this.#keepAlive.unref();
    this.#channel = new Channel<TtsEvent>(() => this.#close());
    this.events = dropAfterAbort(this.#channel, options.signal);
    options.signal.addEventListener('abort', this.#onAbort, { once: true });
    socket.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    socket.on('close', (code, reason) => this.#onClose(code, reason.toString('utf8')));
    // The first message opens the stream; voice settings are only honoured here.
    const first: Record<string, unknown> = { text: ' ' };
    if (Object.keys(options.voiceSettings).length > 0) first.voice_settings = options.voiceSettings;
    this.#send(first);
  }

  sendText(text: string): void {
    // An empty text is the end of stream on this protocol: never send one by accident.
    if (this.#ended || text === '') return;
    // The vendor buffers by words: a chunk without a trailing space may wait for the next one.
    this.#send({ text: /\s$/.test(text) ? text : `${text} ` });
  }

  flush(): void {
    if (this.#ended) return;
    this.#send({ text: ' ', flush: true });
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#send({ text: '' });
  }

  #send(message: Record<string, unknown>): void {
    if (this.#done || this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(JSON.stringify(message));
    // Every message counts as activity; after the end of stream the vendor no longer waits for text.
    if (this.#ended) clearTimeout(this.#keepAlive);
    else this.#keepAlive.refresh();
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#done) return;
    if (isBinary) {
      this.#fail(ttsAStreamError('protocol', 'a binary frame'));
      return;
    }
    let message: ReturnType<typeof parseTtsAMessage>;
    try {
      message = parseTtsAMessage(data.toString());
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (message.error) {
      this.#fail(ttsAStreamError(message.error.code, message.error.message));
      return;
    }
    if (message.audio && message.audio.length > 0) {
      this.timing.firstByteAt ??= performance.now();
      // μ-law asked for an A-law call (ttsAOutputFormat): each byte becomes its A-law twin.
      const audio =
        this.options.format.encoding === 'alaw' ? pcm16ToAlaw(ulawToPcm16(message.audio)) : message.audio;
      this.#channel.push(
        message.alignment ? { type: 'audio', audio, alignment: message.alignment } : { type: 'audio', audio },
      );
    }
    if (message.isFinal) {
      this.#finish();
      this.#channel.push({ type: 'final' });
      this.#channel.end();
      this.socket.close(1000);
    }
  }

  #onClose(code: number, reason: string): void {
    if (this.#done) return;
    if (code === 1008 && reason) {
      // A policy close with a reason and no error frame before it (a refused key, an unknown voice).
      this.#fail(
        new ProviderError(`${TTS_A} closed the stream: ${reason.slice(0, 200)}`, {
          provider: TTS_A,
          retryable: isRetryableTtsAError(reason),
          code: 'policy_violation',
        }),
      );
      return;
    }
    this.#fail(
      new ProviderError(`${TTS_A} closed the stream before its end (close code ${code})`, {
        provider: TTS_A,
        retryable: true,
        code: 'closed',
      }),
    );
  }

  #fail(error: unknown): void {
    if (this.#done) return;
    this.#finish();
    this.#channel.fail(error);
    this.socket.terminate();
  }

  #finish(): void {
    this.#done = true;
    clearTimeout(this.#keepAlive);
    this.timing.endedAt = performance.now();
    this.options.signal.removeEventListener('abort', this.#onAbort);
  }

  readonly #onAbort = (): void => {
    if (this.#done) return;
    this.#finish();
    this.#channel.end();
    this.socket.terminate();
  };

  #close(): void {
    if (!this.#done) this.#finish();
    this.socket.terminate();
  }
}

/** The events as read: after an abort nothing more is handed out, not even audio already queued. */
async function* dropAfterAbort(
  events: AsyncIterable<TtsEvent>,
  signal: AbortSignal,
): AsyncGenerator<TtsEvent> {
  if (signal.aborted) return;
  for await (const event of events) {
    if (signal.aborted) return;
    yield event;
  }
}

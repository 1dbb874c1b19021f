/**
 * tts_d: the vendor's HTTP streaming synthesis (`POST {base}/stream`, tts-d-wire.ts), which takes a
 * whole text per request and streams it back as a WAV (tts-d-wav.ts). A TtsStream here is a run of
 * such requests: text is gathered until the session flushes it (the speech lane flushes whole
 * sentences) or ends the stream, and each flushed piece becomes one request. A piece may start while
 * the one before is still streaming (at most `maxParallel` at once), so the next sentence's first
 * byte does not wait for the previous one's last; its audio is held back and handed out strictly in
 * order. The carrier's format is asked for where the vendor offers it and the answer converted once
 * otherwise. The header's grapheme cues become each piece's alignment (what the caller heard).
 *
 * There is no handshake: `open` only checks what the request needs (`provider_config.project_uuid`),
 * and the vendor's refusals (401 permanent, 429 with its retry-after, 5xx) come as the events'
 * ProviderError before any audio, which lets the speech lane try its next key. A body cut before its
 * declared end fails retryably; aborting the signal cancels every request at once.
 */
import { Channel } from '../../lib/channel.js';
import { isRetryableStatus, ProviderError, type RequestTiming } from '../errors.js';
import type { TtsProvider } from '../ids.js';
import { TTS_D, type WavHeader, WavStreamReader } from './tts-d-wav.js';
import {
  AudioConverter,
  TTS_D_STREAM_PATH,
  type TtsDRequestBody,
  ttsDFailureMessage,
  ttsDPieces,
  ttsDRequestAudio,
} from './tts-d-wire.js';
import type { Alignment, TtsAdapter, TtsEvent, TtsStream, TtsStreamOptions } from './types.js';

/** How long a request may wait for the vendor's answer to begin (its status and headers). */
const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000;
/** Requests in flight at once per stream: the one being heard and the next sentence. */
const DEFAULT_MAX_PARALLEL = 2;
/** How much of a failure's body is read for its message. */
const MAX_FAILURE_BODY = 4_096;

/** The request body of one piece of text (the adapter's whole say in the vendor's API). */
export function ttsDRequestBody(options: TtsStreamOptions, data: string): TtsDRequestBody {
  const config = options.providerConfig ?? {};
  const body: TtsDRequestBody = {
    voice_uuid: options.voiceId,
    project_uuid: String(config.project_uuid),
    data,
    ...ttsDRequestAudio(options.format),
  };
  if (options.modelId) body.model = options.modelId;
  // The vendor's two optional switches, when the assistant's provider_config names them.
  if (typeof config.use_hd === 'boolean') body.use_hd = config.use_hd;
  if (typeof config.apply_custom_pronunciations === 'boolean')
    body.apply_custom_pronunciations = config.apply_custom_pronunciations;
  return body;
}

export class TtsDAdapter implements TtsAdapter {
  readonly id: TtsProvider = TTS_D;
  readonly #responseTimeoutMs: number;
  readonly #maxParallel: number;

  constructor(options: { responseTimeoutMs?: number; maxParallel?: number } = {}) {
    this.#responseTimeoutMs = options.responseTimeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS;
    this.#maxParallel = Math.max(1, options.maxParallel ?? DEFAULT_MAX_PARALLEL);
  }

  async open(options: TtsStreamOptions): Promise<TtsStream> {
    options.signal.throwIfAborted();
    const project = options.providerConfig?.project_uuid;
    if (typeof project !== 'string' || project === '') {
      throw new ProviderError(`${TTS_D} needs provider_config.project_uuid`, {
        provider: TTS_D,
        retryable: false,
        code: 'missing_project_uuid',
      });
    }
    const now = performance.now();
    // Nothing to connect: the stream is usable at once, and each request times its own first byte.
    const timing: RequestTiming = { startedAt: now, connectedAt: now };
    return new TtsDStream(options, timing, this.#responseTimeoutMs, this.#maxParallel);
  }
}

/** One flushed piece of text: its request, and its audio until it is its turn to be heard. */
interface Piece {
  text: string;
  state: 'waiting' | 'running' | 'done';
  held: TtsEvent[];
  controller: AbortController;
}

class TtsDStream implements TtsStream {
  readonly events: AsyncIterable<TtsEvent>;
  readonly #channel: Channel<TtsEvent>;
  readonly #url: string;
  #buffer = '';
  /** Pieces not yet fully handed out, in order. */
  readonly #pieces: Piece[] = [];
  #ended = false;
  #done = false;

  constructor(
    private readonly options: TtsStreamOptions,
    readonly timing: RequestTiming,
    private readonly responseTimeoutMs: number,
    private readonly maxParallel: number,
  ) {
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}${TTS_D_STREAM_PATH}`;
    this.#channel = new Channel<TtsEvent>(() => this.#stop());
    this.events = dropAfterAbort(this.#channel, options.signal);
    options.signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  sendText(text: string): void {
    if (this.#ended || this.#done) return;
    this.#buffer += text;
  }

  flush(): void {
    if (this.#ended || this.#done) return;
    this.#dispatch();
  }

  end(): void {
    if (this.#ended || this.#done) return;
    this.#ended = true;
    this.#dispatch();
    this.#pump();
  }

  #dispatch(): void {
    const text = this.#buffer;
    this.#buffer = '';
    for (const piece of ttsDPieces(text)) {
      this.#pieces.push({ text: piece, state: 'waiting', held: [], controller: new AbortController() });
    }
    this.#pump();
  }

  /** Starts what may start, hands out the first piece's audio, and finishes after the last piece. */
  #pump(): void {
    if (this.#done) return;
    let running = this.#pieces.filter((piece) => piece.state === 'running').length;
    for (const piece of this.#pieces) {
      if (running >= this.maxParallel) break;
      if (piece.state !== 'waiting') continue;
      piece.state = 'running';
      running++;
      void this.#request(piece).then(
        () => {
          piece.state = 'done';
          this.#pump();
        },
        (error: unknown) => this.#fail(error),
      );
    }
    while (this.#pieces.length > 0) {
      const first = this.#pieces[0]!;
      for (const event of first.held.splice(0)) this.#channel.push(event);
      if (first.state !== 'done') break;
      this.#pieces.shift();
    }
    if (this.#ended && this.#pieces.length === 0) {
      this.#finish();
      this.#channel.push({ type: 'final' });
      this.#channel.end();
    }
  }

  async #request(piece: Piece): Promise<void> {
    const signal = AbortSignal.any([piece.controller.signal, this.options.signal]);
    const timer = setTimeout(() => piece.controller.abort('timeout'), this.responseTimeoutMs);
    let response: Response;
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.apiKey}`,
          'content-type': 'application/json',
          accept: 'audio/wav',
        },
        body: JSON.stringify(ttsDRequestBody(this.options, piece.text)),
        signal,
      });
    } catch (error) {
      throw this.#networkError(piece, error, 'could not be reached');
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) throw await refusal(response);
    await this.#read(piece, response);
  }

  /** Reads a WAV body, converting its audio to the carrier's format as it comes. */
  async #read(piece: Piece, response: Response): Promise<void> {
    const reader = new WavStreamReader();
    const body = response.body?.getReader();
    let converter: AudioConverter | undefined;
    let alignment: Alignment | undefined;
    let dataBytes = 0;
    for (;;) {
      let step: { done: boolean; value?: Uint8Array };
      try {
        step = body ? await body.read() : { done: true, value: undefined };
      } catch (error) {
        throw this.#networkError(piece, error, 'broke off the audio');
      }
      if (step.done || !step.value) break;
      const audio = reader.push(step.value);
      const header = reader.header;
      if (!header) continue;
      if (!converter) {
        converter = new AudioConverter(header.format, this.options.format);
        alignment = alignmentOf(header, piece.text);
      }
      dataBytes += audio.length;
      alignment = this.#hold(piece, converter.push(audio), alignment);
    }
    const expected = reader.header?.dataBytes;
    if (!converter || (expected !== undefined && dataBytes < expected)) {
      throw new ProviderError(`${TTS_D} ended the audio before its end`, {
        provider: TTS_D,
        retryable: true,
        code: 'closed',
      });
    }
    this.#hold(piece, converter.end(), alignment);
  }

  /** Queues a piece's audio (the alignment rides on its first audio); returns the alignment still to send. */
  #hold(piece: Piece, audio: Uint8Array, alignment: Alignment | undefined): Alignment | undefined {
    if (audio.length === 0 || this.#done) return alignment;
    this.timing.firstByteAt ??= performance.now();
    piece.held.push(alignment ? { type: 'audio', audio, alignment } : { type: 'audio', audio });
    this.#pump();
    return undefined;
  }

  #networkError(piece: Piece, error: unknown, what: string): ProviderError {
    const timedOut = piece.controller.signal.reason === 'timeout';
    return new ProviderError(timedOut ? `${TTS_D} did not answer in time` : `${TTS_D} ${what}`, {
      provider: TTS_D,
      retryable: true,
      code: timedOut ? 'timeout' : 'closed',
      cause: error,
    });
  }

  #fail(error: unknown): void {
    if (this.#done) return;
    this.#finish();
    this.#channel.fail(error);
  }

  #finish(): void {
    this.#done = true;
    this.timing.endedAt = performance.now();
    this.options.signal.removeEventListener('abort', this.#onAbort);
    for (const piece of this.#pieces) piece.controller.abort();
  }

  readonly #onAbort = (): void => {
    if (this.#done) return;
    this.#finish();
    this.#channel.end();
  };

  #stop(): void {
    if (!this.#done) this.#finish();
  }
}

/** A refused request as a ProviderError: 401/403 and other 4xx permanent; 408, 429, 5xx retryable. */
async function refusal(response: Response): Promise<ProviderError> {
  const text = await response.text().catch(() => '');
  const message = ttsDFailureMessage(text.slice(0, MAX_FAILURE_BODY));
  const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
  const status = response.status;
  return new ProviderError(`${TTS_D} refused the request: ${status}${message ? ` (${message})` : ''}`, {
    provider: TTS_D,
    retryable: isRetryableStatus(status),
    status,
    retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
  });
}

/**
 * A piece's alignment, from the header's grapheme cues (ms from the piece's first audio). Pieces are
 * spoken separately, so each ends with a space: the caller heard whole words up to its end. Without
 * cues, the text is spread over the audio's declared length; without that either, there is none.
 */
function alignmentOf(header: WavHeader, text: string): Alignment | undefined {
  const rate = header.format.sampleRate;
  const chars: string[] = [];
  const startMs: number[] = [];
  const durationMs: number[] = [];
  if (header.graphemes.length > 0) {
    for (const grapheme of header.graphemes) {
      const parts = Array.from(grapheme.text);
      const each = (grapheme.lengthSamples * 1000) / rate / parts.length;
      parts.forEach((char, i) => {
        chars.push(char);
        startMs.push((grapheme.startSample * 1000) / rate + i * each);
        durationMs.push(each);
      });
    }
  } else if (header.dataBytes !== undefined) {
    const bytesPerSample = Math.max(1, header.format.bitsPerSample / 8);
    const totalMs = (header.dataBytes / bytesPerSample / rate) * 1000;
    const parts = Array.from(text);
    parts.forEach((char, i) => {
      chars.push(char);
      startMs.push((i * totalMs) / parts.length);
      durationMs.push(totalMs / parts.length);
    });
  } else {
    return undefined;
  }
  if (!/\s$/.test(chars.at(-1) ?? ' ')) {
    chars.push(' ');
    startMs.push(startMs.at(-1)! + durationMs.at(-1)!);
    durationMs.push(0);
  }
  return { chars, startMs, durationMs };
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

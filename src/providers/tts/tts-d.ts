/**
 * tts_d: the vendor's HTTP streaming synthesis (`POST {base}/stream`, tts-d-wire.ts), which takes a
 * whole text per request and streams it back as a WAV (tts-d-wav.ts). The stream is the shared one of
 * request-per-piece vendors (piece-stream.ts: one request per flushed piece, overlapped — here two at
 * a time, the one being heard and the next sentence — with the audio handed out strictly in order)
 * over the shared HTTP half (tts-http.ts: time-out, refusals, a body cut short). What is tts_d's own
 * is here: the request body, the carrier's format asked for where the vendor offers it, each answer's
 * WAV read as it streams and converted once when it is not already the carrier's format, and its
 * grapheme cues made into the piece's alignment (what the caller heard).
 *
 * There is no handshake: `open` only checks what the request needs (`provider_config.project_uuid`),
 * and the vendor's refusals (401 permanent, 429 with its retry-after, 5xx) come as the events'
 * ProviderError before any audio, which lets the speech lane try its next key. A body that ends
 * before the length its header declares fails retryably, like one cut off.
 */
import { isRetryableStatus, ProviderError } from '../errors.js';
import type { TtsProvider } from '../ids.js';
import { PASS_THROUGH, type PieceAudio, PieceStream } from './piece-stream.js';
import { TTS_D, type WavHeader, WavStreamReader } from './tts-d-wav.js';
import {
  TTS_D_MAX_CHARACTERS,
  TTS_D_STREAM_PATH,
  type TtsDRequestBody,
  ttsDFailureMessage,
  ttsDRequestAudio,
  WavConverter,
} from './tts-d-wire.js';
import { bodyChunks, incomplete, postForAudio, type Refusal } from './tts-http.js';
import type { Alignment, TtsAdapter, TtsStream, TtsStreamOptions } from './types.js';

/** How long a request may wait for the vendor's answer to begin (its status and headers). */
const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000;
/** Requests in flight at once per stream: the one being heard and the next sentence. */
const DEFAULT_MAX_PARALLEL = 2;

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
    const url = `${options.baseUrl.replace(/\/+$/, '')}${TTS_D_STREAM_PATH}`;
    const timeoutMs = this.#responseTimeoutMs;
    return new PieceStream(
      {
        provider: TTS_D,
        maxChars: TTS_D_MAX_CHARACTERS,
        maxInFlight: this.#maxParallel,
        // Each answer is converted on its own: its WAV header says what it is.
        converter: PASS_THROUGH,
        async synthesize(text, signal) {
          const response = await postForAudio({
            provider: TTS_D,
            url,
            headers: { authorization: `Bearer ${options.apiKey}`, accept: 'audio/wav' },
            body: ttsDRequestBody(options, text),
            signal,
            timeoutMs,
            describeRefusal: ttsDRefusal,
          });
          return wavAudio(bodyChunks(response, TTS_D, signal), text, options);
        },
      },
      options.signal,
    );
  }
}

/** A refusal: 401/403 and other 4xx permanent; 408, 429, 5xx retryable; the vendor's message kept. */
export function ttsDRefusal(status: number, body: string): Refusal {
  return { retryable: isRetryableStatus(status), message: ttsDFailureMessage(body) };
}

/**
 * One answer's WAV, as it streams: the header read however the bytes are split, then the audio in
 * the carrier's format, the piece's alignment riding on its first audio.
 */
async function* wavAudio(
  body: AsyncIterable<Uint8Array>,
  text: string,
  options: Pick<TtsStreamOptions, 'format'>,
): AsyncGenerator<PieceAudio> {
  const reader = new WavStreamReader();
  let converter: WavConverter | undefined;
  let alignment: Alignment | undefined;
  let dataBytes = 0;
  for await (const bytes of body) {
    const audio = reader.push(bytes);
    const header = reader.header;
    if (!header) continue;
    if (!converter) {
      converter = new WavConverter(header.format, options.format);
      alignment = alignmentOf(header, text);
    }
    dataBytes += audio.length;
    const out = converter.push(audio);
    if (out.length === 0) continue;
    yield alignment ? { audio: out, alignment } : out;
    alignment = undefined;
  }
  const declared = reader.header?.dataBytes;
  if (!converter || (declared !== undefined && dataBytes < declared)) {
    throw incomplete(TTS_D, 'the audio ended before its end');
  }
  const tail = converter.end();
  if (tail.length > 0) yield alignment ? { audio: tail, alignment } : tail;
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

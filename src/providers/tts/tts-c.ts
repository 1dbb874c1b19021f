/**
 * tts_c: the vendor's REST synthesis (tts-c-wire.ts), one request per flushed piece of text
 * (piece-stream.ts keeps them in order and overlaps them, so the next sentence is being synthesized
 * while the one before plays). The carrier's own format is asked for — μ-law or A-law at 8 kHz,
 * 16-bit PCM at its rate — so the answer needs only its WAV header stripped, never a conversion.
 * Refusals become ProviderErrors: an invalid key (400 `API_KEY_INVALID`), a forbidden project (403)
 * and any other invalid request are permanent; a rate limit (429, with its retry-after or RetryInfo),
 * a server fault, a time-out or a cut connection is retryable.
 */
import { isRetryableStatus, ProviderError } from '../errors.js';
import type { TtsProvider } from '../ids.js';
import { PASS_THROUGH, PieceStream } from './piece-stream.js';
import { TTS_C, TTS_C_MAX_INPUT, TTS_C_SYNTHESIZE_PATH, ttsCRequest, wavData } from './tts-c-wire.js';
import { parseJsonObject, postForAudio, type Refusal, wholeBody } from './tts-http.js';
import type { TtsAdapter, TtsStream, TtsStreamOptions } from './types.js';

/** Synthesis answers only once the whole piece is spoken: a sentence takes well under this. */
const DEFAULT_TIMEOUT_MS = 10_000;

export class TtsCAdapter implements TtsAdapter {
  readonly id: TtsProvider = TTS_C;

  async open(options: TtsStreamOptions): Promise<TtsStream> {
    options.signal.throwIfAborted();
    const url = `${options.baseUrl.replace(/\/+$/, '')}${TTS_C_SYNTHESIZE_PATH}`;
    const settings = { ...options.providerConfig, ...options.voiceSettings };
    const language =
      options.language ?? (typeof settings.language === 'string' ? settings.language : undefined);
    return new PieceStream(
      {
        provider: TTS_C,
        maxChars: TTS_C_MAX_INPUT,
        converter: PASS_THROUGH,
        async synthesize(text, signal) {
          const response = await postForAudio({
            provider: TTS_C,
            url,
            // In a header rather than the query: the key stays out of URLs, and so out of logs.
            headers: { 'x-goog-api-key': options.apiKey },
            body: ttsCRequest(text, {
              voiceId: options.voiceId,
              modelId: options.modelId,
              language,
              format: options.format,
              settings,
            }),
            signal,
            timeoutMs: options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS,
            describeRefusal: ttsCRefusal,
          });
          const body = await wholeBody(response, TTS_C, signal);
          return [ttsCAudio(body.toString('utf8'), options)];
        },
      },
      options.signal,
    );
  }
}

/** The audio of a successful answer, in the carrier's format. */
export function ttsCAudio(body: string, options: Pick<TtsStreamOptions, 'format'>): Uint8Array {
  const content = parseJsonObject(body)?.audioContent;
  if (typeof content !== 'string') {
    throw new ProviderError(`${TTS_C} answered without audioContent`, {
      provider: TTS_C,
      retryable: false,
      code: 'protocol',
    });
  }
  return wavData(new Uint8Array(Buffer.from(content, 'base64')), options.format);
}

/** Google's error answer: the ErrorInfo reason (or status) names it, the HTTP status decides. */
export function ttsCRefusal(status: number, body: string): Refusal {
  const error = parseJsonObject(body)?.error as { status?: unknown; details?: unknown } | undefined;
  const details = Array.isArray(error?.details) ? (error.details as Record<string, unknown>[]) : [];
  const reason = details.find((detail) => typeof detail?.reason === 'string')?.reason as string | undefined;
  const delay = details.find((detail) => typeof detail?.retryDelay === 'string')?.retryDelay as
    | string
    | undefined;
  const seconds = delay ? Number.parseFloat(delay) : Number.NaN;
  return {
    code: reason ?? (typeof error?.status === 'string' ? error.status : undefined),
    retryable: isRetryableStatus(status),
    retryAfterSeconds: Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined,
  };
}

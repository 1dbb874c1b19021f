/**
 * tts_b: the vendor's speech endpoint (tts-b-wire.ts), one streamed request per flushed piece of text
 * (piece-stream.ts keeps them in order and overlaps them). Its audio is 24 kHz 16-bit PCM, the only
 * raw format it offers, so the in-order output is resampled once to the carrier's rate and encoded
 * in its encoding (μ-law, A-law or 16-bit PCM). Refusals become ProviderErrors: a refused key (401,
 * 403) or an exhausted quota is permanent; a rate limit (with its retry-after), a server fault, a
 * time-out or a cut connection is retryable.
 */
import { type AudioFormat, encodeAudio, l16ToPcm16 } from '../../voice/audio.js';
import { Resampler } from '../../voice/resample.js';
import { isRetryableStatus } from '../errors.js';
import type { TtsProvider } from '../ids.js';
import { type AudioConverter, PieceStream } from './piece-stream.js';
import { TTS_B, TTS_B_MAX_INPUT, TTS_B_PCM_RATE, TTS_B_SPEECH_PATH, ttsBRequest } from './tts-b-wire.js';
import { bodyChunks, parseJsonObject, postForAudio, type Refusal } from './tts-http.js';
import type { TtsAdapter, TtsStream, TtsStreamOptions } from './types.js';

/** How long the vendor may take to start answering one piece. */
const DEFAULT_TIMEOUT_MS = 10_000;
/** Silence pushed through the resampler at the end: more than its filter reaches. */
const FLUSH_SAMPLES = 64;

export class TtsBAdapter implements TtsAdapter {
  readonly id: TtsProvider = TTS_B;

  async open(options: TtsStreamOptions): Promise<TtsStream> {
    options.signal.throwIfAborted();
    const url = `${options.baseUrl.replace(/\/+$/, '')}${TTS_B_SPEECH_PATH}`;
    const settings = { ...options.providerConfig, ...options.voiceSettings };
    return new PieceStream(
      {
        provider: TTS_B,
        maxChars: TTS_B_MAX_INPUT,
        converter: new PcmConverter(options.format),
        async synthesize(text, signal) {
          const response = await postForAudio({
            provider: TTS_B,
            url,
            headers: { authorization: `Bearer ${options.apiKey}` },
            body: ttsBRequest(text, { voiceId: options.voiceId, modelId: options.modelId, settings }),
            signal,
            timeoutMs: options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS,
            describeRefusal: ttsBRefusal,
          });
          return bodyChunks(response, TTS_B, signal);
        },
      },
      options.signal,
    );
  }
}

/** The vendor's error answer: its code decides (an exhausted quota is not a rate limit). */
export function ttsBRefusal(status: number, body: string): Refusal {
  const error = parseJsonObject(body)?.error as { code?: unknown; type?: unknown } | undefined;
  const code =
    typeof error?.code === 'string' ? error.code : typeof error?.type === 'string' ? error.type : undefined;
  const quotaExhausted = code === 'insufficient_quota';
  return { code, retryable: isRetryableStatus(status) && !quotaExhausted };
}

/**
 * 24 kHz PCM as it streams in → the carrier's format: a sample split between two network chunks is
 * joined, the rate converted by one resampler for the whole utterance, and the end flushed so the
 * output has exactly the input's duration (as `resample` would give for the whole signal at once).
 */
export class PcmConverter implements AudioConverter {
  readonly #resampler: Resampler;
  #odd: number | undefined;
  #inSamples = 0;
  #outSamples = 0;

  constructor(private readonly format: AudioFormat) {
    this.#resampler = new Resampler(TTS_B_PCM_RATE, format.sampleRate);
  }

  push(bytes: Uint8Array): Uint8Array {
    let data = bytes;
    if (this.#odd !== undefined) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this.#odd;
      data.set(bytes, 1);
      this.#odd = undefined;
    }
    if (data.length % 2 === 1) this.#odd = data[data.length - 1];
    const samples = l16ToPcm16(data);
    this.#inSamples += samples.length;
    return this.#out(this.#resampler.push(samples));
  }

  end(): Uint8Array {
    const wanted = Math.round((this.#inSamples * this.format.sampleRate) / TTS_B_PCM_RATE);
    const tail = this.#resampler.push(new Int16Array(FLUSH_SAMPLES));
    return this.#out(tail.subarray(0, Math.max(0, wanted - this.#outSamples)));
  }

  #out(samples: Int16Array): Uint8Array {
    this.#outSamples += samples.length;
    return encodeAudio(this.format, samples);
  }
}

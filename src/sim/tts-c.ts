/**
 * A local tts_c: the vendor's REST synthesis (`POST /v1/text:synthesize`,
 * providers/tts/tts-c-wire.ts) on loopback. It takes the key from `X-Goog-Api-Key` or `?key=`
 * (401 without one, 400 `API_KEY_INVALID` for an unknown one, as the vendor answers), refuses what
 * the vendor refuses (no text, no language, an encoding or rate it does not offer, settings out of
 * range), and answers once the whole text is synthesized — `{"audioContent": base64}` of a WAV in
 * the encoding and rate asked (MULAW, ALAW, LINEAR16 at 8 or 16 kHz). The shared machinery
 * (sim/tts-http.ts) plays the injected failures; a cut here breaks an answer mid-body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  TTS_C_AUDIO_SETTINGS,
  TTS_C_SYNTHESIZE_PATH,
  type TtsCEncoding,
  ttsCErrorBody,
  wavFile,
} from '../providers/tts/tts-c-wire.js';
import { type AudioFormat, encodeAudio } from '../voice/audio.js';
import {
  type CutState,
  type ParsedSpeechRequest,
  type TtsHttpFailure,
  type TtsHttpRequestRecord,
  TtsHttpSimulator,
  type VendorError,
} from './tts-http.js';

export { TTS_HTTP_SIMULATOR_DEFAULTS as TTS_C_SIMULATOR_DEFAULTS } from './tts-http.js';

const ENCODINGS: Record<TtsCEncoding, AudioFormat['encoding']> = {
  MULAW: 'mulaw',
  ALAW: 'alaw',
  LINEAR16: 'linear16',
};
/** The vendor's input limit, in bytes. */
const MAX_INPUT_BYTES = 5_000;

const invalid = (message: string): VendorError => ({
  status: 400,
  body: ttsCErrorBody(400, 'INVALID_ARGUMENT', message),
});

type Json = Record<string, unknown>;
const object = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};

export class TtsCSimulator extends TtsHttpSimulator {
  protected readonly path = TTS_C_SYNTHESIZE_PATH;
  protected readonly basePath = '';

  protected keyOf(request: IncomingMessage, url: URL): string | undefined {
    const header = request.headers['x-goog-api-key'];
    return typeof header === 'string' ? header : (url.searchParams.get('key') ?? undefined);
  }

  protected keyRefusal(key: string | undefined): VendorError {
    if (key === undefined) {
      return {
        status: 401,
        body: ttsCErrorBody(
          401,
          'UNAUTHENTICATED',
          'Request is missing required authentication credential.',
          { reason: 'CREDENTIALS_MISSING' },
        ),
      };
    }
    return {
      status: 400,
      body: ttsCErrorBody(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', {
        reason: 'API_KEY_INVALID',
      }),
    };
  }

  protected parse(body: Json): ParsedSpeechRequest | VendorError {
    const input = object(body.input);
    const voice = object(body.voice);
    const audioConfig = object(body.audioConfig);
    if (typeof input.text !== 'string' || !input.text)
      return invalid('Either `input.text` or `input.ssml` is required.');
    if (Buffer.byteLength(input.text) > MAX_INPUT_BYTES) return invalid('Input is longer than 5000 bytes.');
    if (typeof voice.languageCode !== 'string' || !voice.languageCode)
      return invalid('Language code is required.');
    const encoding = ENCODINGS[audioConfig.audioEncoding as TtsCEncoding];
    const rate = audioConfig.sampleRateHertz ?? 24_000;
    if (!encoding) return invalid('The simulator answers MULAW, ALAW and LINEAR16 only.');
    if (rate !== 8000 && rate !== 16000) return invalid('The simulator answers at 8000 or 16000 Hz only.');
    if (encoding !== 'linear16' && rate !== 8000)
      return invalid(`${audioConfig.audioEncoding} is 8000 Hz only.`);
    const settings: Json = {};
    for (const [name, { field, min, max }] of Object.entries(TTS_C_AUDIO_SETTINGS)) {
      const value = audioConfig[field];
      if (value === undefined) continue;
      if (typeof value !== 'number' || value < min || value > max)
        return invalid(`${field} is out of range.`);
      settings[name] = value;
    }
    const format: AudioFormat = { encoding, sampleRate: rate };
    return {
      text: input.text,
      voiceId: typeof voice.name === 'string' ? voice.name : '',
      ...(typeof voice.modelName === 'string' ? { modelId: voice.modelName } : {}),
      outputFormat: `${audioConfig.audioEncoding}/${rate}`,
      rate,
      encode: (samples) => encodeAudio(format, samples),
      settings,
    };
  }

  protected failure({ status, retryAfterSeconds }: TtsHttpFailure): VendorError {
    const headers: Record<string, string> = {};
    if (status === 429) {
      return {
        status,
        headers,
        // The vendor says how long to wait in the body's RetryInfo rather than a header.
        body: ttsCErrorBody(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for quota metric.', {
          reason: 'RATE_LIMIT_EXCEEDED',
          retryDelaySeconds: retryAfterSeconds,
        }),
      };
    }
    if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
    const name = status === 503 ? 'UNAVAILABLE' : status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
    return { status, headers, body: ttsCErrorBody(status, name, 'Simulated failure.') };
  }

  protected async answer(
    response: ServerResponse,
    record: TtsHttpRequestRecord,
    chunks: AsyncIterable<Uint8Array>,
    cut: CutState | undefined,
  ): Promise<void> {
    const parts: Uint8Array[] = [];
    // The vendor answers only once the whole input is synthesized.
    for await (const audio of chunks) parts.push(audio);
    if (response.destroyed) return;
    const [encoding, rate] = record.outputFormat.split('/') as [TtsCEncoding, string];
    const format: AudioFormat = { encoding: ENCODINGS[encoding], sampleRate: Number(rate) as 8000 | 16000 };
    const audio = Buffer.concat(parts);
    const body = Buffer.from(
      JSON.stringify({ audioContent: Buffer.from(wavFile(audio, format)).toString('base64') }),
    );
    response.writeHead(200, {
      'content-type': 'application/json; charset=UTF-8',
      'content-length': body.length,
    });
    if (cut && cut.sentMs >= cut.afterMs) {
      record.closed = true;
      record.closedBy = 'server';
      cut.fired = true;
      // Half the answer, then the connection is gone: the client never gets its declared length.
      response.write(body.subarray(0, body.length >> 1));
      setTimeout(() => response.socket?.destroy(), 20);
      return;
    }
    if (cut) cut.sentMs += record.audioMs;
    response.end(body);
  }
}

/**
 * tts_c's synthesis API as both sides speak it (the adapter tts-c.ts and the simulator sim/tts-c.ts):
 * `POST {base}/v1/text:synthesize` with the key in `X-Goog-Api-Key` (or a `key=` query parameter),
 * a JSON body `{input:{text}, voice:{languageCode, name?, modelName?}, audioConfig:{audioEncoding,
 * sampleRateHertz, speakingRate?, pitch?, volumeGainDb?}}`, answered with `{"audioContent": base64}`
 * once the whole input is synthesized. The vendor offers the carriers' own formats — `MULAW`, `ALAW`
 * and `LINEAR16` at the rate asked — each wrapped in a WAV header, which is stripped here. (Its
 * streaming method is gRPC only; over REST each piece is one request.) Errors are Google's
 * `{"error":{"code","message","status","details"}}`: an unknown key is a 400 whose `ErrorInfo`
 * reason is `API_KEY_INVALID`, a rate limit a 429 `RESOURCE_EXHAUSTED` that may carry a `RetryInfo`.
 */
import type { AudioFormat } from '../../voice/audio.js';
import { ProviderError } from '../errors.js';

export const TTS_C = 'tts_c';
export const TTS_C_SYNTHESIZE_PATH = '/v1/text:synthesize';
/** The vendor's limit is 5,000 bytes of input; this many characters stay under it in any script. */
export const TTS_C_MAX_INPUT = 1_600;
export const TTS_C_DEFAULT_LANGUAGE = 'en-US';

export type TtsCEncoding = 'MULAW' | 'ALAW' | 'LINEAR16';

export function ttsCEncoding(format: AudioFormat): TtsCEncoding {
  return format.encoding === 'mulaw' ? 'MULAW' : format.encoding === 'alaw' ? 'ALAW' : 'LINEAR16';
}

/** The WAV `fmt` format code of each encoding. */
const WAV_FORMAT: Record<TtsCEncoding, number> = { LINEAR16: 1, ALAW: 6, MULAW: 7 };

/** The settings the vendor takes in `audioConfig`, as `provider_config` names them, with their ranges. */
export const TTS_C_AUDIO_SETTINGS = {
  speaking_rate: { field: 'speakingRate', min: 0.25, max: 2 },
  pitch: { field: 'pitch', min: -20, max: 20 },
  volume_gain_db: { field: 'volumeGainDb', min: -96, max: 16 },
} as const;

export interface TtsCSynthesizeRequest {
  input: { text: string };
  voice: { languageCode: string; name?: string; modelName?: string };
  audioConfig: { audioEncoding: TtsCEncoding; sampleRateHertz: number } & Record<string, unknown>;
}

/**
 * The request for one piece. The language is `provider_config.language`, else the voice name's own
 * prefix (`en-GB-Neural2-A` → `en-GB`), else en-US; the schema's default voice (`default`) leaves the
 * name out so the vendor picks its default voice for the language.
 */
export function ttsCRequest(
  text: string,
  options: {
    voiceId: string;
    modelId?: string;
    language?: string;
    format: AudioFormat;
    settings: Record<string, unknown>;
  },
): TtsCSynthesizeRequest {
  const named = options.voiceId && options.voiceId !== 'default' ? options.voiceId : undefined;
  const languageCode =
    options.language ?? /^([a-z]{2,3}-[A-Za-z0-9]{2,4})-/.exec(named ?? '')?.[1] ?? TTS_C_DEFAULT_LANGUAGE;
  const audioConfig: TtsCSynthesizeRequest['audioConfig'] = {
    audioEncoding: ttsCEncoding(options.format),
    sampleRateHertz: options.format.sampleRate,
  };
  for (const [name, { field, min, max }] of Object.entries(TTS_C_AUDIO_SETTINGS)) {
    const value = options.settings[name];
    if (typeof value === 'number' && value >= min && value <= max) audioConfig[field] = value;
  }
  return {
    input: { text },
    voice: {
      languageCode,
      ...(named ? { name: named } : {}),
      ...(options.modelId ? { modelName: options.modelId } : {}),
    },
    audioConfig,
  };
}

function protocolError(detail: string): ProviderError {
  return new ProviderError(`${TTS_C} answered with audio it does not document (${detail})`, {
    provider: TTS_C,
    retryable: false,
    code: 'protocol',
  });
}

/**
 * The samples of a WAV answer (its `data` chunk), checked to be the encoding and rate asked for. A
 * `data` size the vendor could not know while writing (0 or 0xFFFFFFFF) means "to the end".
 */
export function wavData(wav: Uint8Array, format: AudioFormat): Uint8Array {
  const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  const tag = (offset: number) => Buffer.from(wav.subarray(offset, offset + 4)).toString('latin1');
  if (wav.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw protocolError('no WAV header');
  let offset = 12;
  let fmtChecked = false;
  while (offset + 8 <= wav.length) {
    const id = tag(offset);
    const size = view.getUint32(offset + 4, true);
    const start = offset + 8;
    if (id === 'fmt ') {
      const code = view.getUint16(start, true);
      const rate = view.getUint32(start + 4, true);
      if (code !== WAV_FORMAT[ttsCEncoding(format)] || rate !== format.sampleRate) {
        throw protocolError(`WAV format ${code} at ${rate} Hz`);
      }
      fmtChecked = true;
    } else if (id === 'data') {
      if (!fmtChecked) throw protocolError('WAV data before its format');
      const end = size === 0 || size === 0xffffffff ? wav.length : Math.min(wav.length, start + size);
      return wav.subarray(start, end);
    }
    offset = start + size + (size % 2);
  }
  throw protocolError('a WAV without data');
}

/** A WAV file of mono audio in `format` (the simulator's answers, test fixtures). */
export function wavFile(audio: Uint8Array, format: AudioFormat): Uint8Array {
  const encoding = ttsCEncoding(format);
  const bytesPerSample = encoding === 'LINEAR16' ? 2 : 1;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + audio.length, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(WAV_FORMAT[encoding], 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(format.sampleRate, 24);
  header.writeUInt32LE(format.sampleRate * bytesPerSample, 28);
  header.writeUInt16LE(bytesPerSample, 32);
  header.writeUInt16LE(bytesPerSample * 8, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(audio.length, 40);
  return new Uint8Array(Buffer.concat([header, audio]));
}

/** Google's error body, with an `ErrorInfo` reason and, for a rate limit, a `RetryInfo`. */
export function ttsCErrorBody(
  code: number,
  status: string,
  message: string,
  extra: { reason?: string; retryDelaySeconds?: number } = {},
): string {
  const details: Record<string, unknown>[] = [];
  if (extra.reason) {
    details.push({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: extra.reason,
      domain: 'googleapis.com',
      metadata: { service: 'texttospeech.googleapis.com' },
    });
  }
  if (extra.retryDelaySeconds !== undefined) {
    details.push({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: `${extra.retryDelaySeconds}s`,
    });
  }
  return JSON.stringify({ error: { code, message, status, ...(details.length > 0 ? { details } : {}) } });
}

/**
 * A local tts_d: the vendor's streaming synthesis (`POST /stream`, providers/tts/tts-d-wire.ts) on
 * loopback, on the machinery the request-per-piece simulators share (sim/tts-http.ts: keys, the
 * record of every request, pacing, and the failures tests inject — a refusal after `skip` answered
 * requests, a text's slow first byte, a body cut mid-audio, a scripted answer). What is tts_d's own is
 * here: the `Authorization: Bearer` key (401), the body as the vendor documents it (400: no voice or
 * text, text over 2,000 characters, a precision or rate it does not offer), the project (404 for one
 * it does not know), failures as `{"success":false,"message":"…"}`, and the answer — a streamed WAV
 * whose header carries grapheme cues (sim/tts-d-voice.ts), then the audio as it is made.
 */
import type { IncomingMessage } from 'node:http';
import { WAVE_MULAW } from '../providers/tts/tts-d-wav.js';
import {
  TTS_D_MAX_CHARACTERS,
  TTS_D_PRECISIONS,
  TTS_D_SAMPLE_RATES,
  TTS_D_STREAM_PATH,
  type TtsDPrecision,
  ttsDWavFormat,
} from '../providers/tts/tts-d-wire.js';
import { speechHeader } from './tts-d-voice.js';
import {
  type Answer,
  encoderFor,
  type ParsedSpeechRequest,
  type TtsHttpFailure,
  TtsHttpSimulator,
  type TtsHttpSimulatorOptions,
  type VendorError,
} from './tts-http.js';

/** The vendor's first byte comes a little later than the others' (its answer starts with a header). */
const TTS_D_TTFB_MS = 120;

const failureBody = (message: string) => JSON.stringify({ success: false, message });
const refusal = (status: number, message: string): VendorError => ({ status, body: failureBody(message) });

export class TtsDSimulator extends TtsHttpSimulator {
  protected readonly path = TTS_D_STREAM_PATH;
  protected readonly basePath = '';
  /** Sizes in the header as 0xFFFFFFFF, as the vendor's older models send them. */
  unknownSizes = false;
  readonly #projects = new Set<string>();

  constructor(options: Partial<TtsHttpSimulatorOptions> = {}) {
    super({ ttfbMs: TTS_D_TTFB_MS, ...options });
  }

  /** A project the vendor knows; a request naming any other is answered 404. */
  addProject(uuid: string): void {
    this.#projects.add(uuid);
  }

  protected keyOf(request: IncomingMessage): string | undefined {
    return /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  }

  protected keyRefusal(): VendorError {
    return refusal(401, 'Invalid API token');
  }

  protected parse(body: Record<string, unknown>): ParsedSpeechRequest | VendorError {
    const problem = invalidBody(body);
    if (problem) return refusal(400, problem);
    if (typeof body.project_uuid === 'string' && !this.#projects.has(body.project_uuid))
      return refusal(404, 'Project not found');
    const precision = (body.precision ?? 'PCM_32') as TtsDPrecision;
    const rate = Number(body.sample_rate ?? 48000) as 8000 | 16000;
    const settings: Record<string, unknown> = {};
    for (const flag of ['use_hd', 'apply_custom_pronunciations'])
      if (body[flag] !== undefined) settings[flag] = body[flag];
    return {
      text: String(body.data),
      voiceId: String(body.voice_uuid),
      ...(typeof body.model === 'string' ? { modelId: body.model } : {}),
      outputFormat: `${precision}/${rate}`,
      rate,
      encode: encoderFor({ encoding: precision === 'MULAW' ? 'mulaw' : 'linear16', sampleRate: rate }),
      settings,
    };
  }

  protected failure({ status, retryAfterSeconds }: TtsHttpFailure): VendorError {
    const headers: Record<string, string> = {};
    if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
    return { status, headers, body: failureBody(status === 429 ? 'Too many requests' : 'Simulated failure') };
  }

  protected async answer(answer: Answer): Promise<void> {
    const { response, record } = answer;
    const [precision, rate] = record.outputFormat.split('/') as [TtsDPrecision, string];
    const format = ttsDWavFormat(precision, Number(rate));
    const bytesPerMs = (format.sampleRate * (format.formatTag === WAVE_MULAW ? 1 : 2)) / 1000;
    // Chunked, with no length: the header first, then the audio as it is synthesized.
    response.writeHead(200, { 'content-type': 'audio/wav', 'transfer-encoding': 'chunked' });
    response.write(
      speechHeader(record.text, format, {
        msPerCharacter: this.options.msPerCharacter,
        unknownSizes: this.unknownSizes,
      }),
    );
    await this.streamAudio(answer, (audio) => audio.length / bytesPerMs);
  }
}

/** Why the vendor would refuse this body (400), or undefined. */
function invalidBody(body: Record<string, unknown>): string | undefined {
  if (typeof body.voice_uuid !== 'string' || body.voice_uuid === '') return 'voice_uuid is required';
  if (typeof body.data !== 'string' || body.data.trim() === '') return 'data is required';
  if (body.data.length > TTS_D_MAX_CHARACTERS)
    return `data is longer than ${TTS_D_MAX_CHARACTERS} characters`;
  if (body.project_uuid !== undefined && typeof body.project_uuid !== 'string')
    return 'project_uuid must be a string';
  const precision = body.precision ?? 'PCM_32';
  if (!TTS_D_PRECISIONS.includes(precision as TtsDPrecision))
    return `precision must be one of ${TTS_D_PRECISIONS.join(', ')}`;
  const rate = body.sample_rate ?? 48000;
  if (!TTS_D_SAMPLE_RATES.includes(rate as (typeof TTS_D_SAMPLE_RATES)[number]))
    return `sample_rate must be one of ${TTS_D_SAMPLE_RATES.join(', ')}`;
  for (const flag of ['use_hd', 'apply_custom_pronunciations'])
    if (body[flag] !== undefined && typeof body[flag] !== 'boolean') return `${flag} must be a boolean`;
  if (body.model !== undefined && typeof body.model !== 'string') return 'model must be a string';
  // The tone voice is made at telephone rates; the vendor's others are real but not simulated.
  if ((rate !== 8000 && rate !== 16000) || (precision !== 'PCM_16' && precision !== 'MULAW'))
    return 'The simulator speaks MULAW and PCM_16 at 8000 or 16000 Hz';
  return undefined;
}

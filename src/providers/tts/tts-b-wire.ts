/**
 * tts_b's speech API as both sides speak it (the adapter tts-b.ts and the simulator sim/tts-b.ts):
 * `POST {base}/audio/speech` with a JSON body — `model`, `input` (at most 4,096 characters), `voice`
 * (a built-in name, or `{"id": …}` for a custom voice), `response_format`, and optionally `speed`
 * (0.25–4) and `instructions` (not for the `tts-1` models) — authorised by `Authorization: Bearer`.
 * With `response_format: "pcm"` the answer's body is raw 16-bit little-endian mono PCM at 24 kHz,
 * streamed as it is synthesized: the format with the least work before the first byte (no container,
 * no codec), which the adapter resamples once to the carrier's rate. Errors are JSON
 * `{"error":{"message","type","param","code"}}`.
 */

export const TTS_B = 'tts_b';
export const TTS_B_SPEECH_PATH = '/audio/speech';
/** The vendor's raw PCM rate. */
export const TTS_B_PCM_RATE = 24_000;
export const TTS_B_MAX_INPUT = 4_096;
/** The vendor's newest speech model, which also takes `instructions`. */
export const TTS_B_DEFAULT_MODEL = 'gpt-4o-mini-tts';
export const TTS_B_SPEED = { min: 0.25, max: 4 } as const;

export interface TtsBSpeechRequest {
  model: string;
  input: string;
  voice: string | { id: string };
  response_format: string;
  speed?: number;
  instructions?: string;
}

/** The older models take no `instructions`: sending them would be refused. */
export function takesInstructions(model: string): boolean {
  return !/^tts-1(-hd)?(-\d|$)/.test(model);
}

/**
 * The request for one piece of text. Settings come from `tts_settings.provider_config` (and the
 * stream's voice settings, which win): a speed outside the vendor's range or instructions a model
 * cannot take are left out rather than sent to be refused on every sentence.
 */
export function ttsBRequest(
  text: string,
  options: { voiceId: string; modelId?: string; settings: Record<string, unknown> },
): TtsBSpeechRequest {
  const model = options.modelId ?? TTS_B_DEFAULT_MODEL;
  const body: TtsBSpeechRequest = {
    model,
    input: text,
    // Custom voices are addressed by id (`voice_…`), the built-in ones by name.
    voice: /^voice_/.test(options.voiceId) ? { id: options.voiceId } : options.voiceId,
    response_format: 'pcm',
  };
  const { speed, instructions } = options.settings;
  if (typeof speed === 'number' && speed >= TTS_B_SPEED.min && speed <= TTS_B_SPEED.max) body.speed = speed;
  if (typeof instructions === 'string' && instructions.trim() && takesInstructions(model)) {
    body.instructions = instructions.slice(0, TTS_B_MAX_INPUT);
  }
  return body;
}

/** The vendor's error body. */
export function ttsBErrorBody(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

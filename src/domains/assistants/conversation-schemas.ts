/**
 * The settings of how an assistant converses, as TypeBox schemas with their documented defaults and
 * help texts: its model (llm_provider_config, llm_settings), its turn-taking (interruption_settings),
 * its voice (tts_settings) and its hearing (stt_settings); and the string shapes all settings share.
 * `schemas.ts` puts them together into the assistant.
 */
import { type TSchema, Type } from 'typebox';
import { literalUnion, OpenObject } from '../../lib/schema.js';
import { TTS_PROVIDERS } from '../../providers/ids.js';

export const Url = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 });
export const Text = (maxLength: number) => Type.String({ maxLength });
export const Secret = Type.String({ minLength: 1, maxLength: 4096 });
/** `schema` with the help text the API's document shows for the field. */
export const described = <T extends TSchema>(schema: T, description: string): T => ({
  ...schema,
  description,
});

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful voice assistant. Keep answers short and conversational.';
export const DEFAULT_WELCOME_MESSAGE = 'Hello! How can I help you today?';
export const DEFAULT_IDLE_MESSAGE = 'Are you still there?';
/** Speech models of the newest generation (nova-3…) take `keyterms`. */
export function takesKeyterms(model: string): boolean {
  return /^nova-3(-|$)/.test(model);
}

/** The older generations (nova-2…, nova…, enhanced…, base…) take `keywords`. */
export function takesKeywords(model: string): boolean {
  return !takesKeyterms(model) && /^(nova|enhanced|base)(-|$)/.test(model);
}

export const LlmProviderConfig = Type.Object(
  {
    api_key: Type.Optional(
      described(
        Secret,
        "The model vendor's API key (write-only: answers show it masked); up to 4096 characters",
      ),
    ),
    model: Type.Optional(
      described(
        Text(200),
        "The vendor's model name; absent: the vendor's default model (up to 200 characters)",
      ),
    ),
    base_url: Type.Optional(
      described(
        Url,
        'The endpoint of an OpenAI-compatible server (http or https); required when llm_provider is custom',
      ),
    ),
    custom_config: Type.Optional(
      described(OpenObject, 'Extra vendor-specific request options, passed on as given (a JSON object)'),
    ),
  },
  {
    additionalProperties: false,
    description: 'api_key is required when the object is given; base_url when llm_provider is custom.',
  },
);

export const LlmSettings = Type.Object(
  {
    temperature: Type.Number({
      minimum: 0,
      maximum: 2,
      default: 0.7,
      description: 'Sampling randomness, 0 to 2: lower is more predictable, higher more varied',
    }),
    max_tokens: Type.Integer({
      minimum: 1,
      maximum: 32_000,
      default: 1000,
      description: 'The most tokens the model may write in one answer (1 to 32,000)',
    }),
    system_prompt: Type.String({
      maxLength: 50_000,
      default: DEFAULT_SYSTEM_PROMPT,
      description:
        'The instructions the model follows in every call: its role, tone and rules (up to 50,000 characters)',
    }),
    welcome_message: Type.String({
      maxLength: 2000,
      default: DEFAULT_WELCOME_MESSAGE,
      description:
        "What the assistant says first when a call starts, with the call's variables (up to 2000 characters)",
    }),
    top_p: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 1,
      description: 'Nucleus sampling, 0 to 1: only the most likely words making up this share are considered',
    }),
    frequency_penalty: Type.Number({
      minimum: -2,
      maximum: 2,
      default: 0,
      description: 'From -2 to 2: positive values make the model repeat the same words less',
    }),
    presence_penalty: Type.Number({
      minimum: -2,
      maximum: 2,
      default: 0,
      description: 'From -2 to 2: positive values push the model towards new topics',
    }),
    stop_sequences: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      maxItems: 4,
      default: [],
      description: 'Up to 4 texts (100 characters each) at which the model stops writing',
    }),
  },
  { additionalProperties: false },
);

export const InterruptionSettings = Type.Object(
  {
    interruption_threshold: Type.Integer({
      minimum: 1,
      maximum: 50,
      default: 3,
      description: 'Words the caller must say to interrupt',
    }),
    min_speaking_time: Type.Number({
      minimum: 0,
      maximum: 30,
      default: 0.5,
      description: 'Seconds the assistant speaks before it can be interrupted',
    }),
    interruption_cooldown: Type.Number({
      minimum: 0,
      maximum: 60,
      default: 2,
      description: 'Seconds between interruptions',
    }),
  },
  { additionalProperties: false },
);

export const TtsSettings = Type.Object(
  {
    provider: literalUnion(TTS_PROVIDERS, {
      default: 'tts_a',
      description: "The text-to-speech vendor that speaks the assistant's answers",
    }),
    voice_id: Type.String({
      minLength: 1,
      maxLength: 200,
      default: 'default',
      description: "The vendor's voice to speak with (its id or name; up to 200 characters)",
    }),
    model_id: Type.Optional(
      described(Text(200), "The vendor's speech model; absent: the vendor's default (up to 200 characters)"),
    ),
    latency: Type.Integer({
      minimum: 0,
      maximum: 4,
      default: 1,
      description: 'Streaming latency optimisation, 0 (none, best quality) to 4 (fastest first audio)',
    }),
    provider_config: Type.Object(
      {},
      {
        additionalProperties: true,
        default: {},
        description:
          "The vendor's own options (tts_c language, tts_d project_uuid…); values named like keys are secrets",
      },
    ),
    api_key: Type.Optional(
      described(Secret, "The voice vendor's API key (write-only); absent: the platform's key"),
    ),
    stability: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'tts_a; default 0.5' })),
    similarity_boost: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'tts_a; default 0.75' }),
    ),
    style: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'tts_a; default 0' })),
    use_speaker_boost: Type.Optional(Type.Boolean({ description: 'tts_a; default true' })),
  },
  { additionalProperties: false },
);

/** tts_a's extra fields live at the top level of tts_settings and default only for tts_a. */
export const TTS_A_DEFAULTS = {
  stability: 0.5,
  similarity_boost: 0.75,
  style: 0,
  use_speaker_boost: true,
} as const;

export const SttSettings = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      maxLength: 100,
      default: 'nova-3',
      description:
        'The speech-to-text model (nova-3 takes keyterms; nova-2, nova, enhanced, base take keywords)',
    }),
    language: Type.String({
      pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
      default: 'en-US',
      description: 'The language callers speak, as a language code such as en-US',
    }),
    punctuate: Type.Boolean({ default: true, description: 'Add punctuation to what the caller said' }),
    interim_results: Type.Boolean({
      default: true,
      description: 'Hear words as they are spoken (needed for interruptions), not only whole phrases',
    }),
    endpointing: Type.Object(
      {
        silence_threshold: Type.Integer({
          minimum: 0,
          maximum: 10_000,
          default: 500,
          description:
            "Milliseconds of silence after which the vendor ends the caller's phrase (0 to 10,000)",
        }),
        min_silence_duration: Type.Integer({
          minimum: 0,
          maximum: 10_000,
          default: 500,
          description: 'Milliseconds: the shortest pause counted as silence (0 to 10,000)',
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: "How the end of the caller's phrase is found from silence",
      },
    ),
    utterance_end_ms: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 1000,
      description: 'Milliseconds without a new word after which the turn ends anyway (0: none; up to 10,000)',
    }),
    vad_turnoff: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 500,
      description: "Milliseconds of silence before the caller's turn may end (0 to 10,000)",
    }),
    smart_format: Type.Boolean({
      default: true,
      description: 'Write numbers, dates and amounts as digits and symbols in transcripts',
    }),
    keywords: Type.Array(
      Type.Object(
        {
          keyword: Type.String({ minLength: 1, maxLength: 100, description: 'A word to listen for' }),
          intensifier: Type.Optional(
            Type.Number({ minimum: -10, maximum: 10, description: 'How much to favour it, -10 to 10' }),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 100, default: [], description: 'Older models only (nova-2, nova, enhanced, base)' },
    ),
    keyterms: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      maxItems: 100,
      default: [],
      description: 'Newest model only (nova-3)',
    }),
    audio_denoising: Type.Boolean({
      default: false,
      description: "Reduce background noise in the caller's audio before it is transcribed",
    }),
    api_key: Type.Optional(
      described(Secret, "The speech-to-text vendor's API key (write-only); absent: the platform's key"),
    ),
  },
  { additionalProperties: false },
);

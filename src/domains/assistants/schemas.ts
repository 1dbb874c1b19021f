/**
 * The assistant configuration model of platform-api.md ("Assistant"), as TypeBox schemas. Inner
 * fields carry the documented defaults, so a nested object — on create, or given in a PUT — is
 * completed and validated as a whole. Only the create schema defaults the top-level objects.
 */

import { type Static, type TProperties, type TSchema, Type } from 'typebox';
import { completeDefaults, literalUnion, Nullable, OpenObject } from '../../lib/schema.js';
import type { SecretField } from '../../lib/secret-paths.js';
import { LLM_PROVIDER_IDS, TTS_PROVIDERS } from '../../providers/ids.js';
import { CustomTools, CustomToolsOut } from './custom-tools.js';
import { ASSISTANT_EXAMPLE } from './example.js';

const Url = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 });
const Text = (maxLength: number) => Type.String({ maxLength });
const Secret = Type.String({ minLength: 1, maxLength: 4096 });

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
    api_key: Type.Optional(Secret),
    model: Type.Optional(Text(200)),
    base_url: Type.Optional(Url),
    custom_config: Type.Optional(OpenObject),
  },
  {
    additionalProperties: false,
    description: 'api_key is required when the object is given; base_url when llm_provider is custom.',
  },
);

export const LlmSettings = Type.Object(
  {
    temperature: Type.Number({ minimum: 0, maximum: 2, default: 0.7 }),
    max_tokens: Type.Integer({ minimum: 1, maximum: 32_000, default: 1000 }),
    system_prompt: Type.String({ maxLength: 50_000, default: DEFAULT_SYSTEM_PROMPT }),
    welcome_message: Type.String({ maxLength: 2000, default: DEFAULT_WELCOME_MESSAGE }),
    top_p: Type.Number({ minimum: 0, maximum: 1, default: 1 }),
    frequency_penalty: Type.Number({ minimum: -2, maximum: 2, default: 0 }),
    presence_penalty: Type.Number({ minimum: -2, maximum: 2, default: 0 }),
    stop_sequences: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 4, default: [] }),
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
    provider: literalUnion(TTS_PROVIDERS, { default: 'tts_a' }),
    voice_id: Type.String({ minLength: 1, maxLength: 200, default: 'default' }),
    model_id: Type.Optional(Text(200)),
    latency: Type.Integer({ minimum: 0, maximum: 4, default: 1 }),
    provider_config: Type.Object({}, { additionalProperties: true, default: {} }),
    api_key: Type.Optional(Secret),
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
    model: Type.String({ minLength: 1, maxLength: 100, default: 'nova-3' }),
    language: Type.String({ pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$', default: 'en-US' }),
    punctuate: Type.Boolean({ default: true }),
    interim_results: Type.Boolean({ default: true }),
    endpointing: Type.Object(
      {
        silence_threshold: Type.Integer({ minimum: 0, maximum: 10_000, default: 500 }),
        min_silence_duration: Type.Integer({ minimum: 0, maximum: 10_000, default: 500 }),
      },
      { additionalProperties: false, default: {} },
    ),
    utterance_end_ms: Type.Integer({ minimum: 0, maximum: 10_000, default: 1000 }),
    vad_turnoff: Type.Integer({ minimum: 0, maximum: 10_000, default: 500 }),
    smart_format: Type.Boolean({ default: true }),
    keywords: Type.Array(
      Type.Object(
        {
          keyword: Type.String({ minLength: 1, maxLength: 100 }),
          intensifier: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
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
    audio_denoising: Type.Boolean({ default: false }),
    api_key: Type.Optional(Secret),
  },
  { additionalProperties: false },
);

const ToolToggle = {
  enabled: Type.Boolean({ default: false }),
  scenarios: Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 50, default: [] }),
  custom_message: Type.Optional(Nullable(Text(2000))),
};

export const ToolsSettings = Type.Object(
  {
    enabled_tools: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, default: [] }),
    end_call: Type.Object(ToolToggle, { additionalProperties: false, default: {} }),
    transfer_call: Type.Object(
      {
        ...ToolToggle,
        transfer_numbers: Type.Array(Type.String({ maxLength: 32 }), {
          maxItems: 20,
          default: [],
          description: 'E.164',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    custom_tools: CustomTools,
  },
  { additionalProperties: false },
);

/**
 * Answering machines on outbound calls (voice/voicemail.ts): whether to detect them, and what to do —
 * leave `message` once the greeting has ended (its beep), or hang up at once.
 */
export const VoicemailSettings = Type.Object(
  {
    detection: Type.Boolean({
      default: true,
      description: 'Detect answering machines on outbound calls (the carrier, the first words, a beep)',
    }),
    action: Type.Union([literalUnion(['leave_message', 'hang_up'])], { default: 'leave_message' }),
    message: Type.Union([Text(2000), Type.Null()], {
      default: null,
      description:
        "A template with the call's variables; null: the assistant's end_call_message, or hang up without one",
    }),
    max_wait_seconds: Type.Integer({
      minimum: 1,
      maximum: 120,
      default: 20,
      description: "How long to wait for the machine's greeting to end before leaving the message",
    }),
  },
  { additionalProperties: false },
);

/** As answers show it: custom tools stored before their shape was settled are shown as they are. */
const ToolsSettingsOut = Type.Object(
  { ...ToolsSettings.properties, custom_tools: CustomToolsOut },
  { additionalProperties: false },
);

export const RagSettings = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    search_limit: Type.Integer({ minimum: 1, maximum: 50, default: 3 }),
    similarity_threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.7 }),
    embedding_model: Type.String({ minLength: 1, maxLength: 200, default: 'text-embedding-3-small' }),
    chunking_strategy: Type.Union([literalUnion(['recursive', 'fixed', 'sentence', 'semantic'])], {
      default: 'recursive',
    }),
    chunk_size: Type.Integer({ minimum: 100, maximum: 10_000, default: 1000 }),
    chunk_overlap: Type.Integer({ minimum: 0, maximum: 5000, default: 200 }),
    auto_process: Type.Boolean({ default: true }),
    include_metadata: Type.Boolean({ default: true }),
    context_window_tokens: Type.Integer({ minimum: 100, maximum: 200_000, default: 4000 }),
  },
  { additionalProperties: false },
);

export const LlmFallbackProviders = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    fallbacks: Type.Array(
      Type.Object(
        {
          provider: literalUnion(LLM_PROVIDER_IDS),
          api_key: Secret,
          base_url: Type.Optional(Url),
          model: Type.Optional(Text(200)),
        },
        { additionalProperties: false },
      ),
      { maxItems: 5, default: [] },
    ),
  },
  { additionalProperties: false },
);

export const CustomSettings = Type.Object(
  {
    structured_data_prompt: Type.Optional(Text(10_000)),
    structured_data_schema: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'A JSON Schema' }),
    ),
  },
  { additionalProperties: true },
);

/**
 * Call recordings. `enabled` absent: the organization's default — on, except where the organization
 * is health-data gated (`hipaa_enabled`), where only an explicit `true` records.
 */
export const RecordingSettings = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'Record both sides of each call. Absent: on, unless the organization has hipaa_enabled (then off).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CarrierAConfig = Type.Object(
  { account_sid: Type.String({ minLength: 1, maxLength: 128 }), auth_token: Secret },
  { additionalProperties: false },
);
export const CarrierBConfig = Type.Object(
  {
    api_key: Secret,
    connection_id: Type.String({ minLength: 1, maxLength: 128 }),
    public_key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
);

/**
 * The fields of an assistant's stored configuration (its `config` column), in the order the API
 * lists them. `AssistantSettings` types what the code reads from it.
 */
const SETTINGS = {
  llm_provider_config: Nullable(LlmProviderConfig),
  carrier_a_config: Nullable(CarrierAConfig),
  carrier_b_config: Nullable(CarrierBConfig),
  llm_settings: LlmSettings,
  webhook_url: Nullable(Url),
  sms_webhook_url: Nullable(Url),
  messaging_service_sid: Nullable(Text(128)),
  interruption_settings: InterruptionSettings,
  tts_settings: TtsSettings,
  stt_settings: SttSettings,
  end_call_message: Nullable(Text(2000)),
  transfer_call_message: Nullable(Text(2000)),
  idle_message: Nullable(Text(2000)),
  max_idle_messages: Nullable(Type.Integer({ minimum: 0, maximum: 10 })),
  idle_timeout: Nullable(Type.Integer({ minimum: 1, maximum: 600, description: 'Seconds' })),
  tools_settings: ToolsSettings,
  voicemail_settings: VoicemailSettings,
  rag_settings: RagSettings,
  llm_fallback_providers: LlmFallbackProviders,
  custom_settings: CustomSettings,
  recording_settings: Nullable(RecordingSettings),
};

/** The defaults the create schema gives (fields not named here have none). */
const CREATE_DEFAULTS: Record<string, unknown> = {
  is_active: true,
  llm_provider: 'llm_a',
  llm_settings: {},
  interruption_settings: {},
  tts_settings: {},
  stt_settings: {},
  idle_message: DEFAULT_IDLE_MESSAGE,
  max_idle_messages: 2,
  idle_timeout: 10,
  tools_settings: {},
  voicemail_settings: {},
  rag_settings: {},
  llm_fallback_providers: {},
  custom_settings: {},
};

/** The configurable fields, their schema, and the default the create schema gives them. */
const FIELDS: Array<[string, TSchema, unknown?]> = [
  ['description', Nullable(Text(2000))],
  ['is_active', Nullable(Type.Boolean())],
  ['llm_provider', Nullable(literalUnion(LLM_PROVIDER_IDS))],
  ...Object.entries(SETTINGS),
].map(([field, schema]) => [field as string, schema as TSchema, CREATE_DEFAULTS[field as string]]);

/**
 * An assistant's stored configuration, secrets in clear, as the code reads it. Every field is
 * optional: one written before it existed is absent. Stored values were validated when written.
 */
export const AssistantSettings = Type.Partial(Type.Object(SETTINGS));
export type AssistantSettings = Static<typeof AssistantSettings>;

/** Write-only secret fields, folded into the nested object they belong to; never in a response. */
export const FLAT_SECRET_FIELDS: TProperties = {
  llm_a_api_key: Type.Optional(Nullable(Secret)),
  custom_llm_url: Type.Optional(Nullable(Url)),
  stt_api_key: Type.Optional(Nullable(Secret)),
  tts_a_api_key: Type.Optional(Nullable(Secret)),
  carrier_a_account_sid: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 128 }))),
  carrier_a_auth_token: Type.Optional(Nullable(Secret)),
};

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '\\S',
  description: 'Unique in the organization',
});

export const AssistantCreate = completeDefaults(
  Type.Object(
    {
      name: Name,
      ...Object.fromEntries(
        FIELDS.map(([field, schema, fallback]) => [
          field,
          Type.Optional(fallback === undefined ? schema : { ...schema, default: fallback }),
        ]),
      ),
      ...FLAT_SECRET_FIELDS,
    },
    { additionalProperties: false, title: 'AssistantCreate', examples: [ASSISTANT_EXAMPLE] },
  ),
);

export const AssistantUpdate = completeDefaults(
  Type.Object(
    {
      name: Type.Optional(Name),
      ...Object.fromEntries(FIELDS.map(([field, schema]) => [field, Type.Optional(schema)])),
      ...FLAT_SECRET_FIELDS,
    },
    {
      additionalProperties: false,
      minProperties: 1,
      title: 'AssistantUpdate',
      examples: [{ description: 'Answers the main line after hours', idle_timeout: 15 }],
    },
  ),
);

/** The configuration fields of the response (flat secret fields are never returned). */
export const CONFIG_FIELDS = FIELDS.map(([field]) => field).filter(
  (f) => !['description', 'is_active', 'llm_provider'].includes(f),
);

/**
 * Where secrets sit inside the stored configuration (sealed there, masked in answers), and the fields
 * that say where each is sent: a masked value keeps a stored secret only while those stay (see
 * `restoreMasked`). `llm_provider` is the assistant's column, outside the configuration. Speech to
 * text has one vendor and the carriers one address each (operator settings), so those secrets have
 * nothing in the configuration that could send them elsewhere.
 */
export const SECRETS: readonly SecretField[] = [
  { path: 'llm_provider_config.api_key', boundTo: ['llm_provider', 'llm_provider_config.base_url'] },
  {
    path: 'llm_fallback_providers.fallbacks[].api_key',
    boundTo: ['llm_fallback_providers.fallbacks[].provider', 'llm_fallback_providers.fallbacks[].base_url'],
  },
  { path: 'carrier_a_config.auth_token' },
  { path: 'carrier_b_config.api_key' },
  { path: 'stt_settings.api_key' },
  { path: 'tts_settings.api_key', boundTo: ['tts_settings.provider'] },
  { path: 'tts_settings.provider_config.*', boundTo: ['tts_settings.provider'] },
  // Every header value of an HTTP tool: an Authorization or API key header by any name.
  {
    path: 'tools_settings.custom_tools[].http.headers.{}',
    boundTo: ['tools_settings.custom_tools[].http.url'],
  },
];

export const SECRET_PATHS = SECRETS.map((secret) => secret.path);

export const AssistantOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    user_id: Nullable(Type.Integer()),
    name: Type.String(),
    description: Nullable(Type.String()),
    is_active: Type.Boolean(),
    llm_provider: Type.Unsafe<string>({ type: 'string', enum: [...LLM_PROVIDER_IDS] }),
    ...Object.fromEntries(
      FIELDS.filter(([field]) => CONFIG_FIELDS.includes(field)).map(([field, schema]) => [
        field,
        Nullable(field === 'tools_settings' ? ToolsSettingsOut : schema),
      ]),
    ),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Assistant' },
);

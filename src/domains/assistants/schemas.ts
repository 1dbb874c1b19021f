/**
 * The assistant configuration model of platform-api.md ("Assistant"), as TypeBox schemas. Inner
 * fields carry the documented defaults, so a nested object — on create, or given in a PUT — is
 * completed and validated as a whole. Only the create schema defaults the top-level objects. The
 * settings objects live in conversation-schemas.ts and feature-schemas.ts (re-exported here).
 */

import { type Static, type TProperties, type TSchema, Type } from 'typebox';
import { completeDefaults, literalUnion, Nullable } from '../../lib/schema.js';
import type { SecretField } from '../../lib/secret-paths.js';
import { LLM_PROVIDER_IDS } from '../../providers/ids.js';
import {
  DEFAULT_IDLE_MESSAGE,
  described,
  InterruptionSettings,
  LlmProviderConfig,
  LlmSettings,
  Secret,
  SttSettings,
  Text,
  TtsSettings,
  Url,
} from './conversation-schemas.js';
import { ASSISTANT_EXAMPLE } from './example.js';
import {
  CarrierAConfig,
  CarrierBConfig,
  CustomSettings,
  LlmFallbackProviders,
  RagSettings,
  RecordingSettings,
  ToolsSettings,
  ToolsSettingsOut,
  VoicemailSettings,
} from './feature-schemas.js';

export {
  DEFAULT_IDLE_MESSAGE,
  DEFAULT_SYSTEM_PROMPT,
  DEFAULT_WELCOME_MESSAGE,
  InterruptionSettings,
  LlmProviderConfig,
  LlmSettings,
  SttSettings,
  TTS_A_DEFAULTS,
  TtsSettings,
  takesKeyterms,
  takesKeywords,
} from './conversation-schemas.js';
export {
  CarrierAConfig,
  CarrierBConfig,
  CustomSettings,
  LlmFallbackProviders,
  RagSettings,
  RecordingSettings,
  ToolsSettings,
  VoicemailSettings,
} from './feature-schemas.js';

/**
 * The fields of an assistant's stored configuration (its `config` column), in the order the API
 * lists them. `AssistantSettings` types what the code reads from it.
 */
const SETTINGS = {
  llm_provider_config: Nullable(LlmProviderConfig),
  carrier_a_config: Nullable(CarrierAConfig),
  carrier_b_config: Nullable(CarrierBConfig),
  llm_settings: LlmSettings,
  webhook_url: Nullable(described(Url, "Where the assistant's call events are posted (http or https)")),
  sms_webhook_url: Nullable(described(Url, 'Where incoming SMS to its numbers are posted (http or https)')),
  messaging_service_sid: Nullable(
    described(Text(128), 'The carrier_a messaging service SMS are sent through (up to 128 characters)'),
  ),
  interruption_settings: InterruptionSettings,
  tts_settings: TtsSettings,
  stt_settings: SttSettings,
  end_call_message: Nullable(
    described(Text(2000), 'What the assistant says before it hangs up (up to 2000 characters)'),
  ),
  transfer_call_message: Nullable(
    described(Text(2000), 'What the assistant says before it transfers a call (up to 2000 characters)'),
  ),
  idle_message: Nullable(
    described(Text(2000), 'What the assistant says when the caller stays silent; null: nothing'),
  ),
  max_idle_messages: Nullable(
    Type.Integer({
      minimum: 0,
      maximum: 10,
      description: 'How many idle messages are said before the call ends (0 to 10)',
    }),
  ),
  idle_timeout: Nullable(
    Type.Integer({
      minimum: 1,
      maximum: 600,
      description: 'Seconds of silence from the caller before the idle message (1 to 600); null: never',
    }),
  ),
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
  [
    'description',
    Nullable(described(Text(2000), 'A note for people about the assistant (up to 2000 characters)')),
  ],
  ['is_active', Nullable(Type.Boolean({ description: 'Whether calls may use the assistant' }))],
  [
    'llm_provider',
    Nullable(literalUnion(LLM_PROVIDER_IDS, { description: 'The model vendor that writes the answers' })),
  ],
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

/**
 * The settings of what an assistant does around its conversations, as TypeBox schemas with their
 * documented defaults and help texts: tools (built-in and custom), answering machines, knowledge
 * (rag_settings), fallback model vendors, structured data, recording, and its own carrier accounts.
 */
import { Type } from 'typebox';
import { literalUnion, Nullable } from '../../lib/schema.js';
import { LLM_PROVIDER_IDS } from '../../providers/ids.js';
import { described, Secret, Text, Url } from './conversation-schemas.js';
import { CustomTools, CustomToolsOut } from './custom-tools.js';

const ToolToggle = {
  enabled: Type.Boolean({ default: false, description: 'Offer this tool to the model in calls' }),
  scenarios: Type.Array(Type.String({ minLength: 1, maxLength: 500 }), {
    maxItems: 50,
    default: [],
    description: 'When the model should use the tool, in words (up to 50, 500 characters each)',
  }),
  custom_message: Type.Optional(
    Nullable(described(Text(2000), 'What the assistant says as it uses the tool (up to 2000 characters)')),
  ),
};

export const ToolsSettings = Type.Object(
  {
    enabled_tools: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      maxItems: 100,
      default: [],
      description: 'Further built-in tools by name: collect_digits, send_digits (keypad tones)',
    }),
    end_call: Type.Object(ToolToggle, {
      additionalProperties: false,
      default: {},
      description: 'The model may hang up, after saying goodbye',
    }),
    transfer_call: Type.Object(
      {
        ...ToolToggle,
        transfer_numbers: Type.Array(Type.String({ maxLength: 32 }), {
          maxItems: 20,
          default: [],
          description: 'The numbers a call may be transferred to, in E.164 (up to 20)',
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'The model may transfer the call to one of transfer_numbers',
      },
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
    action: Type.Union([literalUnion(['leave_message', 'hang_up'])], {
      default: 'leave_message',
      description: 'On reaching a machine: leave the message after the beep, or hang up at once',
    }),
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
export const ToolsSettingsOut = Type.Object(
  { ...ToolsSettings.properties, custom_tools: CustomToolsOut },
  { additionalProperties: false },
);

export const RagSettings = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description: "Answer from the assistant's knowledge documents during calls",
    }),
    search_limit: Type.Integer({
      minimum: 1,
      maximum: 50,
      default: 3,
      description: 'How many passages a turn retrieves at most (1 to 50)',
    }),
    similarity_threshold: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 0.7,
      description: 'The least similarity in meaning, 0 to 1, a passage needs to be retrieved',
    }),
    embedding_model: Type.String({
      minLength: 1,
      maxLength: 200,
      default: 'text-embedding-3-small',
      description: 'The embeddings model that turns passages and questions into vectors',
    }),
    chunking_strategy: Type.Union([literalUnion(['recursive', 'fixed', 'sentence', 'semantic'])], {
      default: 'recursive',
      description: 'How documents are split into passages',
    }),
    chunk_size: Type.Integer({
      minimum: 100,
      maximum: 10_000,
      default: 1000,
      description: 'Characters per passage (100 to 10,000)',
    }),
    chunk_overlap: Type.Integer({
      minimum: 0,
      maximum: 5000,
      default: 200,
      description: 'Characters neighbouring passages share (0 to 5000, less than chunk_size)',
    }),
    auto_process: Type.Boolean({
      default: true,
      description: 'Process an uploaded document at once (off: it waits, pending, for a reprocess)',
    }),
    include_metadata: Type.Boolean({
      default: true,
      description: "Give the model each passage's document name, category, tags and place",
    }),
    context_window_tokens: Type.Integer({
      minimum: 100,
      maximum: 200_000,
      default: 4000,
      description: 'The most tokens of passages added to a turn (100 to 200,000)',
    }),
  },
  { additionalProperties: false },
);

export const LlmFallbackProviders = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: 'Try the fallbacks when the model fails' }),
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
      { maxItems: 5, default: [], description: 'Up to 5 model vendors tried in order, each with its key' },
    ),
  },
  { additionalProperties: false },
);

export const CustomSettings = Type.Object(
  {
    structured_data_prompt: Type.Optional(
      described(Text(10_000), 'What to draw from each finished call, in words (up to 10,000 characters)'),
    ),
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
  {
    account_sid: Type.String({ minLength: 1, maxLength: 128, description: 'The carrier_a account SID' }),
    auth_token: described(Secret, 'The carrier_a auth token (write-only)'),
  },
  { additionalProperties: false },
);
export const CarrierBConfig = Type.Object(
  {
    api_key: described(Secret, 'The carrier_b API key (write-only)'),
    connection_id: Type.String({ minLength: 1, maxLength: 128, description: 'The carrier_b connection id' }),
    public_key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description: "carrier_b's public key, to check its webhooks",
      }),
    ),
  },
  { additionalProperties: false },
);

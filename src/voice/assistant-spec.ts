/**
 * Who answers a call, as the session needs it (`AssistantSpec`): the assistant's prompt with the
 * call's variables, its tools (built-in and the ones the session runs), its fixed lines, sampling
 * parameters, and the models and voice to try in order. Built once when a call starts, and again for
 * each assistant a graph hands the call to (graph-call.ts).
 */
import { TTS_A_DEFAULTS } from '../domains/assistants/schemas.js';
import type { ResolvedConfig } from '../domains/runtime/resolve-config.js';
import type { TtsAdapter } from '../providers/tts/types.js';
import { builtInTools, type CallContext, renderLenient, systemPrompt } from './conversation.js';
import type { KnowledgeSource } from './knowledge.js';
import type { AssistantSpec } from './session-spec.js';
import { keypadTools } from './tools/keypad-tools.js';
import type { CallTool } from './tools/types.js';
import type { VendorPlan } from './vendors.js';

const DEFAULT_GOODBYE = 'Thank you for calling. Goodbye.';
const DEFAULT_TRANSFER = 'Please hold while I transfer your call.';
const DEFAULT_IDLE = 'Are you still there?';

export interface AssistantParts {
  resolved: ResolvedConfig;
  context: CallContext;
  /** The vendors to try (`planVendors`), after any key limits were applied. */
  plan: VendorPlan;
  ttsAdapter: TtsAdapter | undefined;
  /** The tools the session runs for this assistant (custom tools, update_context); the keypad's are added here. */
  callTools: CallTool[];
  /** A campaign's personalized goodbye, which wins over the assistant's. */
  endCallMessage?: string;
  /** The assistant's documents, when it has knowledge to search (knowledge.ts). */
  knowledge?: KnowledgeSource;
}

export function assistantSpec(parts: AssistantParts): AssistantSpec {
  const { resolved, context } = parts;
  const { settings } = resolved;
  const llm = settings.llm_settings;
  const tts = settings.tts_settings;
  const language = (tts?.provider_config as Record<string, unknown> | undefined)?.language;
  return {
    assistantId: resolved.assistant.id,
    systemPrompt: systemPrompt(settings, context),
    tools: builtInTools(settings),
    // collect_digits and send_digits, when `enabled_tools` names them.
    callTools: [...parts.callTools, ...keypadTools(settings.tools_settings?.enabled_tools)],
    idleMessage: renderLenient(settings.idle_message ?? DEFAULT_IDLE, context.variables),
    goodbyeMessage:
      parts.endCallMessage ??
      renderLenient(
        settings.tools_settings?.end_call?.custom_message ?? settings.end_call_message ?? DEFAULT_GOODBYE,
        context.variables,
      ),
    transferMessage: renderLenient(
      settings.tools_settings?.transfer_call?.custom_message ??
        settings.transfer_call_message ??
        DEFAULT_TRANSFER,
      context.variables,
    ),
    llmParameters: {
      temperature: llm?.temperature ?? 0.7,
      maxTokens: llm?.max_tokens ?? 1000,
      topP: llm?.top_p ?? 1,
      frequencyPenalty: llm?.frequency_penalty ?? 0,
      presencePenalty: llm?.presence_penalty ?? 0,
      ...(llm?.stop_sequences && llm.stop_sequences.length > 0 ? { stop: llm.stop_sequences } : {}),
    },
    plan: parts.plan,
    ...(parts.knowledge ? { knowledge: parts.knowledge } : {}),
    tts: {
      adapter: parts.ttsAdapter,
      voice: {
        voiceId: tts?.voice_id ?? 'default',
        ...(tts?.model_id ? { modelId: tts.model_id } : {}),
        ...(typeof language === 'string' ? { language } : {}),
        providerConfig: { ...((tts?.provider_config as Record<string, unknown> | undefined) ?? {}) },
        voiceSettings:
          !tts?.provider || tts.provider === 'tts_a'
            ? {
                stability: tts?.stability ?? TTS_A_DEFAULTS.stability,
                similarity_boost: tts?.similarity_boost ?? TTS_A_DEFAULTS.similarity_boost,
                style: tts?.style ?? TTS_A_DEFAULTS.style,
                use_speaker_boost: tts?.use_speaker_boost ?? TTS_A_DEFAULTS.use_speaker_boost,
              }
            : {},
      },
    },
  };
}

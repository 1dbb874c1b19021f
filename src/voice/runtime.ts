/**
 * The call runtime: turns a proven media stream into a live session. It reads the call and what it
 * uses (`runtime/resolve-config.ts`: the assistant's settings, keys, fallbacks), works out the
 * vendors to try (`vendors.ts`), the turn-taking settings and the prompt, and starts the session. A
 * call that cannot speak at all (no usable voice) is ended with its reason recorded, never left mute.
 * Sessions live in this process's memory, one per call, for as long as the stream is open.
 */
import type { ProviderUrls } from '../config.js';
import type { Tenant } from '../db/tenant.js';
import { TTS_A_DEFAULTS } from '../domains/assistants/schemas.js';
import type { LiveCalls } from '../domains/calls/live.js';
import type { ConfigResolver, ResolvedConfig } from '../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../lib/outbound-target.js';
import type { TemplateVariables } from '../lib/templates.js';
import type { LlmAdapter } from '../providers/llm/types.js';
import type { SttAdapter } from '../providers/stt/types.js';
import type { TtsAdapter } from '../providers/tts/types.js';
import { type AudioFormat, MULAW_8K } from './audio.js';
import {
  builtInTools,
  type CallContext,
  Conversation,
  renderLenient,
  systemPrompt,
  welcomeMessage,
} from './conversation.js';
import { EarlySpeech } from './early-speech.js';
import type { VoiceMetrics } from './metrics.js';
import {
  type CallRecorder,
  CallSession,
  type SessionObserver,
  type SessionSpec,
  type VoiceActivityFactory,
} from './session.js';
import type { CallRuntime, MediaConnection, MediaHandlers } from './transport.js';
import type { TurnSettings } from './turn-manager.js';
import type { TurnRecord } from './turn-metrics.js';
import { fallbackRecord, planVendors } from './vendors.js';

export interface VoiceRuntimeDeps {
  live: LiveCalls;
  appendTranscript(
    tenant: Tenant,
    callId: number,
    segments: Array<{ speaker: 'user' | 'assistant'; text: string; startedAt: Date; endedAt: Date }>,
  ): Promise<unknown>;
  recordTurn(tenant: Tenant, callId: number, turn: TurnRecord): Promise<unknown>;
  resolver: ConfigResolver;
  targets: OutboundTargets;
  urls: ProviderUrls;
  stt: Partial<Record<string, SttAdapter>>;
  tts: Partial<Record<string, TtsAdapter>>;
  llmAdapterFor(provider: string): LlmAdapter | undefined;
  vad: VoiceActivityFactory;
  metrics?: VoiceMetrics;
  log: { warn(data: object, message: string): void };
}

/** How long a prepared call waits for its stream. */
const PREPARED_TTL_MS = 60_000;
const DEFAULT_GOODBYE = 'Thank you for calling. Goodbye.';
const DEFAULT_TRANSFER = 'Please hold while I transfer your call.';
const DEFAULT_IDLE = 'Are you still there?';

/** Turn-taking settings from the assistant's interruption, hearing and idle settings (defaults as the API gives). */
export function turnSettings(settings: ResolvedConfig['settings']): TurnSettings {
  const interruption: Partial<NonNullable<typeof settings.interruption_settings>> =
    settings.interruption_settings ?? {};
  const stt = settings.stt_settings;
  const utteranceEnd = stt?.utterance_end_ms ?? 1000;
  return {
    interruptionThreshold: interruption.interruption_threshold ?? 3,
    minSpeakingTimeMs: (interruption.min_speaking_time ?? 0.5) * 1000,
    interruptionCooldownMs: (interruption.interruption_cooldown ?? 2) * 1000,
    endpointMinMs: stt?.vad_turnoff ?? 500,
    // Without the vendor's finality the turn still ends: after 3 s of silence, or the utterance-end
    // wait when the assistant asks for a longer one.
    endpointMaxMs: Math.max(3000, utteranceEnd),
    idleTimeoutMs: settings.idle_timeout === null ? null : (settings.idle_timeout ?? 10) * 1000,
    maxIdleMessages: settings.max_idle_messages ?? 2,
  };
}

export class VoiceRuntime implements CallRuntime {
  readonly #sessions = new Map<number, CallSession>();
  /** Calls being prepared or prepared, until their stream comes. */
  readonly #prepared = new Map<number, Promise<Omit<SessionSpec, 'send'> | string>>();

  constructor(private readonly deps: VoiceRuntimeDeps) {}

  /** Live sessions in this process. */
  get activeCalls(): number {
    return this.#sessions.size;
  }

  /**
   * The call's stream is about to connect (its answer markup is on the way): read what the call uses
   * and start synthesizing the greeting now, so the caller hears it without waiting on the vendor.
   * Forgotten after a minute when no stream comes.
   */
  prepare(tenant: Tenant, callId: number, format: AudioFormat = MULAW_8K): void {
    if (this.#prepared.has(callId) || this.#sessions.has(callId)) return;
    const setup = this.#setup(tenant, callId, format).catch((error: unknown) => {
      this.deps.log.warn({ err: error, callId }, 'preparing the call failed');
      return 'the call could not be prepared';
    });
    this.#prepared.set(callId, setup);
    setTimeout(() => {
      if (this.#prepared.get(callId) !== setup) return;
      this.#prepared.delete(callId);
      void setup.then((prepared) => {
        if (typeof prepared !== 'string') prepared.earlyGreeting?.abort.abort();
      });
    }, PREPARED_TTL_MS).unref();
  }

  async attach(connection: MediaConnection): Promise<MediaHandlers> {
    const { tenant, callId } = connection;
    const early = this.#prepared.get(callId);
    this.#prepared.delete(callId);
    let prepared = await (early ?? this.#setup(tenant, callId, connection.start.format));
    if (typeof prepared !== 'string' && prepared.format.encoding !== connection.start.format.encoding) {
      // The carrier streams another format than foreseen: the early greeting's audio is of no use.
      prepared.earlyGreeting?.abort.abort();
      prepared = await this.#setup(tenant, callId, connection.start.format);
    }
    if (typeof prepared === 'string') {
      void this.#recorder(tenant, callId)
        .event('call.voice_unavailable', { reason: prepared })
        .catch(() => {});
      connection.send.close();
      return { media() {}, mark() {}, dtmf() {}, ended() {} };
    }
    const session = new CallSession({ ...prepared, send: connection.send });
    this.#sessions.set(callId, session);
    this.deps.metrics?.callStarted();
    session.start();
    return session;
  }

  /** Everything a session needs but the stream; a string says why the call cannot speak. */
  async #setup(
    tenant: Tenant,
    callId: number,
    format: AudioFormat,
  ): Promise<Omit<SessionSpec, 'send'> | string> {
    const origin = performance.now();
    const recorder = this.#recorder(tenant, callId);
    const call = await this.deps.live.call(tenant, callId);
    if (!call?.assistantId) return 'the call has no assistant';
    const resolved = await this.deps.resolver.resolve(tenant, {
      assistantId: call.assistantId,
      phoneNumber: call.fromPhoneNumber,
    });
    if (!resolved) return 'the assistant no longer exists';
    const plan = await planVendors(resolved, this.deps.urls, this.deps.targets);
    const ttsAdapter = this.deps.tts[resolved.tts.provider];
    if (plan.tts.length === 0 || !ttsAdapter) {
      return (
        resolved.missing.find((line) => line.startsWith('tts')) ??
        `tts: ${resolved.tts.provider} cannot speak in live calls yet`
      );
    }
    if (plan.skipped.length > 0)
      void recorder.event('call.vendor_skipped', { reasons: plan.skipped }).catch(() => {});
    const { settings } = resolved;
    const meta = call.callMeta as {
      variables?: TemplateVariables;
      agenda?: string;
      welcome_message?: string;
      /** A campaign's personalized goodbye. */
      end_call_message?: string;
    };
    const context: CallContext = {
      variables: meta.variables ?? {},
      ...(meta.agenda ? { agenda: meta.agenda } : {}),
      ...(meta.welcome_message ? { welcomeMessage: meta.welcome_message } : {}),
    };
    const llm = settings.llm_settings;
    const stt = settings.stt_settings;
    const tts = settings.tts_settings;
    const language = (tts?.provider_config as Record<string, unknown> | undefined)?.language;
    const spec: Omit<SessionSpec, 'send'> = {
      origin,
      format,
      recorder,
      conversation: new Conversation(systemPrompt(settings, context)),
      tools: builtInTools(settings),
      greeting: welcomeMessage(settings, context),
      idleMessage: renderLenient(settings.idle_message ?? DEFAULT_IDLE, context.variables),
      goodbyeMessage:
        meta.end_call_message ??
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
      turn: turnSettings(settings),
      llmParameters: {
        temperature: llm?.temperature ?? 0.7,
        maxTokens: llm?.max_tokens ?? 1000,
        topP: llm?.top_p ?? 1,
        frequencyPenalty: llm?.frequency_penalty ?? 0,
        presencePenalty: llm?.presence_penalty ?? 0,
        ...(llm?.stop_sequences && llm.stop_sequences.length > 0 ? { stop: llm.stop_sequences } : {}),
      },
      plan,
      stt: {
        adapter: this.deps.stt[resolved.stt.provider],
        options: {
          model: stt?.model ?? 'nova-3',
          language: stt?.language ?? 'en-US',
          endpointingMs: stt?.endpointing?.silence_threshold ?? 500,
          utteranceEndMs: stt?.utterance_end_ms ?? 1000,
          interimResults: stt?.interim_results ?? true,
          punctuate: stt?.punctuate ?? true,
          smartFormat: stt?.smart_format ?? true,
          keywords: stt?.keywords ?? [],
          keyterms: stt?.keyterms ?? [],
        },
      },
      tts: {
        adapter: ttsAdapter,
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
      llmAdapterFor: this.deps.llmAdapterFor,
      vad: this.deps.vad,
      observer: this.#observer(callId),
      log: this.deps.log,
    };
    const clock = () => performance.now() - origin;
    const greeting = spec.greeting;
    if (greeting) {
      spec.earlyGreeting = new EarlySpeech(
        {
          adapter: ttsAdapter,
          candidates: plan.tts,
          format,
          voice: spec.tts.voice,
          clock,
          onFallback: (from, error, next) => {
            this.deps.metrics?.vendorFailure('tts', error);
            void recorder
              .event('call.vendor_fallback', fallbackRecord('tts', from, error, next))
              .catch(() => {});
          },
        },
        greeting,
      );
    }
    return spec;
  }

  #observer(callId: number): SessionObserver {
    const metrics = this.deps.metrics;
    return {
      turn: (turn) => metrics?.observeTurn(turn.measurements),
      bargeIn: (stage, ms) => metrics?.observeBargeIn(stage, ms),
      interruption: () => metrics?.interruption(),
      vendorFailure: (kind, error) => metrics?.vendorFailure(kind, error),
      ended: () => {
        if (this.#sessions.delete(callId)) metrics?.callEnded();
      },
    };
  }

  #recorder(tenant: Tenant, callId: number): CallRecorder {
    const { live } = this.deps;
    return {
      transcript: (segment) => this.deps.appendTranscript(tenant, callId, [segment]),
      turn: (turn) => this.deps.recordTurn(tenant, callId, turn),
      event: (type, data) => live.event(tenant, callId, type, data),
      hangUp: () => live.hangUp(tenant, callId),
      transfer: (to) => live.transfer(tenant, callId, to),
    };
  }
}

/**
 * The call runtime: turns a proven media stream into a live session. It reads the call and what it
 * uses (`runtime/resolve-config.ts`: the assistant's settings, keys, fallbacks), works out the
 * vendors to try (`vendors.ts`) and the keys it may hold under the organization's concurrency limits
 * (`call-leases.ts`), the turn-taking settings and the prompt, and starts the session. A call that
 * cannot speak at all (no usable voice) is ended with its reason recorded, never left mute; one whose
 * vendor keys are all at their limit hears an apology first (`busy-apology.ts`).
 * Sessions live in this process's memory, one per call, for as long as the stream is open.
 */
import type { ProviderUrls } from '../config.js';
import type { Tenant } from '../db/tenant.js';
import type { LiveCalls } from '../domains/calls/live.js';
import type { VendorLeases } from '../domains/leases/service.js';
import type { ConfigResolver, ResolvedConfig } from '../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../lib/outbound-target.js';
import type { TemplateVariables } from '../lib/templates.js';
import type { LlmAdapter } from '../providers/llm/types.js';
import type { SttAdapter } from '../providers/stt/types.js';
import type { TtsAdapter } from '../providers/tts/types.js';
import { assistantSpec } from './assistant-spec.js';
import { type AudioFormat, MULAW_8K } from './audio.js';
import { turnAway } from './busy-apology.js';
import { CallLeases, LimitReached, leaseVendors } from './call-leases.js';
import { watchedRecorder } from './call-watch.js';
import { type CallContext, Conversation, welcomeMessage } from './conversation.js';
import { EarlySpeech } from './early-speech.js';
import { GraphCall } from './graph-call.js';
import { type GraphCalls, handOffAssistants } from './graph-setup.js';
import type { KnowledgeSource } from './knowledge.js';
import type { VoiceMetrics } from './metrics.js';
import {
  type CallRecorder,
  CallSession,
  type SessionObserver,
  type SessionSpec,
  type VoiceActivityFactory,
} from './session.js';
import type { AudioTap } from './session-spec.js';
import type { CallTool } from './tools/types.js';
import type { CallRuntime, MediaConnection, MediaHandlers } from './transport.js';
import type { TurnSettings } from './turn-manager.js';
import type { TurnRecord } from './turn-metrics.js';
import { fallbackRecord, planVendors } from './vendors.js';
import { type MachineVerdict, VoicemailFlows, voicemailSpec, withVoicemail } from './voicemail.js';

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
  /** Cluster-wide limits on vendor keys (call-leases.ts); without it no limit is enforced. */
  leases?: VendorLeases;
  /**
   * The custom tools (HTTP, serverless) an assistant's call runs, and why any were left out; without
   * it the model is shown none.
   */
  customTools?(
    tenant: Tenant,
    callId: number,
    resolved: ResolvedConfig,
  ): Promise<{ tools: CallTool[]; skipped: string[] }>;
  /** Graph calls (graph-setup.ts); without it a call on a graph's number stays with its entry assistant. */
  graphs?: GraphCalls;
  /** An assistant's knowledge in a call (knowledge-setup.ts; never rejects); without it none is used. */
  knowledge?(tenant: Tenant, resolved: ResolvedConfig): Promise<KnowledgeSource | undefined>;
  /** Call recordings (domains/recordings): a tap for each call the assistant's settings record. */
  recordings?: {
    start(
      tenant: Tenant,
      callId: number,
      format: AudioFormat,
      settings: ResolvedConfig['settings'],
    ): AudioTap | undefined;
  };
}

/** A session's spec but the stream, with the assistant's settings the recording decides by. */
type Ready = Omit<SessionSpec, 'send'> & { settings: ResolvedConfig['settings'] };
/** A prepared call: its session's spec, why it cannot speak, or that a vendor's keys are all taken. */
type Prepared = Ready | string | LimitReached;

/** How long a prepared call waits for its stream. */
const PREPARED_TTL_MS = 60_000;

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
  readonly #prepared = new Map<number, Promise<Prepared>>();
  /** The vendor keys each prepared or live call holds (released when it ends or never comes). */
  readonly #leases = new Map<number, CallLeases>();
  /** The voicemail flow of each live outbound call that detects answering machines. */
  readonly #voicemails = new VoicemailFlows(PREPARED_TTL_MS);
  /** The graph each prepared or live graph call walks (its session ends with the call). */
  readonly #graphs = new Map<number, GraphCall>();

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
  prepare(tenant: Tenant, callId: number, format: AudioFormat = MULAW_8K, configVersion?: number): void {
    if (this.#prepared.has(callId) || this.#sessions.has(callId)) return;
    const setup = this.#setup(tenant, callId, format, configVersion).catch((error: unknown) => {
      this.deps.log.warn({ err: error, callId }, 'preparing the call failed');
      return 'the call could not be prepared';
    });
    this.#prepared.set(callId, setup);
    setTimeout(() => {
      if (this.#prepared.get(callId) !== setup) return;
      this.#prepared.delete(callId);
      void setup.then((prepared) => {
        if (typeof prepared === 'object' && !(prepared instanceof LimitReached))
          prepared.earlyGreeting?.abort.abort();
        void this.#release(callId);
        this.#endGraph(callId);
      });
    }, PREPARED_TTL_MS).unref();
  }

  async attach(connection: MediaConnection): Promise<MediaHandlers> {
    const { tenant, callId } = connection;
    const early = this.#prepared.get(callId);
    this.#prepared.delete(callId);
    let prepared = await (early ?? this.#setup(tenant, callId, connection.start.format));
    if (
      typeof prepared === 'object' &&
      !(prepared instanceof LimitReached) &&
      prepared.format.encoding !== connection.start.format.encoding
    ) {
      // The carrier streams another format than foreseen: the early greeting's audio is of no use.
      prepared.earlyGreeting?.abort.abort();
      await this.#release(callId);
      prepared = await this.#setup(tenant, callId, connection.start.format);
    }
    if (prepared instanceof LimitReached) {
      void this.#recorder(tenant, callId)
        .event('call.voice_unavailable', { reason: prepared.reason })
        .catch(() => {});
      return turnAway(connection.send, connection.start.format, prepared.voice, () => {
        void this.#release(callId);
      });
    }
    if (typeof prepared === 'string') {
      void this.#recorder(tenant, callId)
        .event('call.voice_unavailable', { reason: prepared })
        .catch(() => {});
      void this.#release(callId);
      connection.send.close();
      return { media() {}, mark() {}, dtmf() {}, ended() {} };
    }
    const { settings, ...ready } = prepared;
    // The recording starts with the stream (the early greeting's audio is sent through it too).
    const tap = this.deps.recordings?.start(tenant, callId, connection.start.format, settings);
    const recorder = watchedRecorder(ready.recorder, connection.watch);
    const session = new CallSession({ ...ready, recorder, send: connection.send, ...(tap ? { tap } : {}) });
    this.#sessions.set(callId, session);
    this.deps.metrics?.callStarted();
    session.start();
    const voicemail =
      prepared.voicemail &&
      this.#voicemails.start(callId, prepared.voicemail, prepared.format, session, {
        ...this.#recorder(tenant, callId),
        machineAnswered: (source) => this.deps.live.machineAnswered(tenant, callId, source),
        close: () => connection.send.close(),
        log: this.deps.log,
      });
    return voicemail ? withVoicemail(session, voicemail) : session;
  }

  /**
   * The carrier's answering-machine verdict on a call (the carrier webhooks' listener): the call's
   * live session acts on it, or will once its stream connects. Only sessions in this process hear it.
   */
  machineDetection(callId: number, verdict: MachineVerdict): void {
    this.#voicemails.verdict(callId, verdict);
  }

  /**
   * Everything a session needs but the stream; a string says why the call cannot speak, a
   * LimitReached that every key of a vendor it needs is taken.
   */
  async #setup(
    tenant: Tenant,
    callId: number,
    format: AudioFormat,
    configVersion?: number,
  ): Promise<Prepared> {
    const origin = performance.now();
    const recorder = this.#recorder(tenant, callId);
    const call = await this.deps.live.call(tenant, callId);
    if (!call?.assistantId) return 'the call has no assistant';
    // A graph that cannot be read leaves the call with its first assistant, never mute.
    const walk = await this.deps.graphs?.graphOf(tenant, call).catch((error: unknown) => {
      this.deps.log.warn({ err: error, callId }, 'reading the call graph failed: no routing');
      return undefined;
    });
    const graph =
      walk &&
      new GraphCall({
        graph: walk.graph,
        record: (type, data) => void recorder.event(type, data).catch(() => {}),
        log: this.deps.log,
        now: () => new Date(),
      });
    const resolved = await this.deps.resolver.resolveCurrent(
      tenant,
      { assistantId: call.assistantId, phoneNumber: call.fromPhoneNumber },
      configVersion,
    );
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
    const stt = settings.stt_settings;
    // Every assistant of a graph call may write the session context.
    const callTools = async (of: ResolvedConfig) => [
      ...(await this.#callTools(tenant, callId, of, recorder)),
      ...(graph ? [graph.contextTool] : []),
    ];
    const [tools, knowledge] = await Promise.all([
      callTools(resolved),
      this.deps.knowledge?.(tenant, resolved),
    ]);
    const assistant = assistantSpec({
      resolved,
      context,
      plan,
      ttsAdapter,
      callTools: tools,
      ...(meta.end_call_message ? { endCallMessage: meta.end_call_message } : {}),
      ...(knowledge ? { knowledge } : {}),
    });
    let spec: Omit<SessionSpec, 'send'> = {
      ...assistant,
      origin,
      callId,
      format,
      recorder,
      conversation: new Conversation(assistant.systemPrompt),
      greeting: welcomeMessage(settings, context),
      turn: turnSettings(settings),
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
      llmAdapterFor: this.deps.llmAdapterFor,
      vad: this.deps.vad,
      observer: this.#observer(callId),
      log: this.deps.log,
      transferable: this.deps.live.transferable(call),
    };
    const voicemail = voicemailSpec(settings, call, context.variables);
    if (voicemail) spec.voicemail = voicemail;
    // ——— vendor key limits: take a key of each kind, or turn the call away (call-leases.ts) ———
    if (this.deps.leases) {
      const holder = new CallLeases(this.deps.leases, tenant, callId, this.deps.log);
      this.#leases.set(callId, holder);
      const leased = await leaseVendors(holder, spec);
      if (leased instanceof LimitReached) return leased;
      if (leased.skipped.length > 0)
        void recorder.event('call.vendor_skipped', { reasons: leased.skipped }).catch(() => {});
      spec = leased.spec;
    }
    // ——— a graph call: its session starts, and its routing decides at each turn (graph-call.ts) ———
    const started =
      walk &&
      (await this.deps.graphs?.start(tenant, call, walk.graphId).catch((error: unknown) => {
        this.deps.log.warn({ err: error, callId }, 'starting the graph session failed: no routing');
      }));
    if (graph && started) {
      const holder = this.#leases.get(callId);
      const prepared = spec;
      graph.begin({
        ...started,
        assistant: spec,
        llmAdapterFor: spec.llmAdapterFor,
        assistantFor: handOffAssistants(
          {
            ...this.deps,
            callTools,
            record: (type, data) => void recorder.event(type, data).catch(() => {}),
          },
          {
            tenant,
            fromPhoneNumber: call.fromPhoneNumber,
            context,
            ...(meta.end_call_message ? { endCallMessage: meta.end_call_message } : {}),
            ...(holder ? { leases: { holder, prepared } } : {}),
          },
        ),
      });
      // A call set up again (its stream came in another format) resumes the same session.
      this.#graphs.set(callId, graph);
      spec = { ...spec, routing: graph };
    }
    // ———
    const clock = () => performance.now() - origin;
    const greeting = spec.greeting;
    if (greeting) {
      spec.earlyGreeting = new EarlySpeech(
        {
          adapter: spec.tts.adapter,
          candidates: spec.plan.tts,
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
    return { ...spec, settings };
  }

  #observer(callId: number): SessionObserver {
    const metrics = this.deps.metrics;
    return {
      turn: (turn) => metrics?.observeTurn(turn.measurements),
      bargeIn: (stage, ms) => metrics?.observeBargeIn(stage, ms),
      interruption: () => metrics?.interruption(),
      vendorFailure: (kind, error) => metrics?.vendorFailure(kind, error),
      heard: (text) => this.#voicemails.words(callId, text),
      ended: () => {
        this.#voicemails.ended(callId);
        if (this.#sessions.delete(callId)) metrics?.callEnded();
        void this.#release(callId);
        this.#endGraph(callId);
      },
    };
  }

  /** The tools the session runs for one of the call's assistants (custom tools), with why any were left out recorded. */
  async #callTools(
    tenant: Tenant,
    callId: number,
    resolved: ResolvedConfig,
    recorder: CallRecorder,
  ): Promise<CallTool[]> {
    const custom = (await this.deps.customTools?.(tenant, callId, resolved)) ?? { tools: [], skipped: [] };
    if (custom.skipped.length > 0)
      void recorder.event('call.tool_skipped', { reasons: custom.skipped }).catch(() => {});
    return custom.tools;
  }

  /** The call is over (or never came): its graph session ends. */
  #endGraph(callId: number): void {
    const graph = this.#graphs.get(callId);
    if (!graph) return;
    this.#graphs.delete(callId);
    void graph.end();
  }

  /** Gives back the vendor keys the call holds. */
  async #release(callId: number): Promise<void> {
    const holder = this.#leases.get(callId);
    if (!holder) return;
    this.#leases.delete(callId);
    await holder.release().catch((error: unknown) => {
      // Not given back, the leases still stop counting when they expire.
      this.deps.log.warn({ err: error, callId }, 'releasing vendor key leases failed');
    });
  }

  #recorder(tenant: Tenant, callId: number): CallRecorder {
    const { live } = this.deps;
    return {
      transcript: (segment) => this.deps.appendTranscript(tenant, callId, [segment]),
      turn: (turn) => this.deps.recordTurn(tenant, callId, turn),
      event: (type, data) => live.event(tenant, callId, type, data),
      hangUp: () => live.hangUp(tenant, callId),
      sendDigits: (digits) => live.sendDigits(tenant, callId, digits),
      transfer: (to) => live.transfer(tenant, callId, to),
    };
  }
}

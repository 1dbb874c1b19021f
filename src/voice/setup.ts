/**
 * The call runtime as the platform builds it: the vendor registries (one adapter per provider id),
 * the shared local VAD (one worker thread and one model for every call of the process), the metrics,
 * the calls domain's methods the sessions record through, the graph sessions graph calls walk
 * (graph-setup.ts), and the custom tools of each call (HTTP tools signed with the organization's
 * webhook secret, function tools in its cloud account). `createPlatform` calls this once; `close`
 * stops the VAD's worker when the platform stops.
 */
import type { ProviderUrls } from '../config.js';
import type { Db } from '../db/client.js';
import type { Tenant } from '../db/tenant.js';
import type { LiveCalls } from '../domains/calls/live.js';
import type { CallRecords } from '../domains/calls/records.js';
import type { GraphSessionService } from '../domains/graphs/sessions.js';
import type { VendorLeases } from '../domains/leases/service.js';
import type { ConfigResolver } from '../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../lib/outbound-target.js';
import type { CloudFunctions } from '../providers/cloud/functions.js';
import { llmAdapterFor } from '../providers/llm/index.js';
import { createSttAdapters } from '../providers/stt/index.js';
import { createTtsAdapters } from '../providers/tts/index.js';
import { graphCalls } from './graph-setup.js';
import type { VoiceMetrics } from './metrics.js';
import { VoiceRuntime, type VoiceRuntimeDeps } from './runtime.js';
import type { VoiceActivityFactory } from './session-spec.js';
import { customCallTools } from './tools/custom-tools.js';
import { VadEngine, vadSamples } from './vad.js';

export interface VoiceSetup {
  runtime: VoiceRuntime;
  close(): Promise<void>;
}

export function createVoice(deps: {
  live: LiveCalls;
  callRecords: CallRecords;
  resolver: ConfigResolver;
  targets: OutboundTargets;
  urls: ProviderUrls;
  metrics: VoiceMetrics;
  log: { warn(data: object, message: string): void };
  /** Cluster-wide vendor key limits; without it no limit is enforced. */
  leases?: VendorLeases;
  /** Graph calls walk their graph through these (without: a graph's entry assistant answers alone). */
  graphs?: { db: Db; sessions: GraphSessionService };
  /** The cloud function API function tools are invoked through. */
  functions: Pick<CloudFunctions, 'invoke'>;
  /** The organization's webhook signing secret (the webhooks domain's), which signs HTTP tools' requests. */
  signingSecret(tenant: Tenant): Promise<string>;
  /** Call recordings; without it no call is recorded. */
  recordings?: VoiceRuntimeDeps['recordings'];
  /** Assistants' knowledge in calls (knowledge-setup.ts); without it no call retrieves. */
  knowledge?: VoiceRuntimeDeps['knowledge'];
}): VoiceSetup {
  const vad = new VadEngine();
  let vadFailed = false;
  const activity: VoiceActivityFactory = (listener, format) => {
    const samples = vadSamples(format);
    const stream = vad.createStream({
      onEvent: (event) =>
        event.type === 'speech_start'
          ? listener.speechStart(event.audioMs)
          : listener.speechEnd(event.audioMs),
      onError: (error) => {
        // Turns still end on the vendor's finality; barge-in needs the VAD. Said once per process.
        if (!vadFailed) deps.log.warn({ err: error }, 'local VAD unavailable: barge-in is off');
        vadFailed = true;
      },
    });
    return { push: (frame) => stream.pushSamples(samples(frame)), close: () => stream.close() };
  };
  const runtime = new VoiceRuntime({
    live: deps.live,
    appendTranscript: (tenant: Tenant, callId, segments) =>
      deps.callRecords.appendTranscript(tenant, callId, segments),
    recordTurn: (tenant, callId, turn) => deps.callRecords.recordTurn(tenant, callId, turn),
    resolver: deps.resolver,
    targets: deps.targets,
    urls: deps.urls,
    stt: createSttAdapters(),
    tts: createTtsAdapters(),
    llmAdapterFor,
    vad: activity,
    metrics: deps.metrics,
    log: deps.log,
    leases: deps.leases,
    ...(deps.graphs ? { graphs: graphCalls({ ...deps.graphs, live: deps.live }) } : {}),
    customTools: async (tenant, _callId, resolved) => {
      const { tools, skipped } = customCallTools(resolved.settings, resolved.cloudFunctions, {
        targets: deps.targets,
        functions: deps.functions,
        signingSecret: () => deps.signingSecret(tenant),
      });
      return { tools, skipped: skipped.map((tool) => tool.reason) };
    },
    recordings: deps.recordings,
    knowledge: deps.knowledge,
  });
  return { runtime, close: () => vad.close() };
}

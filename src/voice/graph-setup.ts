/**
 * How the call runtime sets up a call that walks an assistant graph (graph-call.ts): which calls do,
 * their graph session started — or resumed, when the call was set up before — and linked to the call
 * through the calls domain, and the assistants a hand-off switches to, each resolved, planned and
 * leased as the call's first assistant was (runtime.ts), once per call.
 */
import type { ProviderUrls } from '../config.js';
import type { Db } from '../db/client.js';
import type { Tenant } from '../db/tenant.js';
import type { LiveCalls } from '../domains/calls/live.js';
import { entryNode } from '../domains/graphs/engine.js';
import { type LoadedGraph, loadEngineGraph } from '../domains/graphs/engine-graph.js';
import type { SessionState } from '../domains/graphs/engine-types.js';
import { type GraphSessionService, sessionStateOf } from '../domains/graphs/sessions.js';
import { findPhoneNumber } from '../domains/phone-numbers/reads.js';
import type { ConfigResolver, ResolvedConfig } from '../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../lib/outbound-target.js';
import type { TtsAdapter } from '../providers/tts/types.js';
import { assistantSpec } from './assistant-spec.js';
import { type CallLeases, LimitReached, leaseVendors } from './call-leases.js';
import type { CallContext } from './conversation.js';
import type { GraphSessionPort } from './graph-call.js';
import type { KnowledgeSource } from './knowledge.js';
import type { AssistantSpec, SessionSpec } from './session-spec.js';
import type { CallTool } from './tools/types.js';
import { planVendors } from './vendors.js';

/** What graph set-up reads of a call. */
export interface GraphCallRow {
  id: number;
  assistantId: number | null;
  phoneNumberId: number | null;
  callSid: string | null;
  graphSessionId: number | null;
}

/** The runtime's way into the graphs domain (`graphCalls` builds it). */
export interface GraphCalls {
  /**
   * The graph the call walks: the one its session belongs to when it has one, else the one its number
   * routes to when the call is answered by that graph's entry assistant (a call placed with another
   * assistant is that assistant's alone). Undefined for any other call.
   */
  graphOf(tenant: Tenant, call: GraphCallRow): Promise<{ graphId: number; graph: LoadedGraph } | undefined>;
  /** Starts the call's session at the entry node (or resumes the one it is linked to), linked to the call. */
  start(
    tenant: Tenant,
    call: GraphCallRow,
    graphId: number,
  ): Promise<{ session: GraphSessionPort; state: SessionState }>;
}

export function graphCalls(deps: {
  db: Db;
  sessions: GraphSessionService;
  live: Pick<LiveCalls, 'linkGraphSession'>;
}): GraphCalls {
  const { sessions } = deps;
  const port = (tenant: Tenant, sessionId: number): GraphSessionPort => ({
    recordStep: async (step) => sessionStateOf((await sessions.recordStep(tenant, sessionId, step)).session),
    updateContext: async (updates) =>
      (await sessions.updateContext(tenant, sessionId, updates as Record<string, unknown>)).context,
    end: async (reason) => {
      await sessions.end(tenant, sessionId, { reason });
    },
  });
  /** The call's linked session while it is still going. */
  const linked = async (tenant: Tenant, sessionId: number | null) => {
    const row = sessionId === null ? undefined : await sessions.find(tenant, sessionId);
    return row?.endedAt === null ? row : undefined;
  };
  return {
    async graphOf(tenant, call) {
      let graphId: number | null = null;
      if (call.graphSessionId !== null) {
        // Set up before (another stream format, another process): the walk goes on, unless it is over.
        graphId = (await linked(tenant, call.graphSessionId))?.graphId ?? null;
        if (graphId === null) return undefined;
      } else if (call.phoneNumberId !== null) {
        graphId = (await findPhoneNumber(deps.db, tenant, call.phoneNumberId))?.graphId ?? null;
      }
      if (graphId === null) return undefined;
      const graph = await loadEngineGraph(deps.db, tenant, graphId);
      if (!graph) return undefined;
      if (call.graphSessionId === null && entryNode(graph)?.assistantId !== call.assistantId)
        return undefined;
      return { graphId, graph };
    },
    async start(tenant, call, graphId) {
      const existing = await linked(tenant, call.graphSessionId);
      if (existing?.graphId === graphId)
        return { session: port(tenant, existing.id), state: sessionStateOf(existing) };
      const row = await sessions.start(tenant, { graphId, callSid: call.callSid, callId: call.id });
      const linkedId = await deps.live.linkGraphSession(tenant, call.id, row.id);
      if (linkedId !== null && linkedId !== row.id) {
        // Another process set the same call up at the same moment: its session is the call's.
        await sessions.end(tenant, row.id, { reason: 'superseded' });
        const theirs = await linked(tenant, linkedId);
        if (theirs) return { session: port(tenant, theirs.id), state: sessionStateOf(theirs) };
      }
      return { session: port(tenant, row.id), state: sessionStateOf(row) };
    },
  };
}

/** What building an assistant of the call needs (the runtime's own dependencies). */
export interface AssistantBuild {
  resolver: ConfigResolver;
  urls: ProviderUrls;
  targets: OutboundTargets;
  tts: Partial<Record<string, TtsAdapter>>;
  /** The tools the session runs for an assistant, as the runtime gives the call's first one. */
  callTools(resolved: ResolvedConfig): Promise<CallTool[]>;
  /** The assistant's knowledge in this call, as the runtime gives the call's first one (never rejects). */
  knowledge?(tenant: Tenant, resolved: ResolvedConfig): Promise<KnowledgeSource | undefined>;
  /** Notes an event on the call (`call.vendor_skipped`). */
  record(type: string, data: Record<string, unknown>): void;
}

export interface HandOffCall {
  tenant: Tenant;
  /** The number the call is on: keys and credentials resolve for it. */
  fromPhoneNumber: string;
  context: CallContext;
  /** A campaign's personalized goodbye, which wins over every assistant's. */
  endCallMessage?: string;
  /** The call's spec, whose vendor keys are leased (absent: no limits enforced). */
  leases?: { holder: CallLeases; prepared: Omit<SessionSpec, 'send'> };
}

/**
 * The assistants a graph call hands off to: resolved for the call's number, the vendors planned, the
 * tools built, the keys leased. Each is built once per call (a conversation that comes back to an
 * assistant gets the same one); a string says why one cannot speak.
 */
export function handOffAssistants(
  build: AssistantBuild,
  call: HandOffCall,
): (assistantId: number) => Promise<AssistantSpec | string> {
  const built = new Map<number, AssistantSpec>();
  return async (assistantId) => {
    const known = built.get(assistantId);
    if (known) return known;
    const resolved = await build.resolver.resolveCurrent(call.tenant, {
      assistantId,
      phoneNumber: call.fromPhoneNumber,
    });
    if (!resolved) return 'the assistant no longer exists';
    const plan = await planVendors(resolved, build.urls, build.targets);
    const ttsAdapter = build.tts[resolved.tts.provider];
    if (plan.tts.length === 0 || !ttsAdapter) {
      return (
        resolved.missing.find((line) => line.startsWith('tts')) ??
        `tts: ${resolved.tts.provider} cannot speak in live calls yet`
      );
    }
    if (plan.skipped.length > 0) build.record('call.vendor_skipped', { reasons: plan.skipped });
    const [callTools, knowledge] = await Promise.all([
      build.callTools(resolved),
      build.knowledge?.(call.tenant, resolved),
    ]);
    let spec = assistantSpec({
      resolved,
      context: call.context,
      plan,
      ttsAdapter,
      callTools,
      ...(call.endCallMessage ? { endCallMessage: call.endCallMessage } : {}),
      ...(knowledge ? { knowledge } : {}),
    });
    if (call.leases) {
      const leased = await leaseAssistant(call.leases.holder, call.leases.prepared, spec);
      if (typeof leased === 'string') return leased;
      spec = leased;
    }
    built.set(assistantId, spec);
    return spec;
  };
}

/**
 * Leases a key of the voice and of the model of the next assistant, as `leaseVendors` does for the
 * call's first one (the hearing stays the first assistant's: nothing to lease for it). Its voice's
 * adapter is guarded; its model's fallback keys are not (the session's model adapters are the
 * first assistant's).
 */
async function leaseAssistant(
  holder: CallLeases,
  prepared: Omit<SessionSpec, 'send'>,
  assistant: AssistantSpec,
): Promise<AssistantSpec | string> {
  const leased = await leaseVendors(holder, {
    ...prepared,
    ...assistant,
    plan: { ...assistant.plan, stt: [] },
    stt: { ...prepared.stt, adapter: undefined },
  });
  if (leased instanceof LimitReached) return leased.reason;
  return { ...assistant, plan: { ...leased.spec.plan, stt: assistant.plan.stt }, tts: leased.spec.tts };
}

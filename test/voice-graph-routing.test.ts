/**
 * A graph call's routing without a call (graph-call.ts): a made-up graph, an in-memory session that
 * keeps what the runtime would record, and the language model simulator behind the real adapter for
 * natural-language conditions. What each engine step means for the session (stay, hand-off, end,
 * transfer), what is recorded, and how failures leave the call where it is.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyContextUpdate } from '../src/domains/graphs/context.js';
import { decideNext } from '../src/domains/graphs/engine.js';
import type { EngineGraph, SessionState, Step } from '../src/domains/graphs/engine-types.js';
import { llmAdapterFor } from '../src/providers/llm/index.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { GraphCall, type GraphSessionPort, modelClassifier } from '../src/voice/graph-call.js';
import type { AssistantSpec } from '../src/voice/session-spec.js';
import type { LlmCandidate } from '../src/voice/vendors.js';
import { edge, node, state, T0 } from './support/graph-fixtures.js';

const llm = new LlmSimulator();
let candidate: LlmCandidate;

beforeAll(async () => {
  const baseUrl = await llm.start();
  candidate = {
    provider: 'llm_a',
    apiKey: 'graph-key',
    baseUrl,
    label: 'organization key',
    model: 'gpt-4o-mini',
  };
});
afterAll(async () => {
  await llm.stop();
});
beforeEach(() => {
  llm.reset();
});

function assistant(id: number): AssistantSpec {
  return {
    assistantId: id,
    systemPrompt: `You are assistant ${id}.`,
    tools: [],
    callTools: [],
    idleMessage: 'Still there?',
    goodbyeMessage: `Goodbye from ${id}.`,
    transferMessage: `Transferring you, says ${id}.`,
    llmParameters: {},
    plan: { llm: [candidate], stt: [], tts: [], skipped: [] },
    tts: { adapter: undefined, voice: { voiceId: `voice-${id}`, voiceSettings: {} } },
  };
}

/** The session as the sessions store would keep it: the steps, the context, how it ended. */
class MemorySession implements GraphSessionPort {
  steps: Step[] = [];
  context: Record<string, unknown> = {};
  ended: string[] = [];
  failNext: Error | undefined;
  onRecord: (() => void) | undefined;

  async recordStep(step: Step): Promise<SessionState> {
    if (this.failNext) {
      const error = this.failNext;
      this.failNext = undefined;
      throw error;
    }
    this.onRecord?.();
    this.steps.push(step);
    return { ...step.state, context: this.context };
  }

  async updateContext(updates: unknown): Promise<Record<string, unknown>> {
    this.context = applyContextUpdate(this.context, updates);
    return this.context;
  }

  async end(reason: string): Promise<void> {
    this.ended.push(reason);
  }
}

/**
 * Entry (assistant 10) → standard (20) on "billing" (with a sentence), → exit (30) on "bye", →
 * escalation (10) on "human"; from the standard node, back to the same assistant's other node (21
 * is assistant 10 again) on "again".
 */
function supportGraph(transferNumber: string = '+14155550100'): EngineGraph {
  return {
    nodes: [
      { ...node(1, 'entry'), assistantId: 10 },
      { ...node(2), assistantId: 20 },
      { ...node(3, 'exit'), assistantId: 30 },
      { ...node(4, 'escalation', { transfer_number: transferNumber }), assistantId: 10 },
      { ...node(5), assistantId: 20 },
    ],
    edges: [
      edge(1, { toNodeId: 2, intentPattern: 'billing', handoffSentence: 'Passing you to billing.' }),
      edge(2, { toNodeId: 3, intentPattern: 'bye' }),
      edge(3, { toNodeId: 4, intentPattern: 'human', handoffSentence: 'A person will help you.' }),
      edge(4, { fromNodeId: 2, toNodeId: 5, intentPattern: 'again' }),
      edge(5, { fromNodeId: 2, toNodeId: 3, intentPattern: 'bye', handoffSentence: 'Bye from billing.' }),
    ],
  };
}

function setUp(graph: EngineGraph = supportGraph(), built: Record<number, AssistantSpec | string> = {}) {
  const session = new MemorySession();
  const events: Array<{ type: string; data: Record<string, unknown> }> = [];
  const warnings: string[] = [];
  const asked: number[] = [];
  const call = new GraphCall({
    graph,
    record: (type, data) => events.push({ type, data }),
    log: { warn: (_data, message) => warnings.push(message) },
    now: () => new Date(T0.getTime() + 5_000),
    classifierTimeoutMs: 300,
  });
  const first = assistant(10);
  call.begin({
    session,
    state: state(),
    assistant: first,
    llmAdapterFor,
    assistantFor: async (id) => {
      asked.push(id);
      return built[id] ?? assistant(id);
    },
  });
  return { call, session, events, warnings, asked, first };
}

const turn = () => new AbortController().signal;

describe('routing a caller turn', () => {
  it('stays where no edge holds, counting the turn', async () => {
    const { call, session } = setUp();
    expect(await call.route('what are your hours', turn())).toEqual({ type: 'stay' });
    expect(session.steps).toHaveLength(1);
    expect(session.steps[0]).toMatchObject({ transition: null, state: { currentNodeId: 1, turnCount: 1 } });
  });

  it('hands off to the next node’s assistant with the edge’s sentence, and records the move', async () => {
    const { call, session, events, asked } = setUp();
    const decision = await call.route('a question about billing', turn());
    expect(decision).toMatchObject({ type: 'handoff', sentence: 'Passing you to billing.' });
    expect(decision.type === 'handoff' && decision.assistant.assistantId).toBe(20);
    expect(asked).toEqual([20]);
    expect(session.steps[0]!.transition).toMatchObject({
      fromNodeId: 1,
      toNodeId: 2,
      edgeId: 1,
      reason: "intent: matched 'billing'",
    });
    expect(events).toEqual([
      {
        type: 'call.graph_transition',
        data: { from_node_id: 1, to_node_id: 2, edge_id: 1, reason: "intent: matched 'billing'" },
      },
    ]);
    // A move to a node of the same assistant keeps it, without a sentence.
    const again = await call.route('again please', turn());
    expect(again).toMatchObject({ type: 'handoff', sentence: '' });
    expect(again.type === 'handoff' && again.assistant.assistantId).toBe(20);
    expect(asked).toEqual([20]);
  });

  it('ends at an exit node with the edge’s sentence or else the goodbye, then routes nothing more', async () => {
    const { call, session } = setUp();
    expect(await call.route('ok bye', turn())).toEqual({ type: 'end', sentence: 'Goodbye from 10.' });
    expect(await call.route('wait, one more thing about billing', turn())).toEqual({
      type: 'end',
      sentence: '',
    });
    expect(session.steps).toHaveLength(1);
    await call.end();
    expect(session.ended).toEqual(['exit']);

    const billing = setUp();
    await billing.call.route('billing', turn());
    expect(await billing.call.route('bye', turn())).toEqual({ type: 'end', sentence: 'Bye from billing.' });
  });

  it('transfers at an escalation node to its E.164 number, and ends instead for anything else', async () => {
    const { call, session } = setUp();
    expect(await call.route('a human please', turn())).toEqual({
      type: 'transfer',
      sentence: 'A person will help you.',
      to: '+14155550100',
    });
    await call.end();
    expect(session.ended).toEqual(['escalation']);

    const refused = setUp(supportGraph('0800 123 456'));
    expect(await refused.call.route('a human please', turn())).toEqual({
      type: 'end',
      sentence: 'A person will help you.',
    });
    expect(refused.events.map((e) => e.type)).toEqual([
      'call.graph_transition',
      'call.graph_transfer_refused',
    ]);
    await refused.call.end();
    expect(refused.session.ended).toEqual(['escalation_refused']);
  });

  it('ends a call that left the graph elsewhere as a hang-up, once', async () => {
    const { call, session } = setUp();
    await call.route('billing', turn());
    await call.end();
    await call.end();
    expect(session.ended).toEqual(['hangup']);
    expect(await call.route('billing', turn())).toEqual({ type: 'stay' });
  });

  it('stays, counting the turn, when the next assistant cannot speak', async () => {
    const { call, session, events } = setUp(supportGraph(), { 20: 'tts: every key at its concurrent_limit' });
    expect(await call.route('billing', turn())).toEqual({ type: 'stay' });
    expect(session.steps[0]).toMatchObject({ transition: null, state: { currentNodeId: 1, turnCount: 1 } });
    expect(events).toEqual([
      {
        type: 'call.graph_handoff_failed',
        data: { to_node_id: 2, assistant_id: 20, reason: 'tts: every key at its concurrent_limit' },
      },
    ]);
  });

  it('stays when recording fails, logged and noted on the call', async () => {
    const { call, session, events, warnings } = setUp();
    session.failNext = new Error('connection terminated');
    expect(await call.route('billing', turn())).toEqual({ type: 'stay' });
    expect(warnings).toEqual(['graph routing failed: the call stays on its node']);
    expect(events).toEqual([{ type: 'call.graph_routing_failed', data: { error: 'connection terminated' } }]);
    // The next turn routes again from where the session is.
    expect(await call.route('billing', turn())).toMatchObject({ type: 'handoff' });
  });

  it('tells a move recorded after the caller spoke again with the next turn', async () => {
    const { call, session } = setUp();
    const cut = new AbortController();
    session.onRecord = () => cut.abort();
    expect(await call.route('billing', cut.signal)).toEqual({ type: 'stay' });
    session.onRecord = undefined;
    expect(session.steps[0]!.transition).toMatchObject({ toNodeId: 2 });
    const next = await call.route('so, my invoice', turn());
    expect(next).toMatchObject({ type: 'handoff', sentence: 'Passing you to billing.' });
  });

  it('routes nothing before the call is set up', async () => {
    const call = new GraphCall({ graph: supportGraph(), record() {}, log: { warn() {} }, now: () => T0 });
    expect(await call.route('billing', turn())).toEqual({ type: 'stay' });
    const saved = await call.contextTool.run({ updates: { a: 1 } }, {} as never);
    expect(saved.ok).toBe(false);
  });
});

describe('the update_context tool', () => {
  const tiered: EngineGraph = {
    nodes: [
      { ...node(1, 'entry'), assistantId: 10 },
      { ...node(2), assistantId: 20 },
    ],
    edges: [
      edge(1, {
        conditionType: 'state_variable',
        stateVariableCondition: "customer.tier == 'vip'",
        handoffSentence: 'Welcome back.',
      }),
    ],
  };

  it('writes the session context, which the next turn’s state_variable edges read', async () => {
    const { call, session } = setUp(tiered);
    expect(call.contextTool.definition.name).toBe('update_context');
    expect(await call.route('hello', turn())).toEqual({ type: 'stay' });
    const saved = await call.contextTool.run({ updates: { 'customer.tier': 'vip' } }, {} as never);
    expect(saved).toEqual({
      ok: true,
      result: JSON.stringify({ saved: true, context: { customer: { tier: 'vip' } } }),
    });
    expect(session.context).toEqual({ customer: { tier: 'vip' } });
    expect(await call.route('my order', turn())).toMatchObject({
      type: 'handoff',
      sentence: 'Welcome back.',
    });
    expect(session.steps[1]!.transition?.reason).toBe(
      `state_variable: customer.tier == 'vip' was true (customer.tier="vip")`,
    );
  });

  it('tells the model what it refused, changing nothing', async () => {
    const { call, session } = setUp(tiered);
    expect(await call.contextTool.run({ updates: 'vip' }, {} as never)).toEqual({
      ok: false,
      result: 'Not saved: updates must be an object of keys to set.',
    });
    const forbidden = await call.contextTool.run({ updates: { 'a.constructor': 1 } }, {} as never);
    expect(forbidden).toEqual({ ok: false, result: 'Not saved: key "a.constructor" is not allowed.' });
    expect(session.context).toEqual({});
  });
});

describe('natural_language conditions, judged by the current assistant’s model', () => {
  const judged: EngineGraph = {
    nodes: [
      { ...node(1, 'entry'), assistantId: 10 },
      { ...node(2), assistantId: 20 },
    ],
    edges: [
      edge(1, {
        conditionType: 'natural_language',
        naturalLanguageTrigger: 'the caller wants to cancel',
        handoffSentence: 'Let me help you cancel.',
      }),
    ],
  };

  it('fires on yes, with the verdict as the transition’s reason; the model is asked without tools', async () => {
    llm.setScript('graph-key', [{ text: 'Yes, they do.' }]);
    const { call, session } = setUp(judged);
    expect(await call.route('I want to stop my subscription', turn())).toMatchObject({ type: 'handoff' });
    expect(session.steps[0]!.transition?.reason).toBe(
      "natural_language: the classifier answered yes to 'the caller wants to cancel'",
    );
    const request = llm.requests[0]!;
    expect(request.key).toBe('graph-key');
    expect(request.tools).toEqual([]);
    expect(JSON.stringify(request.messages)).toContain('I want to stop my subscription');
  });

  it('stays on no', async () => {
    llm.setScript('graph-key', [{ text: 'no' }]);
    const { call, session } = setUp(judged);
    expect(await call.route('what time is it', turn())).toEqual({ type: 'stay' });
    expect(session.steps[0]!.transition).toBeNull();
  });

  it('counts a model that answers too late, or fails, as false, and says why', async () => {
    const classifier = modelClassifier([candidate], llmAdapterFor, turn());
    llm.pacing.ttftMs = 2_000;
    llm.setScript('graph-key', [{ text: 'yes' }]);
    const late = await decideNext(judged, state(), 'cancel it all', {
      now: () => T0,
      classifier,
      classifierTimeoutMs: 200,
    });
    expect(late.edge).toBeNull();
    expect(late.evaluated[0]).toEqual({
      edgeId: 1,
      matched: false,
      reason: 'natural_language: the classifier timed out after 200 ms',
    });

    llm.pacing.ttftMs = 0;
    llm.setScript('graph-key', [{ error: { status: 401, message: 'Incorrect API key provided' } }]);
    const failed = await decideNext(judged, state(), 'cancel it all', { now: () => T0, classifier });
    expect(failed.edge).toBeNull();
    expect(failed.evaluated[0]!.reason).toMatch(/^natural_language: the classifier failed \(/);

    // In a call: a time-out stays, and the turn is counted.
    llm.pacing.ttftMs = 2_000;
    llm.setScript('graph-key', [{ text: 'yes' }]);
    const { call, session } = setUp(judged);
    expect(await call.route('cancel it all', turn())).toEqual({ type: 'stay' });
    expect(session.steps[0]).toMatchObject({ transition: null, state: { turnCount: 1 } });
  });

  it('tries the next model when the first fails, and stops when the caller speaks again', async () => {
    llm.setScript('graph-key', [{ error: { status: 503 } }, { text: 'yes' }]);
    const both = modelClassifier([candidate, { ...candidate, label: 'fallback' }], llmAdapterFor, turn());
    const signal = new AbortController().signal;
    expect(await both({ trigger: 'cancel', utterance: 'cancel', context: {}, signal })).toBe(true);

    const spoke = new AbortController();
    spoke.abort();
    const cut = modelClassifier([candidate], llmAdapterFor, spoke.signal);
    await expect(cut({ trigger: 'cancel', utterance: 'cancel', context: {}, signal })).rejects.toBeDefined();
  });
});

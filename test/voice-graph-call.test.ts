/**
 * Graphs in live calls, end to end: a call on a number routed to an assistant graph walks the graph
 * through the simulated phone — hand-offs heard in the next assistant's voice with its prompt, the
 * update_context tool and a state_variable edge that fires on what it saved, a natural_language edge
 * judged by the (scripted) model, an exit node that hangs up and an escalation node that transfers —
 * and the session, its transitions and the graph analytics record the call as simulate would.
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphTransitions } from '../src/db/schema/index.js';
import { waitFor } from './support/harness.js';
import { afterGreeting, hearAnswer, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { type RigGraph, routeNumberToGraph } from './support/voice-rig-graph.js';
import type { RigOrganization } from './support/voice-rig-vendors.js';

let rig: VoiceRig;

beforeAll(async () => {
  rig = await startVoiceRig();
}, 60_000);
afterAll(async () => {
  await rig.close();
});

interface SessionView {
  id: number;
  call_sid: string;
  graph_id: number;
  current_node_id: number;
  context: Record<string, unknown>;
  is_active: boolean;
  ended_at: string | null;
}

/** The call's graph session once it has ended (the call's end ends it, after the stream closes). */
async function endedSession(org: RigOrganization, callSid: string): Promise<SessionView> {
  return waitFor(async () => {
    const response = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/assistant-graphs/sessions/${callSid}`,
      headers: org.admin.headers,
    });
    if (response.statusCode !== 200) return undefined;
    const session = response.json() as SessionView;
    return session.is_active ? undefined : session;
  }, 10_000);
}

async function transitionsOf(sessionId: number) {
  return rig.t.database.db
    .select({
      from: graphTransitions.fromNodeId,
      to: graphTransitions.toNodeId,
      edge: graphTransitions.edgeId,
      reason: graphTransitions.reason,
    })
    .from(graphTransitions)
    .where(eq(graphTransitions.sessionId, sessionId))
    .orderBy(asc(graphTransitions.id));
}

/** The voice (tts_a `voice_id`) that spoke `text` in this file's calls. */
function voiceThatSaid(text: string): string | undefined {
  return rig.tts.connections.find((connection) =>
    connection.texts.join('').replace(/\s+/g, ' ').includes(text),
  )?.voiceId;
}

const systemOf = (request: { messages: Array<Record<string, unknown>> }) =>
  String(request.messages.find((message) => message.role === 'system')?.content ?? '');

describe('a call on a number routed to a graph', () => {
  it('hands off twice, each hand-off in the next voice and prompt, then exits and hangs up', async () => {
    let graph: RigGraph | undefined;
    const outcome = await rig.call({
      heard: ['I have a question about my invoice', 'I also forgot my password', 'That is all, goodbye'],
      assistant: {
        llm_settings: { system_prompt: 'You are the front desk of Acme.' },
        tts_settings: { voice_id: 'desk-voice' },
      },
      prepare: async (org) => {
        graph = await routeNumberToGraph(rig.t, org, {
          assistants: {
            billing: {
              llm_settings: { system_prompt: 'You are Acme billing.' },
              tts_settings: { voice_id: 'billing-voice' },
            },
            support: {
              llm_settings: { system_prompt: 'You are Acme support.' },
              tts_settings: { voice_id: 'support-voice' },
            },
          },
          nodes: [
            { assistant: 'entry', node_type: 'entry' },
            { assistant: 'billing', node_type: 'standard' },
            { assistant: 'support', node_type: 'standard' },
            { assistant: 'entry', node_type: 'exit' },
          ],
          edges: [
            {
              from_node_id: 0,
              to_node_id: 1,
              condition_type: 'intent',
              intent_pattern: 'invoice, bill',
              handoff_sentence: 'Let me pass you to billing.',
            },
            {
              from_node_id: 1,
              to_node_id: 2,
              condition_type: 'intent',
              intent_pattern: 'password',
              handoff_sentence: 'Passing you to support.',
            },
            {
              from_node_id: 2,
              to_node_id: 3,
              condition_type: 'intent',
              intent_pattern: 'goodbye',
              handoff_sentence: 'Thanks for calling Acme support.',
            },
          ],
        });
      },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
        await phone.say('three-oclock');
        await hearAnswer(phone);
        await phone.say('goodbye');
        await phone.waitForClose({ timeoutMs: 30_000 });
      },
    });
    const g = graph!;
    expect(outcome.status).toBe('completed');
    expect(outcome.phoneCall.endedBy).toMatch(/hang-up|platform/);
    expect(outcome.events.map((e) => e.type)).toContain('call.end_requested');
    const replies = outcome.turns.filter((turn) => turn.kind === 'reply');
    expect(replies.map((turn) => turn.assistant_text)).toEqual([
      'Let me pass you to billing. You said: I have a question about my invoice. How else can I help?',
      'Passing you to support. You said: I also forgot my password. How else can I help?',
      'Thanks for calling Acme support.',
    ]);
    // Each hand-off sentence in the next assistant's voice; the last words in the current one's.
    expect(voiceThatSaid(outcome.turns[0]!.assistant_text)).toBe('desk-voice');
    expect(voiceThatSaid('Let me pass you to billing.')).toBe('billing-voice');
    expect(voiceThatSaid('Passing you to support.')).toBe('support-voice');
    expect(voiceThatSaid('Thanks for calling Acme support.')).toBe('support-voice');
    // The model answered each turn with the prompt of the assistant the call had been handed to;
    // the exit ended the call before any answer.
    const prompts = outcome.llmRequests.map(systemOf);
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toContain('You are Acme billing.');
    expect(prompts[1]).toContain('You are Acme support.');
    for (const request of outcome.llmRequests) {
      expect(request.tools.map((tool) => (tool.function as { name: string }).name)).toContain(
        'update_context',
      );
    }

    const session = await endedSession(outcome.org, outcome.phone.callSid);
    expect(session).toMatchObject({ graph_id: g.id, current_node_id: g.nodeIds[3], context: {} });
    const call = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${outcome.callId}`,
      headers: outcome.org.admin.headers,
    });
    expect(call.json().graph_session_id).toBe(session.id);
    expect(await transitionsOf(session.id)).toEqual([
      { from: g.nodeIds[0], to: g.nodeIds[1], edge: g.edgeIds[0], reason: "intent: matched 'invoice'" },
      { from: g.nodeIds[1], to: g.nodeIds[2], edge: g.edgeIds[1], reason: "intent: matched 'password'" },
      { from: g.nodeIds[2], to: g.nodeIds[3], edge: g.edgeIds[2], reason: "intent: matched 'goodbye'" },
    ]);
    expect(outcome.events.filter((e) => e.type === 'call.graph_transition')).toHaveLength(3);

    const analytics = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/assistant-graphs/${g.id}/analytics?days=1`,
      headers: outcome.org.admin.headers,
    });
    expect(analytics.statusCode).toBe(200);
    const figures = analytics.json();
    expect(figures).toMatchObject({ total_sessions: 1, total_transitions: 3 });
    expect(figures.node_usage_stats[String(g.nodeIds[3])]).toMatchObject({
      sessions_started: 1,
      exit_rate: 1,
    });
  }, 90_000);

  it('saves context with update_context, fires a state_variable edge on it, and transfers when the model says so', async () => {
    let graph: RigGraph | undefined;
    const outcome = await rig.call({
      heard: [
        'My account number is 4521',
        'Can you check my last order',
        'I would rather talk to a human being',
      ],
      assistant: {
        llm_settings: { system_prompt: 'You are the front desk of Acme.' },
        tts_settings: { voice_id: 'desk-voice' },
      },
      prepare: async (org) => {
        graph = await routeNumberToGraph(rig.t, org, {
          assistants: {
            vip: {
              llm_settings: { system_prompt: 'You look after Acme VIP customers.' },
              tts_settings: { voice_id: 'vip-voice' },
            },
          },
          nodes: [
            { assistant: 'entry', node_type: 'entry' },
            { assistant: 'vip', node_type: 'standard' },
            {
              assistant: 'entry',
              node_type: 'escalation',
              configuration: { transfer_number: '+14155550100' },
            },
          ],
          edges: [
            {
              from_node_id: 0,
              to_node_id: 1,
              condition_type: 'state_variable',
              state_variable_condition: "customer.tier == 'vip'",
              handoff_sentence: 'Welcome back, valued customer.',
            },
            {
              from_node_id: 1,
              to_node_id: 2,
              condition_type: 'natural_language',
              natural_language_trigger: 'the caller wants to speak to a person',
              handoff_sentence: 'Connecting you to a person now.',
            },
          ],
        });
      },
      llm: [
        // Turn 1, at the entry node: the model saves what it found, then answers.
        { toolCalls: [{ name: 'update_context', arguments: { updates: { customer: { tier: 'vip' } } } }] },
        { text: 'Thank you, I found your account.' },
        // Turn 2: the state_variable edge fired, the VIP assistant answers.
        { text: 'Your last order shipped yesterday.' },
        // Turn 3: the natural_language edge asks the current assistant's model.
        { text: 'Yes.' },
      ],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('account-number');
        await hearAnswer(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
        await phone.say('transfer-me');
        await phone.waitForClose({ timeoutMs: 30_000 });
      },
    });
    const g = graph!;
    expect(outcome.phoneCall.endedBy).toBe('transfer');
    expect(rig.carrier.calls.get(outcome.phone.callSid)?.transferredTo).toBe('+14155550100');
    expect(outcome.events.map((e) => e.type)).not.toContain('call.end_requested');
    const tool = outcome.events.find((e) => e.type === 'call.tool');
    expect(tool?.data).toMatchObject({ name: 'update_context', ok: true });
    expect(outcome.turns.filter((turn) => turn.kind === 'reply').map((turn) => turn.assistant_text)).toEqual([
      'Thank you, I found your account.',
      'Welcome back, valued customer. Your last order shipped yesterday.',
      'Connecting you to a person now.',
    ]);
    expect(voiceThatSaid('Welcome back, valued customer.')).toBe('vip-voice');

    // The classifier's request: the VIP assistant's model, asked yes or no, with no tools.
    const classifier = outcome.llmRequests.at(-1)!;
    expect(classifier.tools).toEqual([]);
    expect(systemOf(classifier)).toMatch(/Answer with one word: yes/);
    expect(JSON.stringify(classifier.messages)).toContain('the caller wants to speak to a person');
    expect(JSON.stringify(classifier.messages)).toContain('I would rather talk to a human being');
    expect(systemOf(outcome.llmRequests.at(-2)!)).toContain('You look after Acme VIP customers.');

    const session = await endedSession(outcome.org, outcome.phone.callSid);
    expect(session).toMatchObject({
      current_node_id: g.nodeIds[2],
      context: { customer: { tier: 'vip' } },
    });
    expect(await transitionsOf(session.id)).toEqual([
      {
        from: g.nodeIds[0],
        to: g.nodeIds[1],
        edge: g.edgeIds[0],
        reason: `state_variable: customer.tier == 'vip' was true (customer.tier="vip")`,
      },
      {
        from: g.nodeIds[1],
        to: g.nodeIds[2],
        edge: g.edgeIds[1],
        reason: "natural_language: the classifier answered yes to 'the caller wants to speak to a person'",
      },
    ]);
  }, 90_000);

  it('stays when the model says no, and leaves a call placed with another assistant alone', async () => {
    let graph: RigGraph | undefined;
    const outcome = await rig.call({
      heard: ['Can you check my last order'],
      prepare: async (org) => {
        graph = await routeNumberToGraph(rig.t, org, {
          assistants: { person: { tts_settings: { voice_id: 'person-voice' } } },
          nodes: [
            { assistant: 'entry', node_type: 'entry' },
            { assistant: 'person', node_type: 'standard' },
          ],
          edges: [
            {
              from_node_id: 0,
              to_node_id: 1,
              condition_type: 'natural_language',
              natural_language_trigger: 'the caller wants to speak to a person',
              handoff_sentence: 'One moment.',
            },
          ],
        });
      },
      llm: [{ text: 'No' }, { text: 'It is on its way.' }],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
      },
    });
    expect(outcome.turns.find((turn) => turn.kind === 'reply')?.assistant_text).toBe('It is on its way.');
    const session = await endedSession(outcome.org, outcome.phone.callSid);
    expect(session.current_node_id).toBe(graph!.nodeIds[0]);
    expect(await transitionsOf(session.id)).toEqual([]);

    // The same number, with an assistant named explicitly: that assistant's call alone, no session.
    const other = await rig.call({
      organization: outcome.org,
      heard: ['I would rather talk to a human being'],
      initiate: { assistant_id: graph!.assistants.person },
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('transfer-me');
        await hearAnswer(phone);
      },
    });
    expect(other.llmRequests.map(systemOf).every((prompt) => !/call router/.test(prompt))).toBe(true);
    const none = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/assistant-graphs/sessions/${other.phone.callSid}`,
      headers: outcome.org.admin.headers,
    });
    expect(none.statusCode).toBe(404);
  }, 90_000);
});

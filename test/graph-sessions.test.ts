/**
 * Conversation sessions: the store the call runtime drives (src/domains/graphs/sessions.ts) — start
 * at the entry node, transitions (recorded, validated, clamped in time), turns, context merges, end,
 * tenant scoping and concurrency under the row lock — and the two read endpoints,
 * GET /api/v1/assistant-graphs/{graph_id}/sessions and GET /api/v1/assistant-graphs/sessions/{call_sid}
 * (fields, order, pagination, active_only, lookup by call SID, route resolution, 401, 403 for an API
 * key without the graphs area, 404 for another organization). Graphs are built through the graph
 * API. The tests share one platform; each builds the sessions it needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { DomainError } from '../src/domains/errors.js';
import { ContextUpdateError } from '../src/domains/graphs/context.js';
import { advance, decideNext } from '../src/domains/graphs/engine.js';
import { loadEngineGraph } from '../src/domains/graphs/engine-graph.js';
import type { SessionState } from '../src/domains/graphs/engine-types.js';
import { type GraphSessionService, sessionStateOf } from '../src/domains/graphs/sessions.js';
import { statusOf } from '../src/http/errors.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/assistant-graphs';
const SESSION_FIELDS = [
  'id',
  'call_sid',
  'graph_id',
  'current_node_id',
  'context',
  'started_at',
  'ended_at',
  'is_active',
  'current_assistant_name',
  'graph_name',
].sort();

interface Graph {
  id: number;
  name: string;
  /** Node ids by role. */
  entry: number;
  billing: number;
  goodbye: number;
  human: number;
  /** Edge ids: entry → billing, billing → goodbye, entry → human. */
  toBilling: number;
  toGoodbye: number;
  toHuman: number;
}

let t: TestPlatform;
let f: Factories;
let sessions: GraphSessionService;
let owner: TestUser;
let stranger: TestUser;
let tenant: Tenant;
let graph: Graph;
let otherGraph: Graph;

let serial = 0;
async function assistant(user: TestUser, name: string): Promise<number> {
  serial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `${name} ${serial}` },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

/** Greeter (entry) → Billing (standard) → Goodbye (exit); Greeter → Human (escalation). */
async function createGraph(user: TestUser, name: string): Promise<Graph> {
  const ids = [
    await assistant(user, 'Greeter'),
    await assistant(user, 'Billing'),
    await assistant(user, 'Goodbye'),
    await assistant(user, 'Human'),
  ];
  const response = await t.app.inject({
    method: 'POST',
    url: BASE,
    headers: user.headers,
    payload: {
      name,
      description: 'sessions test',
      nodes: [
        { assistant_id: ids[0], node_type: 'entry', position: { x: 0, y: 0 } },
        { assistant_id: ids[1], node_type: 'standard', position: { x: 1, y: 0 } },
        { assistant_id: ids[2], node_type: 'exit', position: { x: 2, y: 0 } },
        {
          assistant_id: ids[3],
          node_type: 'escalation',
          position: { x: 1, y: 1 },
          configuration: { transfer_number: '+14155550100' },
        },
      ],
      edges: [
        {
          from_node_id: 0,
          to_node_id: 1,
          condition_type: 'intent',
          intent_pattern: 'bill, invoice',
          priority: 1,
        },
        { from_node_id: 1, to_node_id: 2, condition_type: 'intent', intent_pattern: 'bye', priority: 1 },
        { from_node_id: 0, to_node_id: 3, condition_type: 'intent', intent_pattern: 'human', priority: 2 },
      ],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  const body = response.json() as {
    id: number;
    name: string;
    nodes: Array<{ id: number }>;
    edges: Array<{ id: number }>;
  };
  return {
    id: body.id,
    name: body.name,
    entry: body.nodes[0]!.id,
    billing: body.nodes[1]!.id,
    goodbye: body.nodes[2]!.id,
    human: body.nodes[3]!.id,
    toBilling: body.edges[0]!.id,
    toGoodbye: body.edges[1]!.id,
    toHuman: body.edges[2]!.id,
  };
}

/** The DomainError (or other error) a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function expectAppError(promise: Promise<unknown>, status: number, detail?: RegExp) {
  const error = await failure(promise);
  expect(error).toBeInstanceOf(DomainError);
  expect(statusOf(error as DomainError), (error as DomainError).detail).toBe(status);
  if (detail) expect((error as DomainError).detail).toMatch(detail);
}

function get(headers: Record<string, string>, url: string) {
  return t.app.inject({ method: 'GET', url, headers });
}

const seconds = (base: Date, s: number) => new Date(base.getTime() + s * 1000);

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
  sessions = t.platform.services.graphSessions;
  owner = await f.user({ organizationName: 'Graph owners' });
  stranger = await f.user({ organizationName: 'Strangers' });
  tenant = new Tenant(owner.organizationId);
  graph = await createGraph(owner, 'Support line');
  otherGraph = await createGraph(stranger, 'Their line');
});
afterAll(() => t.close());

describe('the sessions store', () => {
  it('starts a session at the entry node, active, with its context and no turns', async () => {
    const at = new Date('2026-01-05T10:00:00.000Z');
    const session = await sessions.start(tenant, {
      graphId: graph.id,
      callSid: 'CA-start-1',
      context: { customer: { tier: 'gold' }, language: 'en' },
      at,
    });
    expect(session.graphId).toBe(graph.id);
    expect(session.organizationId).toBe(owner.organizationId);
    expect(session.currentNodeId).toBe(graph.entry);
    expect(session.callSid).toBe('CA-start-1');
    expect(session.context).toEqual({ customer: { tier: 'gold' }, language: 'en' });
    expect(session.startedAt).toEqual(at);
    expect(session.nodeEnteredAt).toEqual(at);
    expect(session.endedAt).toBeNull();
    expect([session.turnCount, session.nodeTurnCount]).toEqual([0, 0]);
    expect(sessionStateOf(session)).toEqual({
      currentNodeId: graph.entry,
      context: { customer: { tier: 'gold' }, language: 'en' },
      turnCount: 0,
      nodeTurnCount: 0,
      startedAt: at,
      nodeEnteredAt: at,
    });
    // Without a time, the database's clock.
    const now = await sessions.start(tenant, { graphId: graph.id });
    expect(Math.abs(now.startedAt.getTime() - Date.now())).toBeLessThan(60_000);
    expect(now.context).toEqual({});
    expect(now.callSid).toBeNull();
  });

  it("refuses another organization's graph, an unknown graph, and an initial context the engine refuses", async () => {
    await expectAppError(sessions.start(tenant, { graphId: otherGraph.id }), 404, /Graph not found/);
    await expectAppError(sessions.start(tenant, { graphId: 2_000_000_000 }), 404);
    await expectAppError(sessions.start(tenant, { graphId: graph.id, callId: 2_000_000_000 }), 404, /Call/);
    const error = await failure(
      sessions.start(tenant, { graphId: graph.id, context: JSON.parse('{"__proto__": {"x": 1}}') }),
    );
    expect(error).toBeInstanceOf(ContextUpdateError);
  });

  it('records a transition: the row, the new node, its entry time, and node turns back to 0', async () => {
    const t0 = new Date('2026-01-05T11:00:00.000Z');
    const started = await sessions.start(tenant, { graphId: graph.id, at: t0 });
    await sessions.recordTurn(tenant, started.id);
    const turned = await sessions.recordTurn(tenant, started.id);
    expect([turned.turnCount, turned.nodeTurnCount]).toEqual([2, 2]);

    const { session, transition } = await sessions.transition(tenant, started.id, {
      toNodeId: graph.billing,
      edgeId: graph.toBilling,
      reason: 'keyword "bill"',
      at: seconds(t0, 12),
    });
    expect(session.currentNodeId).toBe(graph.billing);
    expect(session.nodeEnteredAt).toEqual(seconds(t0, 12));
    expect([session.turnCount, session.nodeTurnCount]).toEqual([2, 0]);
    expect(transition).toMatchObject({
      organizationId: owner.organizationId,
      sessionId: started.id,
      graphId: graph.id,
      fromNodeId: graph.entry,
      toNodeId: graph.billing,
      edgeId: graph.toBilling,
      reason: 'keyword "bill"',
      transitionedAt: seconds(t0, 12),
    });
    const after = await sessions.recordTurn(tenant, started.id);
    expect([after.turnCount, after.nodeTurnCount]).toEqual([3, 1]);

    // A move no edge made (an operator's transfer), and a time before the node was entered: clamped.
    const moved = await sessions.transition(tenant, started.id, {
      toNodeId: graph.goodbye,
      edgeId: null,
      reason: 'operator',
      at: seconds(t0, 5),
    });
    expect(moved.transition.transitionedAt).toEqual(seconds(t0, 12));
    expect(moved.transition.fromNodeId).toBe(graph.billing);
    const history = await sessions.transitions(tenant, started.id);
    expect(history.map((h) => [h.fromNodeId, h.toNodeId, h.edgeId])).toEqual([
      [graph.entry, graph.billing, graph.toBilling],
      [graph.billing, graph.goodbye, null],
    ]);
  });

  it('refuses a node of another graph, an edge that does not lead there, a stale origin and another tenant', async () => {
    const session = await sessions.start(tenant, { graphId: graph.id });
    await expectAppError(
      sessions.transition(tenant, session.id, { toNodeId: otherGraph.billing, edgeId: null, reason: 'x' }),
      400,
      /not a node/,
    );
    // The edge billing → goodbye does not leave the entry node; entry → billing does not lead to human.
    await expectAppError(
      sessions.transition(tenant, session.id, {
        toNodeId: graph.goodbye,
        edgeId: graph.toGoodbye,
        reason: 'x',
      }),
      400,
      /does not lead/,
    );
    await expectAppError(
      sessions.transition(tenant, session.id, {
        toNodeId: graph.human,
        edgeId: graph.toBilling,
        reason: 'x',
      }),
      400,
    );
    await expectAppError(
      sessions.transition(tenant, session.id, {
        toNodeId: graph.goodbye,
        edgeId: graph.toGoodbye,
        reason: 'x',
        fromNodeId: graph.billing,
      }),
      409,
      /no longer at node/,
    );
    const strangers = new Tenant(stranger.organizationId);
    await expectAppError(
      sessions.transition(strangers, session.id, { toNodeId: graph.billing, edgeId: null, reason: 'x' }),
      404,
    );
    await expectAppError(sessions.recordTurn(strangers, session.id), 404);
    await expectAppError(sessions.updateContext(strangers, session.id, { a: 1 }), 404);
    await expectAppError(sessions.end(strangers, session.id, { reason: 'hangup' }), 404);
    expect(await sessions.find(strangers, session.id)).toBeUndefined();
    // Nothing moved, nothing was recorded.
    const unchanged = await sessions.find(tenant, session.id);
    expect(unchanged?.currentNodeId).toBe(graph.entry);
    expect(await sessions.transitions(tenant, session.id)).toEqual([]);
  });

  it('merges context updates as the engine does: keys replace, objects merge, null deletes', async () => {
    const session = await sessions.start(tenant, {
      graphId: graph.id,
      context: { customer: { tier: 'gold', name: 'Ann' }, intent: 'unknown', attempts: 1 },
    });
    const updated = await sessions.updateContext(tenant, session.id, {
      intent: 'billing',
      attempts: null,
      customer: { verified: true, name: null },
      'order.id': 'A-17',
    });
    expect(updated.context).toEqual({
      customer: { tier: 'gold', verified: true },
      intent: 'billing',
      order: { id: 'A-17' },
    });
    expect((await sessions.find(tenant, session.id))?.context).toEqual(updated.context);
    const error = await failure(sessions.updateContext(tenant, session.id, { constructor: 1 }));
    expect(error).toBeInstanceOf(ContextUpdateError);
    expect((await sessions.find(tenant, session.id))?.context).toEqual(updated.context);
  });

  it('ends a session once: later ends change nothing, and an ended session refuses changes', async () => {
    const t0 = new Date('2026-01-05T12:00:00.000Z');
    const session = await sessions.start(tenant, { graphId: graph.id, at: t0 });
    await sessions.transition(tenant, session.id, {
      toNodeId: graph.human,
      edgeId: graph.toHuman,
      reason: 'keyword "human"',
      at: seconds(t0, 30),
    });
    // An end stamped before the last transition is clamped to it.
    const ended = await sessions.end(tenant, session.id, { reason: 'escalation', at: seconds(t0, 20) });
    expect(ended.endedAt).toEqual(seconds(t0, 30));
    expect(ended.endReason).toBe('escalation');
    expect(ended.currentNodeId).toBe(graph.human);
    const again = await sessions.end(tenant, session.id, { reason: 'hangup', at: seconds(t0, 90) });
    expect(again.endedAt).toEqual(seconds(t0, 30));
    expect(again.endReason).toBe('escalation');
    await expectAppError(
      sessions.transition(tenant, session.id, { toNodeId: graph.entry, edgeId: null, reason: 'x' }),
      409,
      /ended/,
    );
    await expectAppError(sessions.recordTurn(tenant, session.id), 409);
    await expectAppError(sessions.updateContext(tenant, session.id, { a: 1 }), 409);
    await expectAppError(sessions.end(tenant, 2_000_000_000, { reason: 'x' }), 404);
  });

  it('applies concurrent transitions one after the other: the history stays one chain', async () => {
    const session = await sessions.start(tenant, { graphId: graph.id });
    const targets = [graph.billing, graph.goodbye, graph.human, graph.entry, graph.billing, graph.human];
    const results = await Promise.all(
      targets.map((toNodeId, i) =>
        sessions.transition(tenant, session.id, { toNodeId, edgeId: null, reason: `r${i}` }),
      ),
    );
    expect(results).toHaveLength(targets.length);
    const history = await sessions.transitions(tenant, session.id);
    expect(history).toHaveLength(targets.length);
    // Each transition leaves from where the one before it arrived; the session ends where the last arrived.
    let at = graph.entry;
    for (const step of history) {
      expect(step.fromNodeId).toBe(at);
      at = step.toNodeId;
    }
    expect((await sessions.find(tenant, session.id))?.currentNodeId).toBe(at);
    expect(new Set(history.map((h) => h.id)).size).toBe(targets.length);
  });

  it('lets exactly one of two concurrent decisions made at the same node win', async () => {
    const session = await sessions.start(tenant, { graphId: graph.id });
    const outcomes = await Promise.allSettled([
      sessions.transition(tenant, session.id, {
        toNodeId: graph.billing,
        edgeId: graph.toBilling,
        reason: 'a',
        fromNodeId: graph.entry,
      }),
      sessions.transition(tenant, session.id, {
        toNodeId: graph.human,
        edgeId: graph.toHuman,
        reason: 'b',
        fromNodeId: graph.entry,
      }),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(statusOf(refused.reason as DomainError)).toBe(409);
    const history = await sessions.transitions(tenant, session.id);
    expect(history).toHaveLength(1);
    expect((await sessions.find(tenant, session.id))?.currentNodeId).toBe(history[0]!.toNodeId);
  });

  it('loses no turn and no context key under concurrent writes', async () => {
    const session = await sessions.start(tenant, { graphId: graph.id, context: { kept: true } });
    await Promise.all([
      ...Array.from({ length: 15 }, () => sessions.recordTurn(tenant, session.id)),
      ...Array.from({ length: 15 }, (_, i) => sessions.updateContext(tenant, session.id, { [`k${i}`]: i })),
    ]);
    const after = await sessions.find(tenant, session.id);
    expect([after?.turnCount, after?.nodeTurnCount]).toEqual([15, 15]);
    expect(after?.context).toEqual({
      kept: true,
      ...Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, i])),
    });
  });
});

describe("the runtime's walk: loadEngineGraph, decideNext, advance, recordStep", () => {
  it('records each step as the engine took it, with the transitions simulate shows', async () => {
    const loaded = await loadEngineGraph(t.database.db, tenant, graph.id);
    expect(loaded?.nodes.map((n) => n.id)).toEqual([graph.entry, graph.billing, graph.goodbye, graph.human]);
    const t0 = new Date('2026-01-05T13:00:00.000Z');
    const started = await sessions.start(tenant, { graphId: graph.id, at: t0 });
    let state: SessionState = sessionStateOf(started);
    const utterances = ['hello', 'about my invoice', 'thanks', 'bye now'];
    const recorded = [];
    for (const [index, utterance] of utterances.entries()) {
      const now = seconds(t0, (index + 1) * 10);
      const step = advance(state, await decideNext(loaded!, state, utterance, { now: () => now }), now);
      const { session, transition } = await sessions.recordStep(tenant, started.id, step);
      expect(sessionStateOf(session)).toEqual(step.state);
      state = step.state;
      if (transition) recorded.push(transition);
      if (step.ends) {
        expect(step.ends).toBe('exit');
        await sessions.end(tenant, started.id, { reason: step.ends, at: now });
        break;
      }
    }
    expect(recorded.map((r) => [r.fromNodeId, r.toNodeId, r.edgeId, r.transitionedAt])).toEqual([
      [graph.entry, graph.billing, graph.toBilling, seconds(t0, 20)],
      [graph.billing, graph.goodbye, graph.toGoodbye, seconds(t0, 40)],
    ]);
    expect(await sessions.transitions(tenant, started.id)).toEqual(recorded);
    expect(await sessions.find(tenant, started.id)).toMatchObject({
      turnCount: 4,
      endReason: 'exit',
      endedAt: seconds(t0, 40),
    });

    const simulated = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${graph.id}/simulate`,
      headers: owner.headers,
      payload: { utterances },
    });
    expect(simulated.statusCode, simulated.body).toBe(200);
    expect(
      simulated
        .json()
        .transitions.map((s: Record<string, unknown>) => [s.edge_id, s.reason, s.call_duration]),
    ).toEqual(recorded.map((r) => [r.edgeId, r.reason, (r.transitionedAt.getTime() - t0.getTime()) / 1000]));
  });

  it('refuses a step decided at a node the session has left, on an ended session, and of another tenant', async () => {
    const loaded = (await loadEngineGraph(t.database.db, tenant, graph.id))!;
    const session = await sessions.start(tenant, { graphId: graph.id });
    const state = sessionStateOf(session);
    const now = new Date();
    const toBilling = advance(state, await decideNext(loaded, state, 'invoice', { now: () => now }), now);
    const stays = advance(state, await decideNext(loaded, state, 'hello', { now: () => now }), now);
    await expectAppError(sessions.recordStep(new Tenant(stranger.organizationId), session.id, stays), 404);
    await sessions.recordStep(tenant, session.id, toBilling);
    // Both were decided at the entry node, which the session has left.
    await expectAppError(sessions.recordStep(tenant, session.id, toBilling), 409, /no longer at node/);
    await expectAppError(sessions.recordStep(tenant, session.id, stays), 409, /no longer at node/);
    await sessions.end(tenant, session.id, { reason: 'hangup' });
    await expectAppError(sessions.recordStep(tenant, session.id, stays), 409, /ended/);
    expect(await sessions.find(tenant, session.id)).toMatchObject({ turnCount: 1, nodeTurnCount: 0 });
  });

  it("loads no graph of another organization's", async () => {
    expect(await loadEngineGraph(t.database.db, tenant, otherGraph.id)).toBeUndefined();
    expect(await loadEngineGraph(t.database.db, tenant, 2_000_000_000)).toBeUndefined();
  });
});

describe('GET /api/v1/assistant-graphs/{graph_id}/sessions', () => {
  let listed: Graph;
  /** Session ids, oldest first; the odd ones ended. */
  const ids: number[] = [];
  beforeAll(async () => {
    listed = await createGraph(owner, 'Listed line');
    const base = new Date(Date.now() - 3600_000);
    for (let i = 0; i < 7; i += 1) {
      const session = await sessions.start(tenant, {
        graphId: listed.id,
        callSid: `CA-list-${i}`,
        context: { i },
        at: seconds(base, i * 60),
      });
      if (i % 2 === 1)
        await sessions.end(tenant, session.id, { reason: 'hangup', at: seconds(base, i * 60 + 30) });
      ids.push(session.id);
    }
    await sessions.transition(tenant, ids[6]!, {
      toNodeId: listed.billing,
      edgeId: listed.toBilling,
      reason: 'keyword',
      at: seconds(base, 400),
    });
  });

  it('lists the sessions, most recently started first, with exactly the documented fields', async () => {
    const response = await get(owner.headers, `${BASE}/${listed.id}/sessions`);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['x-total-count']).toBe('7');
    const body = response.json() as Array<Record<string, unknown>>;
    expect(body.map((s) => s.id)).toEqual([...ids].reverse());
    for (const session of body) expect(Object.keys(session).sort()).toEqual(SESSION_FIELDS);
    const latest = body[0]!;
    expect(latest).toMatchObject({
      id: ids[6],
      call_sid: 'CA-list-6',
      graph_id: listed.id,
      current_node_id: listed.billing,
      context: { i: 6 },
      ended_at: null,
      is_active: true,
      current_assistant_name: expect.stringMatching(/^Billing \d+$/),
      graph_name: 'Listed line',
    });
    expect(new Date(latest.started_at as string).toISOString()).toBe(latest.started_at);
    const ended = body.find((s) => s.id === ids[1])!;
    expect(ended).toMatchObject({
      is_active: false,
      current_assistant_name: expect.stringMatching(/^Greeter/),
    });
    expect(typeof ended.ended_at).toBe('string');
  });

  it('pages with skip and limit', async () => {
    const page = await get(owner.headers, `${BASE}/${listed.id}/sessions?skip=2&limit=3`);
    expect(page.statusCode).toBe(200);
    expect(page.json().map((s: { id: number }) => s.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(page.headers['x-total-count']).toBe('7');
    const tail = await get(owner.headers, `${BASE}/${listed.id}/sessions?skip=6&limit=1000`);
    expect(tail.json().map((s: { id: number }) => s.id)).toEqual([ids[0]]);
    const beyond = await get(owner.headers, `${BASE}/${listed.id}/sessions?skip=50`);
    expect(beyond.json()).toEqual([]);
  });

  it('active_only=true returns only the ongoing sessions; false (the default) all of them', async () => {
    const active = await get(owner.headers, `${BASE}/${listed.id}/sessions?active_only=true`);
    expect(active.statusCode).toBe(200);
    expect(active.json().map((s: { id: number }) => s.id)).toEqual([ids[6], ids[4], ids[2], ids[0]]);
    expect(active.json().every((s: { is_active: boolean }) => s.is_active)).toBe(true);
    expect(active.headers['x-total-count']).toBe('4');
    const all = await get(owner.headers, `${BASE}/${listed.id}/sessions?active_only=false&limit=2`);
    expect(all.json()).toHaveLength(2);
    expect(all.headers['x-total-count']).toBe('7');
  });

  it('validates limit (1 to 1000), skip, active_only and the graph id', async () => {
    expectValidation(await get(owner.headers, `${BASE}/${listed.id}/sessions?limit=0`), ['query', 'limit']);
    expectValidation(await get(owner.headers, `${BASE}/${listed.id}/sessions?limit=1001`), [
      'query',
      'limit',
    ]);
    expectValidation(await get(owner.headers, `${BASE}/${listed.id}/sessions?skip=-1`), ['query', 'skip']);
    expectValidation(await get(owner.headers, `${BASE}/${listed.id}/sessions?active_only=maybe`), [
      'query',
      'active_only',
    ]);
    expectValidation(await get(owner.headers, `${BASE}/abc/sessions`), ['path', 'graph_id']);
  });

  it("answers 404 for another organization's graph and an unknown one, 401 without credentials", async () => {
    expectError(await get(stranger.headers, `${BASE}/${listed.id}/sessions`), 404, /Graph not found/);
    expectError(await get(owner.headers, `${BASE}/${otherGraph.id}/sessions`), 404);
    expectError(await get(owner.headers, `${BASE}/2000000000/sessions`), 404);
    expectError(await get({}, `${BASE}/${listed.id}/sessions`), 401);
  });

  it('lets API keys in with the graphs area only; a member of the organization may read', async () => {
    const none = await f.apiKey(owner, { permissions: { assistants: 'read_write' } });
    expectError(await get(none.headers, `${BASE}/${listed.id}/sessions`), 403);
    const reader = await f.apiKey(owner, { permissions: { graphs: 'read' } });
    const read = await get(reader.headers, `${BASE}/${listed.id}/sessions`);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toHaveLength(7);
    const member = await f.member(owner.organizationId, 'user');
    expect((await get(member.headers, `${BASE}/${listed.id}/sessions`)).statusCode).toBe(200);
  });
});

describe('GET /api/v1/assistant-graphs/sessions/{call_sid}', () => {
  it('returns the session of the call SID, with its current assistant and graph names', async () => {
    const session = await sessions.start(tenant, {
      graphId: graph.id,
      callSid: 'CA-lookup-1',
      context: { a: 1 },
    });
    await sessions.transition(tenant, session.id, {
      toNodeId: graph.billing,
      edgeId: graph.toBilling,
      reason: 'r',
    });
    const response = await get(owner.headers, `${BASE}/sessions/CA-lookup-1`);
    expect(response.statusCode, response.body).toBe(200);
    expect(Object.keys(response.json()).sort()).toEqual(SESSION_FIELDS);
    expect(response.json()).toMatchObject({
      id: session.id,
      call_sid: 'CA-lookup-1',
      graph_id: graph.id,
      current_node_id: graph.billing,
      context: { a: 1 },
      ended_at: null,
      is_active: true,
      current_assistant_name: expect.stringMatching(/^Billing \d+$/),
      graph_name: 'Support line',
    });
    await sessions.end(tenant, session.id, { reason: 'hangup' });
    const ended = await get(owner.headers, `${BASE}/sessions/CA-lookup-1`);
    expect(ended.json()).toMatchObject({ is_active: false, ended_at: expect.any(String) });
  });

  it('answers the latest session when a call SID has several', async () => {
    const base = new Date(Date.now() - 600_000);
    await sessions.start(tenant, { graphId: graph.id, callSid: 'CA-twice', at: base });
    const second = await sessions.start(tenant, {
      graphId: graph.id,
      callSid: 'CA-twice',
      at: seconds(base, 60),
    });
    const response = await get(owner.headers, `${BASE}/sessions/CA-twice`);
    expect(response.json().id).toBe(second.id);
  });

  it('is not captured by /{graph_id}: a numeric call SID and the word "sessions" resolve to it', async () => {
    const numeric = await sessions.start(tenant, { graphId: graph.id, callSid: String(graph.id) });
    const bySid = await get(owner.headers, `${BASE}/sessions/${graph.id}`);
    expect(bySid.statusCode, bySid.body).toBe(200);
    expect(bySid.json().id).toBe(numeric.id);
    const literal = await sessions.start(tenant, { graphId: graph.id, callSid: 'sessions' });
    expect((await get(owner.headers, `${BASE}/sessions/sessions`)).json().id).toBe(literal.id);
    // The graph routes still answer for their integer ids.
    const graphItself = await get(owner.headers, `${BASE}/${graph.id}`);
    expect(graphItself.statusCode, graphItself.body).toBe(200);
    expect(graphItself.json().name).toBe('Support line');
    const list = await get(owner.headers, `${BASE}/${graph.id}/sessions?limit=1`);
    expect(list.statusCode).toBe(200);
  });

  it("answers 404 for an unknown SID and for another organization's session; 401; API key area", async () => {
    await sessions.start(new Tenant(stranger.organizationId), {
      graphId: otherGraph.id,
      callSid: 'CA-theirs',
    });
    expect((await get(stranger.headers, `${BASE}/sessions/CA-theirs`)).statusCode).toBe(200);
    expectError(await get(owner.headers, `${BASE}/sessions/CA-theirs`), 404, /Session not found/);
    expectError(await get(owner.headers, `${BASE}/sessions/CA-nobody`), 404);
    expectError(await get({}, `${BASE}/sessions/CA-theirs`), 401);
    const none = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expectError(await get(none.headers, `${BASE}/sessions/CA-lookup-1`), 403);
    const reader = await f.apiKey(owner, { permissions: { graphs: 'read' } });
    expect((await get(reader.headers, `${BASE}/sessions/CA-lookup-1`)).statusCode).toBe(200);
    // Longer than any carrier's SID: the router refuses a segment over 256 characters.
    expectError(await get(owner.headers, `${BASE}/sessions/${'x'.repeat(257)}`), 414);
  });

  it('names no assistant when the current node is gone after a structure update', async () => {
    const replaced = await createGraph(owner, 'Replaced line');
    const session = await sessions.start(tenant, { graphId: replaced.id, callSid: 'CA-replaced' });
    const assistantId = await assistant(owner, 'Newcomer');
    const update = await t.app.inject({
      method: 'PUT',
      url: `${BASE}/${replaced.id}/structure`,
      headers: owner.headers,
      payload: {
        nodes: [{ assistant_id: assistantId, node_type: 'entry', position: { x: 0, y: 0 } }],
        edges: [],
      },
    });
    expect(update.statusCode, update.body).toBe(200);
    const response = await get(owner.headers, `${BASE}/sessions/CA-replaced`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      id: session.id,
      current_node_id: replaced.entry,
      current_assistant_name: null,
      graph_name: 'Replaced line',
    });
  });
});

/**
 * How the call runtime sets up a graph call (graph-setup.ts), on a real database: which calls walk a
 * graph (the number's graph, answered by its entry assistant; never another organization's), the
 * session started at the entry node and linked to the call, the same session resumed when the call is
 * set up again, and the session as the call's routing records through it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { LiveCalls } from '../src/domains/calls/live.js';
import { advance, decideNext } from '../src/domains/graphs/engine.js';
import { type GraphCallRow, type GraphCalls, graphCalls } from '../src/voice/graph-setup.js';
import { seedCall } from './support/call-seed.js';
import { expectStatus, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
let graphs: GraphCalls;

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
  const services = t.platform.services;
  graphs = graphCalls({
    db: t.database.db,
    sessions: services.graphSessions,
    // Only linking the call to its session is used here: no carrier is reached.
    live: new LiveCalls({ db: t.database.db, carriers: {} as never, resolver: services.configResolver }),
  });
}, 60_000);
afterAll(async () => {
  await t.close();
});

/** An organization whose number routes to a graph: entry (its assistant) → billing on "invoice". */
async function graphOrganization() {
  const org = await f.carrierOrganization();
  const billing = await f.assistant(org.admin, 'Billing');
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers: org.admin.headers,
    payload: {
      name: 'Support line',
      nodes: [
        { assistant_id: org.assistantId, node_type: 'entry' },
        { assistant_id: billing, node_type: 'standard' },
      ],
      edges: [{ from_node_id: 0, to_node_id: 1, condition_type: 'intent', intent_pattern: 'invoice' }],
    },
  });
  expectStatus(created, 201);
  const graph = created.json() as { id: number; nodes: Array<{ id: number }>; edges: Array<{ id: number }> };
  const routed = await t.app.inject({
    method: 'PUT',
    url: `/api/v1/phone-numbers/${org.numberId}`,
    headers: org.admin.headers,
    payload: { graph_id: graph.id },
  });
  expectStatus(routed, 200);
  const tenant = new Tenant(org.admin.organizationId);
  const call = async (assistantId: number | null = org.assistantId): Promise<GraphCallRow> => {
    const row = await seedCall(t.database, org.admin.organizationId, { assistantId, status: 'in-progress' });
    return {
      id: row!.id,
      assistantId,
      phoneNumberId: org.numberId,
      callSid: row!.callSid,
      graphSessionId: null,
    };
  };
  return { org, billing, graph, tenant, call };
}

async function callView(headers: Record<string, string>, id: number) {
  const response = await t.app.inject({ method: 'GET', url: `/api/v1/calls/${id}`, headers });
  expectStatus(response, 200);
  return response.json() as { graph_session_id: number | null };
}

describe('which calls walk a graph', () => {
  it('a call on the number answered by the entry assistant, over the graph as stored', async () => {
    const { graph, tenant, call } = await graphOrganization();
    const walk = await graphs.graphOf(tenant, await call());
    expect(walk?.graphId).toBe(graph.id);
    expect(walk?.graph.nodes.map((node) => node.id)).toEqual(graph.nodes.map((node) => node.id));
    expect(walk?.graph.edges.map((edge) => edge.id)).toEqual(graph.edges.map((edge) => edge.id));
  });

  it('not a call placed with another assistant, on no number, or seen by another organization', async () => {
    const { billing, tenant, call, org } = await graphOrganization();
    expect(await graphs.graphOf(tenant, await call(billing))).toBeUndefined();
    expect(await graphs.graphOf(tenant, { ...(await call()), phoneNumberId: null })).toBeUndefined();
    const other = await f.carrierOrganization();
    const theirs = new Tenant(other.admin.organizationId);
    expect(await graphs.graphOf(theirs, await call())).toBeUndefined();
    // Not their number either: a call of theirs naming our number's id finds nothing.
    expect(
      await graphs.graphOf(theirs, {
        id: 0,
        assistantId: org.assistantId,
        phoneNumberId: org.numberId,
        callSid: null,
        graphSessionId: null,
      }),
    ).toBeUndefined();
  });
});

describe('the session of a graph call', () => {
  it('starts at the entry node, linked to the call, and is resumed when the call is set up again', async () => {
    const { org, graph, tenant, call } = await graphOrganization();
    const first = await call();
    const started = await graphs.start(tenant, first, graph.id);
    expect(started.state).toMatchObject({ currentNodeId: graph.nodes[0]!.id, turnCount: 0, context: {} });
    const linked = (await callView(org.admin.headers, first.id)).graph_session_id;
    expect(linked).toEqual(expect.any(Number));
    const session = await t.platform.services.graphSessions.find(tenant, linked!);
    expect(session).toMatchObject({ callId: first.id, callSid: first.callSid, graphId: graph.id });

    // The routing moves it along; set up again (the call re-read), it goes on from there.
    const decision = await decideNext({ nodes: [], edges: [] }, started.state, 'hello', {
      now: () => new Date(),
    });
    const moved = await started.session.recordStep(advance(started.state, decision, new Date()));
    expect(moved.turnCount).toBe(1);
    expect(await started.session.updateContext({ customer: { tier: 'gold' } })).toEqual({
      customer: { tier: 'gold' },
    });
    const again = { ...first, graphSessionId: linked };
    expect((await graphs.graphOf(tenant, again))?.graphId).toBe(graph.id);
    const resumed = await graphs.start(tenant, again, graph.id);
    expect(resumed.state).toMatchObject({ turnCount: 1, context: { customer: { tier: 'gold' } } });
    expect((await callView(org.admin.headers, first.id)).graph_session_id).toBe(linked);

    // Once ended, the walk is over: the call is set up without the graph.
    await resumed.session.end('hangup');
    const ended = await t.platform.services.graphSessions.find(tenant, linked!);
    expect(ended).toMatchObject({ endReason: 'hangup', endedAt: expect.any(Date) });
    expect(await graphs.graphOf(tenant, again)).toBeUndefined();
  });

  it('keeps the first session when two set-ups of one call race', async () => {
    const { org, graph, tenant, call } = await graphOrganization();
    const row = await call();
    const [a, b] = await Promise.all([
      graphs.start(tenant, row, graph.id),
      graphs.start(tenant, row, graph.id),
    ]);
    const linked = (await callView(org.admin.headers, row.id)).graph_session_id;
    // Both walk the linked session; the loser's own, if it made one, is ended.
    await a.session.updateContext({ from: 'a' });
    await b.session.updateContext({ also: 'b' });
    const session = await t.platform.services.graphSessions.find(tenant, linked!);
    expect(session?.context).toEqual({ from: 'a', also: 'b' });
    const list = await t.platform.services.graphSessions.list(tenant, graph.id, {
      skip: 0,
      limit: 10,
      activeOnly: true,
    });
    expect(list.rows.map((s) => s.id)).toEqual([linked]);
  });
});

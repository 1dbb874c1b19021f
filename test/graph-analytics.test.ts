/**
 * GET /api/v1/assistant-graphs/{graph_id}/analytics against hand-computed fixtures: a graph built
 * through the graph API, sessions and transitions written through the sessions store with explicit
 * times. Checks every figure (totals, mean duration, the most used transitions with their
 * percentages and order, per-node sessions, time per visit and exit rates), the `days` window (and
 * its 422s), nodes removed by a structure update, an empty graph, 404 for another organization and
 * the API key area. The tests share one platform and the fixtures built in beforeAll.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import type { GraphSessionService } from '../src/domains/graphs/sessions.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/assistant-graphs';
const DAY = 86_400_000;

let t: TestPlatform;
let f: Factories;
let sessions: GraphSessionService;
let owner: TestUser;
let stranger: TestUser;
let tenant: Tenant;

interface Fixture {
  id: number;
  /** Node ids: Greeter (entry), Billing, Support, Goodbye (exit), Human (escalation). */
  E: number;
  B: number;
  S: number;
  X: number;
  H: number;
  /** Assistant names by node letter. */
  names: Record<'E' | 'B' | 'S' | 'X' | 'H', string>;
}
let g: Fixture;

let serial = 0;
async function assistant(user: TestUser, name: string): Promise<{ id: number; name: string }> {
  serial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `${name} ${serial}` },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function createGraph(user: TestUser, name: string): Promise<Fixture> {
  const roles = ['E', 'B', 'S', 'X', 'H'] as const;
  const made = [
    await assistant(user, 'Greeter'),
    await assistant(user, 'Billing'),
    await assistant(user, 'Support'),
    await assistant(user, 'Goodbye'),
    await assistant(user, 'Human'),
  ];
  const types = ['entry', 'standard', 'standard', 'exit', 'escalation'];
  const response = await t.app.inject({
    method: 'POST',
    url: BASE,
    headers: user.headers,
    payload: {
      name,
      nodes: made.map((a, i) => ({
        assistant_id: a.id,
        node_type: types[i],
        position: { x: i, y: 0 },
        ...(types[i] === 'escalation' ? { configuration: { transfer_number: '+14155550100' } } : {}),
      })),
      edges: [
        { from_node_id: 0, to_node_id: 1, condition_type: 'intent', intent_pattern: 'bill' },
        { from_node_id: 0, to_node_id: 2, condition_type: 'intent', intent_pattern: 'help' },
        { from_node_id: 1, to_node_id: 3, condition_type: 'intent', intent_pattern: 'bye' },
      ],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  const nodes = response.json().nodes as Array<{ id: number }>;
  const ids = Object.fromEntries(roles.map((role, i) => [role, nodes[i]!.id])) as Record<
    (typeof roles)[number],
    number
  >;
  const names = Object.fromEntries(roles.map((role, i) => [role, made[i]!.name])) as Fixture['names'];
  return { id: response.json().id, ...ids, names };
}

/**
 * A session started at `start`, moved at `start + s` seconds to each node of `path`, ended at
 * `start + end` seconds unless `end` is undefined.
 */
async function walk(
  graphId: number,
  start: Date,
  path: Array<[seconds: number, node: number]>,
  end?: number,
  who: Tenant = tenant,
): Promise<number> {
  const session = await sessions.start(who, { graphId, at: start });
  for (const [s, node] of path) {
    await sessions.transition(who, session.id, {
      toNodeId: node,
      edgeId: null,
      reason: 'fixture',
      at: new Date(start.getTime() + s * 1000),
    });
  }
  if (end !== undefined) {
    await sessions.end(who, session.id, { reason: 'hangup', at: new Date(start.getTime() + end * 1000) });
  }
  return session.id;
}

function analytics(headers: Record<string, string>, graphId: number, query = '') {
  return t.app.inject({ method: 'GET', url: `${BASE}/${graphId}/analytics${query}`, headers });
}

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
  sessions = t.platform.services.graphSessions;
  owner = await f.user({ organizationName: 'Analysts' });
  stranger = await f.user({ organizationName: 'Outsiders' });
  tenant = new Tenant(owner.organizationId);
  g = await createGraph(owner, 'Measured line');

  // Inside the 30-day window (started 10 days ago):
  const t0 = new Date(Date.now() - 10 * DAY);
  // s1: E 0–10, B 10–40, X 40–50, ended at X.
  await walk(
    g.id,
    t0,
    [
      [10, g.B],
      [40, g.X],
    ],
    50,
  );
  // s2: E 0–20, S 20–80, B from 80, still going.
  await walk(g.id, t0, [
    [20, g.S],
    [80, g.B],
  ]);
  // s3: E 0–5, B 5–25, S 25–45, B 45–100, ended at B.
  await walk(
    g.id,
    t0,
    [
      [5, g.B],
      [25, g.S],
      [45, g.B],
    ],
    100,
  );
  // s4: E 0–30, ended at E without moving.
  await walk(g.id, t0, [], 30);
  // Outside it (started 40 days ago), inside 60 days: E 0–10, B 10–20, X 20–30, ended at X.
  await walk(
    g.id,
    new Date(Date.now() - 40 * DAY),
    [
      [10, g.B],
      [20, g.X],
    ],
    30,
  );
  // Another organization's sessions on its own graph never count.
  const theirs = await createGraph(stranger, 'Their line');
  await walk(theirs.id, t0, [[10, theirs.B]], 20, new Tenant(stranger.organizationId));
});
afterAll(() => t.close());

describe('GET /api/v1/assistant-graphs/{graph_id}/analytics', () => {
  it('computes the documented figures over the sessions of the last 30 days (the default)', async () => {
    const response = await analytics(owner.headers, g.id);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        'graph_id',
        'graph_name',
        'period_days',
        'total_sessions',
        'total_transitions',
        'avg_session_duration',
        'most_used_transitions',
        'node_usage_stats',
      ].sort(),
    );
    expect(body).toMatchObject({
      graph_id: g.id,
      graph_name: 'Measured line',
      period_days: 30,
      total_sessions: 4,
      total_transitions: 7,
      // Ended sessions: 50, 100 and 30 seconds.
      avg_session_duration: 60,
    });
    // E→B and S→B twice, the rest once, of 7; ties by node ids (E < B < S < X).
    const { E, B, S, X } = g.names;
    expect(body.most_used_transitions).toEqual([
      { from_node: E, to_node: B, count: 2, percentage: 28.57 },
      { from_node: S, to_node: B, count: 2, percentage: 28.57 },
      { from_node: E, to_node: S, count: 1, percentage: 14.29 },
      { from_node: B, to_node: S, count: 1, percentage: 14.29 },
      { from_node: B, to_node: X, count: 1, percentage: 14.29 },
    ]);
    expect(body.node_usage_stats).toEqual({
      // Started there: all 4; visits 10, 20, 5, 30 s; s4 ended there.
      [g.E]: { node_name: E, sessions_started: 4, avg_time_in_node: 16.25, exit_rate: 0.25 },
      // Entered by s1, s2, s3; finished visits 30, 20, 55 s (s2's is still open); s3 ended there.
      [g.B]: { node_name: B, sessions_started: 3, avg_time_in_node: 35, exit_rate: 0.3333 },
      // Entered by s2 and s3; visits 60 and 20 s; nobody ended there.
      [g.S]: { node_name: S, sessions_started: 2, avg_time_in_node: 40, exit_rate: 0 },
      // s1 entered and ended there, 10 s.
      [g.X]: { node_name: X, sessions_started: 1, avg_time_in_node: 10, exit_rate: 1 },
      // Never used: listed with zeros.
      [g.H]: { node_name: g.names.H, sessions_started: 0, avg_time_in_node: 0, exit_rate: 0 },
    });
    // Keyed by node id, in the graph's node order.
    expect(Object.keys(body.node_usage_stats)).toEqual([g.E, g.B, g.S, g.X, g.H].map(String));
    const explicit = await analytics(owner.headers, g.id, '?days=30');
    expect(explicit.json()).toEqual(body);
  });

  it('widens and narrows with days', async () => {
    const wide = (await analytics(owner.headers, g.id, '?days=60')).json();
    expect(wide).toMatchObject({
      period_days: 60,
      total_sessions: 5,
      total_transitions: 9,
      // (50 + 100 + 30 + 30) / 4
      avg_session_duration: 52.5,
    });
    const { E, B, S, X } = g.names;
    expect(wide.most_used_transitions.slice(0, 3)).toEqual([
      { from_node: E, to_node: B, count: 3, percentage: 33.33 },
      { from_node: B, to_node: X, count: 2, percentage: 22.22 },
      { from_node: S, to_node: B, count: 2, percentage: 22.22 },
    ]);
    expect(wide.node_usage_stats[g.X]).toEqual({
      node_name: X,
      sessions_started: 2,
      avg_time_in_node: 10,
      exit_rate: 1,
    });
    expect(wide.node_usage_stats[g.E]).toMatchObject({ sessions_started: 5, avg_time_in_node: 15 });
    const all = (await analytics(owner.headers, g.id, '?days=365')).json();
    expect(all.total_sessions).toBe(5);
    // Nothing started in the last day.
    const narrow = (await analytics(owner.headers, g.id, '?days=1')).json();
    expect(narrow).toMatchObject({
      period_days: 1,
      total_sessions: 0,
      total_transitions: 0,
      avg_session_duration: 0,
      most_used_transitions: [],
    });
    expect(narrow.node_usage_stats[g.E]).toEqual({
      node_name: E,
      sessions_started: 0,
      avg_time_in_node: 0,
      exit_rate: 0,
    });
  });

  it('answers 422 for days outside 1 to 365', async () => {
    expectValidation(await analytics(owner.headers, g.id, '?days=0'), ['query', 'days']);
    expectValidation(await analytics(owner.headers, g.id, '?days=366'), ['query', 'days']);
    expectValidation(await analytics(owner.headers, g.id, '?days=1.5'), ['query', 'days']);
    expectValidation(await analytics(owner.headers, g.id, '?days=week'), ['query', 'days']);
  });

  it('names nodes a structure update removed "node <id>", and lists the new ones', async () => {
    const replaced = await createGraph(owner, 'Rebuilt line');
    const start = new Date(Date.now() - 2 * DAY);
    await walk(replaced.id, start, [[10, replaced.B]], 70);
    const newcomer = await assistant(owner, 'Newcomer');
    const update = await t.app.inject({
      method: 'PUT',
      url: `${BASE}/${replaced.id}/structure`,
      headers: owner.headers,
      payload: {
        nodes: [{ assistant_id: newcomer.id, node_type: 'entry', position: { x: 0, y: 0 } }],
        edges: [],
      },
    });
    expect(update.statusCode, update.body).toBe(200);
    const newEntry = update.json().nodes[0].id as number;
    const body = (await analytics(owner.headers, replaced.id)).json();
    expect(body).toMatchObject({ total_sessions: 1, total_transitions: 1, avg_session_duration: 70 });
    expect(body.most_used_transitions).toEqual([
      { from_node: `node ${replaced.E}`, to_node: `node ${replaced.B}`, count: 1, percentage: 100 },
    ]);
    expect(body.node_usage_stats).toEqual({
      [newEntry]: { node_name: newcomer.name, sessions_started: 0, avg_time_in_node: 0, exit_rate: 0 },
      [replaced.E]: {
        node_name: `node ${replaced.E}`,
        sessions_started: 1,
        avg_time_in_node: 10,
        exit_rate: 0,
      },
      [replaced.B]: {
        node_name: `node ${replaced.B}`,
        sessions_started: 1,
        avg_time_in_node: 60,
        exit_rate: 1,
      },
    });
  });

  it('agrees with a direct per-visit computation over random walks (self-loops, open sessions included)', async () => {
    const random = await createGraph(owner, 'Random walks');
    const nodes = [random.E, random.B, random.S, random.X, random.H];
    let seed = 20261121;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    interface Walk {
      start: number;
      moves: Array<[at: number, node: number]>;
      end: number | null;
    }
    const walks: Walk[] = [];
    for (let i = 0; i < 25; i += 1) {
      const start = Date.now() - (1 + next(20)) * DAY - next(3600) * 1000;
      const moves: Walk['moves'] = [];
      let at = start;
      for (let k = next(7); k > 0; k -= 1) {
        at += next(120) * 1000; // 0 s too: two moves in the same second
        moves.push([at, nodes[next(nodes.length)]!]);
      }
      const end = next(4) === 0 ? null : at + next(200) * 1000;
      walks.push({ start, moves, end });
      await walk(
        random.id,
        new Date(start),
        moves.map(([t, node]) => [(t - start) / 1000, node]),
        end === null ? undefined : (end - start) / 1000,
      );
    }

    // The definitions, visit by visit.
    const entered = new Map<number, Set<number>>();
    const visits = new Map<number, number[]>();
    const endedAt = new Map<number, number>();
    const pairs = new Map<string, number>();
    let transitions = 0;
    const durations: number[] = [];
    walks.forEach((w, i) => {
      const steps: Array<[number, number]> = [[w.start, random.E], ...w.moves];
      steps.forEach(([at, node], k) => {
        if (!entered.has(node)) entered.set(node, new Set());
        entered.get(node)!.add(i);
        const left = k + 1 < steps.length ? steps[k + 1]![0] : w.end;
        if (left !== null) {
          if (!visits.has(node)) visits.set(node, []);
          visits.get(node)!.push((left - at) / 1000);
        }
        if (k > 0) {
          const key = `${steps[k - 1]![1]}>${node}`;
          pairs.set(key, (pairs.get(key) ?? 0) + 1);
          transitions += 1;
        }
      });
      if (w.end !== null) {
        const last = steps.at(-1)![1];
        endedAt.set(last, (endedAt.get(last) ?? 0) + 1);
        durations.push((w.end - w.start) / 1000);
      }
    });
    const mean = (values: number[]) =>
      values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;

    const body = (await analytics(owner.headers, random.id)).json();
    expect(body.total_sessions).toBe(walks.length);
    expect(body.total_transitions).toBe(transitions);
    expect(Math.abs(body.avg_session_duration - mean(durations))).toBeLessThanOrEqual(0.005);
    const nameOf = new Map(nodes.map((id, i) => [id, Object.values(random.names)[i]!]));
    const expectedPairs = [...pairs.entries()]
      .map(([key, count]) => {
        const [from, to] = key.split('>').map(Number) as [number, number];
        return { from, to, count };
      })
      .sort((a, b) => b.count - a.count || a.from - b.from || a.to - b.to)
      .slice(0, 10);
    expect(body.most_used_transitions).toHaveLength(expectedPairs.length);
    expectedPairs.forEach((pair, i) => {
      const got = body.most_used_transitions[i];
      expect(got.from_node).toBe(nameOf.get(pair.from));
      expect(got.to_node).toBe(nameOf.get(pair.to));
      expect(got.count).toBe(pair.count);
      expect(Math.abs(got.percentage - (100 * pair.count) / transitions)).toBeLessThanOrEqual(0.005);
    });
    for (const node of nodes) {
      const stats = body.node_usage_stats[node];
      const sessionsIn = entered.get(node)?.size ?? 0;
      expect(stats.sessions_started, `node ${node}`).toBe(sessionsIn);
      expect(
        Math.abs(stats.avg_time_in_node - mean(visits.get(node) ?? [])),
        `node ${node}`,
      ).toBeLessThanOrEqual(0.005);
      const rate = sessionsIn ? (endedAt.get(node) ?? 0) / sessionsIn : 0;
      expect(Math.abs(stats.exit_rate - rate), `node ${node}`).toBeLessThanOrEqual(0.00005);
    }
  });

  it("answers 404 for another organization's graph and an unknown one, 401 without credentials", async () => {
    expectError(await analytics(stranger.headers, g.id), 404, /Graph not found/);
    expectError(await analytics(owner.headers, 2_000_000_000), 404);
    expectError(await analytics({}, g.id), 401);
    expectValidation(await analytics(owner.headers, 0), ['path', 'graph_id']);
  });

  it('lets API keys in with the graphs area only', async () => {
    const none = await f.apiKey(owner, { permissions: { calls: 'read_write' } });
    expectError(await analytics(none.headers, g.id), 403);
    const reader = await f.apiKey(owner, { permissions: { graphs: 'read' } });
    const read = await analytics(reader.headers, g.id);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().total_sessions).toBe(4);
  });
});

/**
 * The graph analytics, read from rollups, against the full scan they replaced (the oracle,
 * test/support/graph-analytics-oracle.ts), on random histories written through the sessions store:
 * random graphs, sessions started at random times (many right around the window's start: on it, a
 * step before or after, in its partial hour), random walks with self-moves and moves timed before
 * the node was entered (clamped), sessions ended or left open, and structure updates that remove
 * the nodes sessions are on while they keep moving. For several `days`, the answer must equal the
 * oracle's exactly, figure by figure. Then migration 0018's backfill, run on the same history,
 * rebuilds exactly the rollups the sessions store kept. The tests share one database.
 *
 * Times are on a 125 ms grid: the oracle sums seconds as float8, which is exact for multiples of
 * 1/8 s, so both sides compute exact means and a mean that lands on a rounding tie (x.xx5) rounds
 * the same way in both. (On arbitrary microseconds the float sums can tip such a tie, the rollups'
 * integer microseconds cannot.)
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { GraphAnalyticsService } from '../src/domains/graphs/analytics.js';
import { Factories, type TestUser } from './support/factories.js';
import { fullScanAnalytics } from './support/graph-analytics-oracle.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform();
const SEED = Number(process.env.GRAPH_ANALYTICS_SEED ?? 20261128);
const RUNS = Number(process.env.GRAPH_ANALYTICS_RUNS ?? 12);
const MIGRATION = new URL('../src/db/migrations/0018_graph_rollups.sql', import.meta.url);
const BASE = '/api/v1/assistant-graphs';
const GRID = 125;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The windows compared in every run, besides the run's own random one. */
const WINDOWS = [1, 2, 7, 30, 365];

type NodeType = 'standard' | 'exit' | 'escalation';

const grid = (min: number, max: number) => fc.integer({ min, max }).map((k) => k * GRID);
/** A step's delay after the node was entered: now and then negative (the store clamps it), often 0. */
const delay = fc.oneof(grid(0, 0), grid(-40, 4_800), grid(0, 16));
const sessionArb = fc.record({
  /** Anywhere in the last 40 days, or within 2 h of the start of one of the windows compared. */
  start: fc.oneof(
    fc.record({ anywhere: grid(0, (40 * DAY) / GRID) }),
    fc.record({
      window: fc.nat(4),
      around: fc.oneof(grid(-1, 1), grid((-2 * HOUR) / GRID, (2 * HOUR) / GRID)),
    }),
  ),
  moves: fc.array(fc.record({ node: fc.nat(), after: delay }), { maxLength: 6 }),
  end: fc.option(delay, { nil: undefined }),
  /** Left open: one more move after the structure update (to a node of the new structure). */
  lateMove: fc.boolean(),
});
const scenarioArb = fc.record({
  types: fc.array(fc.constantFrom<NodeType>('standard', 'exit', 'escalation'), {
    minLength: 1,
    maxLength: 4,
  }),
  /** Where `now` falls in its hour, in grid steps. */
  nowInHour: fc.integer({ min: 0, max: HOUR / GRID - 1 }),
  days: fc.integer({ min: 1, max: 45 }),
  sessions: fc.array(sessionArb, { maxLength: 12 }),
  /** After how many sessions the structure is replaced (never, when past the end). */
  restructureAfter: fc.nat(14),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

let owner: TestUser;
let tenant: Tenant;
let assistants: number[];
let graphs = 0;

beforeAll(async () => {
  const f = new Factories(t);
  owner = await f.user({ organizationName: 'Graph analysts' });
  tenant = new Tenant(owner.organizationId);
  assistants = [];
  for (const name of ['Front desk', 'Billing', 'Support', 'Goodbye', 'Human', 'Newcomer'])
    assistants.push(await f.assistant(owner, name));
});

function structure(types: NodeType[], shift: number) {
  return ['entry' as const, ...types].map((nodeType, i) => ({
    assistant_id: assistants[(i + shift) % assistants.length],
    node_type: nodeType,
    position: { x: i, y: 0 },
    ...(nodeType === 'escalation' ? { configuration: { transfer_number: '+14155550100' } } : {}),
  }));
}

/** Writes the scenario through the sessions store; answers the graph and the pinned `now`. */
async function write(scenario: Scenario): Promise<{ graphId: number; now: Date }> {
  const sessions = t.platform.services.graphSessions;
  graphs += 1;
  const created = await t.app.inject({
    method: 'POST',
    url: BASE,
    headers: owner.headers,
    payload: { name: `Random line ${graphs}`, nodes: structure(scenario.types, 0), edges: [] },
  });
  expect(created.statusCode, created.body).toBe(201);
  const graphId: number = created.json().id;
  let nodes: number[] = created.json().nodes.map((n: { id: number }) => n.id);
  // `now` is pinned just behind the clock (so the endpoint's own window holds the same sessions).
  const now = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR + scenario.nowInHour * GRID);
  const windows = [...WINDOWS.slice(0, 4), scenario.days];
  const open: Array<{ id: number; at: number }> = [];
  const restructure = async () => {
    const update = await t.app.inject({
      method: 'PUT',
      url: `${BASE}/${graphId}/structure`,
      headers: owner.headers,
      payload: { nodes: structure(scenario.types.slice(1), 1), edges: [] },
    });
    expect(update.statusCode, update.body).toBe(200);
    nodes = update.json().nodes.map((n: { id: number }) => n.id);
    for (const session of open) {
      const at = new Date(session.at + 1000);
      await sessions.transition(tenant, session.id, {
        toNodeId: nodes.at(-1)!,
        edgeId: null,
        reason: 'late',
        at,
      });
    }
  };
  for (const [i, s] of scenario.sessions.entries()) {
    if (i === scenario.restructureAfter) await restructure();
    const started =
      'anywhere' in s.start
        ? now.getTime() - s.start.anywhere
        : now.getTime() - windows[s.start.window]! * DAY + s.start.around;
    const session = await sessions.start(tenant, { graphId, at: new Date(started) });
    let entered = started;
    for (const move of s.moves) {
      const at = entered + move.after;
      const toNodeId = nodes[move.node % nodes.length]!;
      await sessions.transition(tenant, session.id, {
        toNodeId,
        edgeId: null,
        reason: 'random',
        at: new Date(at),
      });
      entered = Math.max(at, entered);
    }
    if (s.end !== undefined)
      await sessions.end(tenant, session.id, { reason: 'hangup', at: new Date(entered + s.end) });
    else if (s.lateMove) open.push({ id: session.id, at: entered });
  }
  return { graphId, now };
}

describe('the graph analytics from rollups equal the full scan', () => {
  it('on random histories, for every window', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const { graphId, now } = await write(scenario);
        const pinned = new GraphAnalyticsService({ db: t.database.db, now: () => now });
        for (const days of [...WINDOWS, scenario.days]) {
          const answer = await pinned.compute(tenant, graphId, days);
          const oracle = await fullScanAnalytics(t.database.db, owner.organizationId, graphId, days, now);
          expect(answer, `days=${days}, now=${now.toISOString()}`).toEqual({
            graph_id: graphId,
            graph_name: expect.any(String),
            period_days: days,
            ...oracle,
          });
        }
        // The endpoint, on the database's clock: a year holds every session of the run either way.
        const response = await t.app.inject({
          method: 'GET',
          url: `${BASE}/${graphId}/analytics?days=365`,
          headers: owner.headers,
        });
        expect(response.statusCode, response.body).toBe(200);
        const oracle = await fullScanAnalytics(t.database.db, owner.organizationId, graphId, 365);
        expect(response.json()).toEqual({
          graph_id: graphId,
          graph_name: expect.any(String),
          period_days: 365,
          ...oracle,
        });
        expect(oracle.total_sessions).toBe(scenario.sessions.length);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});

describe('migration 0018', () => {
  it('backfills exactly the rollups the sessions store kept', async () => {
    const snapshot = async () => ({
      nodes: (
        await t.database.executeSql(
          'select * from graph_node_rollups order by organization_id, graph_id, hours, period_start, node_id',
        )
      ).rows,
      pairs: (
        await t.database.executeSql(
          'select * from graph_transition_rollups order by organization_id, graph_id, hours, period_start, from_node_id, to_node_id',
        )
      ).rows,
    });
    const kept = await snapshot();
    expect(kept.nodes.length).toBeGreaterThan(50);
    expect(kept.pairs.length).toBeGreaterThan(50);
    const backfill = readFileSync(MIGRATION, 'utf8')
      .split('--> statement-breakpoint')
      .filter((statement) => /^\s*(--.*\n)*\s*INSERT INTO/i.test(statement));
    expect(backfill).toHaveLength(2);
    await t.database.executeSql('delete from graph_node_rollups; delete from graph_transition_rollups');
    for (const statement of backfill) await t.database.executeSql(statement);
    expect(await snapshot()).toEqual(kept);
  });
});

/**
 * Graph analytics over a large history, and the routing engine's speed.
 *
 * Seeds one graph (8 nodes, 17 edges, built through the graph API) with 1M transitions (100k
 * sessions of 10 transitions; the count is the first argument) in two `generate_series` statements
 * (sessions spread over the last 60 days, 98 % ended), builds their rollups with migration 0018's
 * backfill (what the sessions store would have kept while writing them), then times GET
 * /assistant-graphs/{id}/analytics (read from the rollups) for `days` 30 and 365, 20 times each,
 * beside a plain `select count(*)` of the same transitions (those of the sessions started in the
 * window) and beside the full-scan statement the endpoint ran before the rollups
 * (test/support/graph-analytics-oracle.ts), in the same run. Then runs the engine's `decideNext` over
 * the same graph in a loop (intent, mathematical, state_variable and natural_language edges; the
 * classifier is a stub answering no), beside a naive keyword router.
 *
 * `npm run bench -- graph-analytics [transitions=1000000] [transitions per session=10] [repeats=20]`;
 * BENCH_DATABASE_URL=postgres://… runs it on a server, BENCH_DECISIONS sets the engine loop's length
 * (default 200,000), BENCH_EXPLAIN=<days> prints the analytics statement's plan first.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { analyticsSql, type WindowBounds, windowBoundsSql } from '../src/domains/graphs/analytics-sql.js';
import { decideNext } from '../src/domains/graphs/engine.js';
import type { EngineEdge, EngineGraph, SessionState } from '../src/domains/graphs/engine-types.js';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { fullScanAnalytics } from '../test/support/graph-analytics-oracle.js';
import { latencies, startBenchPlatform, table } from './support.js';

const ms = (value: number) => Number(value.toFixed(1));

/** Greeter (entry), Billing, Support, Sales, Verification, Retention, Goodbye (exit), Human (escalation). */
const NODES = [
  ['Greeter', 'entry'],
  ['Billing', 'standard'],
  ['Support', 'standard'],
  ['Sales', 'standard'],
  ['Verification', 'standard'],
  ['Retention', 'standard'],
  ['Goodbye', 'exit'],
  ['Human', 'escalation'],
] as const;

const EDGES = [
  {
    from_node_id: 0,
    to_node_id: 7,
    condition_type: 'intent',
    intent_pattern: 'human, agent, representative, operator',
    priority: 0,
  },
  {
    from_node_id: 0,
    to_node_id: 1,
    condition_type: 'intent',
    intent_pattern: 'bill, invoice, payment, charge',
    priority: 1,
  },
  {
    from_node_id: 0,
    to_node_id: 2,
    condition_type: 'intent',
    intent_pattern: 'help, broken, not working, error',
    priority: 2,
  },
  {
    from_node_id: 0,
    to_node_id: 3,
    condition_type: 'intent',
    intent_pattern: 'buy, upgrade, pricing, plan',
    priority: 3,
  },
  {
    from_node_id: 0,
    to_node_id: 7,
    condition_type: 'mathematical',
    mathematical_expression: 'turn_count > 6',
    priority: 9,
  },
  {
    from_node_id: 1,
    to_node_id: 4,
    condition_type: 'state_variable',
    state_variable_condition: 'customer.verified == false',
    priority: 0,
  },
  {
    from_node_id: 1,
    to_node_id: 5,
    condition_type: 'intent',
    intent_pattern: 'cancel, close my account',
    priority: 1,
  },
  {
    from_node_id: 1,
    to_node_id: 6,
    condition_type: 'intent',
    intent_pattern: "bye, thanks, that's all",
    priority: 2,
  },
  {
    from_node_id: 1,
    to_node_id: 7,
    condition_type: 'mathematical',
    mathematical_expression: 'time_in_node > 300 or node_turn_count > 8',
    priority: 5,
  },
  { from_node_id: 2, to_node_id: 6, condition_type: 'intent', intent_pattern: 'bye, thanks', priority: 1 },
  { from_node_id: 2, to_node_id: 1, condition_type: 'intent', intent_pattern: 'bill, refund', priority: 2 },
  {
    from_node_id: 2,
    to_node_id: 7,
    condition_type: 'natural_language',
    natural_language_trigger: 'The caller is frustrated',
    priority: 9,
  },
  { from_node_id: 3, to_node_id: 6, condition_type: 'intent', intent_pattern: 'bye', priority: 1 },
  {
    from_node_id: 3,
    to_node_id: 1,
    condition_type: 'state_variable',
    state_variable_condition: "plan in ['pro', 'team']",
    priority: 2,
  },
  {
    from_node_id: 4,
    to_node_id: 1,
    condition_type: 'state_variable',
    state_variable_condition: 'customer.verified == true',
    priority: 1,
  },
  { from_node_id: 5, to_node_id: 6, condition_type: 'intent', intent_pattern: 'bye, fine, ok', priority: 1 },
  {
    from_node_id: 5,
    to_node_id: 7,
    condition_type: 'mathematical',
    mathematical_expression: 'call_duration > 600',
    priority: 2,
  },
];

const UTTERANCES = [
  'Hi, I have a question about my last invoice',
  'My internet is not working since yesterday',
  'I would like to upgrade my plan to the pro tier',
  'Can I talk to a human please',
  'Yes that is correct',
  'I want to cancel my subscription and close my account',
  'Okay thanks, bye',
  'Why was I charged twice this month?',
  'The router shows a red light and an error code',
  'Hmm, let me think about it for a moment',
];

export async function run(args: string[]): Promise<void> {
  const perSession = Number(args[1] ?? 10);
  const sessionCount = Math.round(Number(args[0] ?? 1_000_000) / perSession);
  const repeats = Number(args[2] ?? 20);
  const bench = await startBenchPlatform();
  const { app, database } = bench.platform;
  const kind = process.env.BENCH_DATABASE_URL ? 'PostgreSQL server' : 'embedded PGlite';

  const registered = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/register',
    payload: {
      email: 'graphs@example.test',
      password: 'benchmark password',
      first_name: 'G',
      last_name: 'A',
    },
  });
  const headers = { authorization: `Bearer ${registered.json().access_token}` };
  const organizationId: number = registered.json().organization.id;
  await markEmailVerified(database.db, registered.json().user.id);
  const assistantIds: number[] = [];
  for (const [name] of NODES) {
    const made = await app.inject({ method: 'POST', url: '/api/v1/assistants', headers, payload: { name } });
    assistantIds.push(made.json().id);
  }
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers,
    payload: {
      name: 'Benchmark line',
      nodes: NODES.map(([, type], i) => ({
        assistant_id: assistantIds[i],
        node_type: type,
        position: { x: i, y: 0 },
        ...(type === 'escalation' ? { configuration: { transfer_number: '+14155550100' } } : {}),
      })),
      edges: EDGES,
    },
  });
  if (created.statusCode !== 201) throw new Error(`graph creation failed: ${created.body}`);
  const graph = created.json() as {
    id: number;
    nodes: Array<{
      id: number;
      node_type: string;
      assistant_id: number;
      configuration: Record<string, unknown>;
    }>;
    edges: Array<Record<string, unknown> & { id: number }>;
  };
  const node = graph.nodes.map((n) => n.id);

  // ---- seed: sessions, then transitions, each one statement --------------------------------------
  // Node k (0..perSession) of session g: the entry node, then standard nodes (never the same twice
  // in a row), then the exit node, or the escalation node for every 7th session.
  const standard = `array[${node.slice(1, 6).join(',')}]`;
  const nodeAt = (g: string, k: string) =>
    `case when ${k} = 0 then ${node[0]}
          when ${k} = ${perSession} then case when ${g} % 7 = 0 then ${node[7]} else ${node[6]} end
          else (${standard})[1 + ((${g} * 31 + ${k} * 7) % 5)] end`;
  // Session g starts somewhere in the last 60 days; transition k comes 30 s after the one before.
  const startOf = (g: string) => `now() - make_interval(secs => (${g}::bigint * 7919) % 5184000)`;
  const seedStarted = performance.now();
  await database.executeSql(`
    insert into graph_sessions (id, organization_id, graph_id, call_sid, current_node_id, context, turn_count,
                                node_turn_count, node_entered_at, started_at, ended_at, end_reason)
    overriding system value
    select g, ${organizationId}, ${graph.id}, 'CA' || g, ${nodeAt('g', String(perSession))}, '{}'::jsonb,
           ${perSession * 2}, 1, ${startOf('g')} + make_interval(secs => ${perSession * 30} + g % 20),
           ${startOf('g')},
           case when g % 50 = 0 then null else ${startOf('g')} + make_interval(secs => ${perSession * 30 + 45} + g % 20) end,
           case when g % 50 = 0 then null else 'hangup' end
    from generate_series(1, ${sessionCount}) g`);
  await database.executeSql(`select setval(pg_get_serial_sequence('graph_sessions', 'id'), ${sessionCount})`);
  const sessionsSeeded = performance.now();
  await database.executeSql(`
    insert into graph_transitions (organization_id, session_id, graph_id, from_node_id, to_node_id, edge_id,
                                   reason, transitioned_at)
    select ${organizationId}, g, ${graph.id}, ${nodeAt('g', 'k - 1')}, ${nodeAt('g', 'k')}, null, 'seeded',
           ${startOf('g')} + make_interval(secs => k * 30 + g % 20)
    from generate_series(1, ${sessionCount}) g, generate_series(1, ${perSession}) k`);
  const transitionsSeeded = performance.now();
  await database.executeSql('analyze graph_sessions');
  await database.executeSql('analyze graph_transitions');
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  // The rollups the sessions store keeps as it writes, built for the seeded history at once.
  const backfillStarted = performance.now();
  const backfill = readFileSync(
    new URL('../src/db/migrations/0018_graph_rollups.sql', import.meta.url),
    'utf8',
  )
    .split('--> statement-breakpoint')
    .filter((statement) => /^\s*(--.*\n)*\s*INSERT INTO/i.test(statement));
  for (const statement of backfill) await database.executeSql(statement);
  await database.executeSql('analyze graph_node_rollups');
  await database.executeSql('analyze graph_transition_rollups');
  const backfillSeconds = (performance.now() - backfillStarted) / 1000;
  const { rows: rollupRows } = await database.executeSql(
    'select (select count(*)::int from graph_node_rollups) + (select count(*)::int from graph_transition_rollups) as n',
  );
  const { rows: counted } = await database.executeSql(
    'select (select count(*)::int from graph_sessions) as sessions, (select count(*)::int from graph_transitions) as transitions',
  );

  // ---- analytics beside count(*) of the same transitions and the old full scan ---------------------
  if (process.env.BENCH_EXPLAIN) {
    const bounds = (await database.db.execute(
      windowBoundsSql(Number(process.env.BENCH_EXPLAIN), sql`now()`),
    )) as unknown as { rows: WindowBounds[] };
    const plan = (await database.db.execute(
      sql`explain (analyze, buffers) ${analyticsSql(organizationId, graph.id, bounds.rows[0]!)}`,
    )) as unknown as { rows: Array<Record<string, string>> };
    console.log(plan.rows.map((r) => Object.values(r)[0]).join('\n'));
  }
  const rows: Array<Record<string, string | number>> = [];
  const ratios: Record<number, number> = {};
  const scanRatios: Record<number, number> = {};
  let figures: Record<number, { sessions: number; transitions: number }> = {};
  for (const days of [30, 365]) {
    const baseline = await latencies(
      () =>
        database.executeSql(
          `select count(*)::int as n from graph_transitions tr
          where tr.session_id in (select id from graph_sessions
                                   where graph_id = $1 and organization_id = $2
                                     and started_at >= now() - make_interval(days => $3))`,
          [graph.id, organizationId, days],
        ),
      repeats,
    );
    const fullScan = await latencies(
      () => fullScanAnalytics(database.db, organizationId, graph.id, days),
      repeats,
    );
    let result: { total_sessions: number; total_transitions: number } | undefined;
    const analytics = await latencies(async () => {
      const response = await app.inject({
        method: 'GET',
        url: `/api/v1/assistant-graphs/${graph.id}/analytics?days=${days}`,
        headers,
      });
      if (response.statusCode !== 200) throw new Error(`analytics failed: ${response.body}`);
      result = response.json();
    }, repeats);
    figures = {
      ...figures,
      [days]: { sessions: result!.total_sessions, transitions: result!.total_transitions },
    };
    ratios[days] = analytics.p50 / baseline.p50;
    scanRatios[days] = analytics.p50 / fullScan.p50;
    const row = (query: string, figures: { p50: number; p95: number }) => ({
      query,
      sessions: result!.total_sessions,
      transitions: result!.total_transitions,
      'p50 ms': ms(figures.p50),
      'p95 ms': ms(figures.p95),
      'x baseline': Number((figures.p50 / baseline.p50).toFixed(3)),
    });
    rows.push(
      row(`count(*) of the window's transitions (baseline), days=${days}`, baseline),
      row(`old full scan (before the rollups), days=${days}`, fullScan),
      row(`GET /analytics (rollups), days=${days}`, analytics),
    );
  }

  // ---- the routing engine ----------------------------------------------------------------------------
  const engineGraph: EngineGraph = {
    nodes: graph.nodes.map((n) => ({
      id: n.id,
      nodeType: n.node_type as EngineGraph['nodes'][number]['nodeType'],
      assistantId: n.assistant_id,
      configuration: n.configuration,
    })),
    edges: graph.edges.map(
      (e): EngineEdge => ({
        id: e.id,
        fromNodeId: e.from_node_id as number,
        toNodeId: e.to_node_id as number,
        conditionType: e.condition_type as EngineEdge['conditionType'],
        intentPattern: (e.intent_pattern as string | null) ?? null,
        naturalLanguageTrigger: (e.natural_language_trigger as string | null) ?? null,
        mathematicalExpression: (e.mathematical_expression as string | null) ?? null,
        stateVariableCondition: (e.state_variable_condition as string | null) ?? null,
        conditionLogic: e.condition_logic === 'OR' ? 'OR' : 'AND',
        priority: e.priority as number,
        isActive: e.is_active !== false,
        handoffSentence: (e.handoff_sentence as string | null) ?? null,
      }),
    ),
  };
  const started = new Date(Date.now() - 120_000);
  const states: SessionState[] = node.slice(0, 6).flatMap((currentNodeId, i) =>
    [true, false].map((verified) => ({
      currentNodeId,
      context: { customer: { verified, tier: 'gold' }, plan: i % 2 ? 'pro' : 'basic', attempts: i },
      turnCount: 3 + i,
      nodeTurnCount: 1 + (i % 3),
      startedAt: started,
      nodeEnteredAt: new Date(started.getTime() + 30_000),
    })),
  );
  const now = new Date();
  const deps = { now: () => now, classifier: async () => false };
  const decisions = Number(process.env.BENCH_DECISIONS ?? 200_000);
  let fired = 0;
  const engineStarted = performance.now();
  for (let i = 0; i < decisions; i += 1) {
    const decision = await decideNext(
      engineGraph,
      states[i % states.length]!,
      UTTERANCES[i % UTTERANCES.length]!,
      deps,
    );
    if (decision.edge) fired += 1;
  }
  const enginePerSecond = decisions / ((performance.now() - engineStarted) / 1000);
  // Naive baseline: the same edges, substring keyword search only (no conditions, no reasons).
  const naiveStarted = performance.now();
  let naiveFired = 0;
  for (let i = 0; i < decisions; i += 1) {
    const state = states[i % states.length]!;
    const said = UTTERANCES[i % UTTERANCES.length]!.toLowerCase();
    const hit = engineGraph.edges
      .filter((e) => e.fromNodeId === state.currentNodeId && e.isActive)
      .sort((a, b) => a.priority - b.priority)
      .find((e) =>
        (e.intentPattern ?? '').split(',').some((k) => k.trim() !== '' && said.includes(k.trim())),
      );
    if (hit) naiveFired += 1;
    if (i % 1000 === 0) await Promise.resolve();
  }
  const naivePerSecond = decisions / ((performance.now() - naiveStarted) / 1000);

  console.log(
    `graph-analytics on ${kind}: seeded ${counted[0]?.sessions} sessions in ${((sessionsSeeded - seedStarted) / 1000).toFixed(1)} s ` +
      `and ${counted[0]?.transitions} transitions in ${((transitionsSeeded - sessionsSeeded) / 1000).toFixed(1)} s ` +
      `(${seedSeconds.toFixed(1)} s with ANALYZE); ${rollupRows[0]?.n} rollup rows backfilled in ${backfillSeconds.toFixed(1)} s; ` +
      `${repeats} runs per row`,
  );
  table(rows);
  table([
    {
      loop: 'naive keyword router (baseline: substring intents only)',
      'decisions/s': Math.round(naivePerSecond),
      'µs/decision': Number((1e6 / naivePerSecond).toFixed(2)),
      fired: naiveFired,
      ratio: 1,
    },
    {
      loop: 'engine decideNext (all condition types, reasons)',
      'decisions/s': Math.round(enginePerSecond),
      'µs/decision': Number((1e6 / enginePerSecond).toFixed(2)),
      fired,
      ratio: Number((enginePerSecond / naivePerSecond).toFixed(2)),
    },
  ]);
  const p = (days: number) => rows.find((r) => r.query === `GET /analytics (rollups), days=${days}`)!;
  const summary = (days: number) =>
    `${figures[days]?.transitions} transitions (days=${days}) in p50 ${p(days)['p50 ms']} ms / p95 ${p(days)['p95 ms']} ms ` +
    `= ${ratios[days]!.toFixed(3)}× count(*), ${scanRatios[days]!.toFixed(3)}× the old full scan`;
  console.log(
    `graph-analytics: ${counted[0]?.transitions} seeded; ${summary(30)}; ${summary(365)}; ` +
      `engine ${Math.round(enginePerSecond)} decisions/s = ${(enginePerSecond / naivePerSecond).toFixed(2)}× a naive keyword router`,
  );
  await bench.close();
}

/**
 * Call analytics on a million calls (issue 19): GET /api/v1/calls/analytics beside a bare count(*).
 *
 * Seeds one organization with `calls` calls spread evenly over the last 365 days (10 assistants, 20
 * numbers, outcomes of every kind, 1 in 20 completed calls answered by a machine), 3 turns each
 * (a greeting and two replies with latencies), a tool use on every third call (1 in 10 failing)
 * and a transfer on every twentieth — each table in one `generate_series` statement. The rollups
 * are then built by migration 0015's own backfill statements (timed: what upgrading costs). Then,
 * 20 times each, through `app.inject`: the endpoint for 30 and 365 days, in UTC and in New York
 * (whose days are read from hour rows), and for one assistant over 365 days — beside
 * `select count(*) from calls where organization_id = $1 and created_at between …` over the same
 * range in the same run, and a naive scan (the same figures straight from calls and turns with
 * `percentile_cont`), 3 times each.
 *
 * `npm run bench -- call-analytics [calls=1000000] [repeats=20]`; BENCH_DATABASE_URL=postgres://…
 * runs it on a server (a database of its own, dropped after).
 */
import { readFileSync } from 'node:fs';
import { benchUser, latencies, startBenchPlatform, table } from './support.js';

const ms = (value: number) => Number(value.toFixed(1));
const MIGRATION = new URL('../src/db/migrations/0015_call_analytics_rollups.sql', import.meta.url);
const DAY_MS = 86_400_000;

export async function run(args: string[]): Promise<void> {
  const callCount = Number(args[0] ?? 1_000_000);
  const repeats = Number(args[1] ?? 20);
  const bench = await startBenchPlatform();
  const { app, database } = bench.platform;
  const kind = process.env.BENCH_DATABASE_URL ? 'PostgreSQL server' : 'embedded PGlite';
  try {
    const user = await benchUser(bench.platform, 'call-analytics');
    const org = user.organizationId;
    const assistantIds: number[] = [];
    for (let i = 0; i < 10; i++) {
      const made = await app.inject({
        method: 'POST',
        url: '/api/v1/assistants',
        headers: user.headers,
        payload: { name: `Assistant ${i}` },
      });
      assistantIds.push(made.json().id);
    }

    // ---- seed: calls, turns, events (one statement each), then the rollups by the backfill ------
    const seconds = (started: number) => Number(((performance.now() - started) / 1000).toFixed(1));
    const spacing = (365 * 86_400) / callCount;
    let started = performance.now();
    await database.executeSql(`
      insert into calls (organization_id, assistant_id, provider, call_sid, direction, from_phone_number,
        to_phone_number, customer_phone_number, status, call_meta, duration, cost, started_at, ended_at,
        created_at, updated_at)
      select ${org}, ('{${assistantIds.join(',')}}'::int[])[1 + (g % 20) % 10], 'carrier_a', 'CAbench' || g,
        case when g % 3 = 0 then 'inbound' else 'outbound' end, n, n, c, s,
        case when s = 'completed' and g % 20 = 0 then '{"answered_by": "machine"}' else '{}' end::jsonb,
        d, round(d * 0.05 / 60, 4), at, at + d * interval '1 second', at, at
      from generate_series(1, ${callCount}) g,
        lateral (select '+1415555' || lpad((g % 20)::text, 4, '0') as n, '+1646' || lpad(g::text, 7, '0') as c,
          case when g % 997 = 0 then 'in-progress'
               else (array['completed','completed','completed','completed','busy','no-answer','failed','canceled'])[1 + (g * 7) % 8] end as s,
          now() - (g * ${spacing}) * interval '1 second' as at) v,
        lateral (select case when v.s in ('completed', 'in-progress') then 5 + (g * 37) % 900 else 0 end as d) w`);
    const callsSeconds = seconds(started);
    started = performance.now();
    await database.executeSql(`
      insert into call_turns (organization_id, call_id, position, kind, started_at, user_text, assistant_text,
        interrupted, end_to_end_ms, endpointing_ms, stt_delay_ms, llm_ttft_ms, tts_ttfb_ms, platform_ms)
      select c.organization_id, c.id, p, case when p = 0 then 'greeting' else 'reply' end, c.created_at, '', '',
        (c.id + p) % 9 = 0,
        case when p > 0 then 500 + (c.id::bigint * 7919 + p * 104729) % 2500 end,
        case when p > 0 then 150 + (c.id * 31 + p) % 400 end,
        case when p > 0 then 80 + (c.id * 17 + p) % 300 end,
        case when p > 0 then 200 + (c.id * 13 + p * 7) % 900 end,
        100 + (c.id * 11 + p) % 300,
        case when p > 0 then (c.id + p) % 12 end
      from calls c, generate_series(0, 2) p where c.organization_id = ${org}`);
    const turnsSeconds = seconds(started);
    started = performance.now();
    await database.executeSql(`
      insert into call_events (organization_id, call_id, type, data)
      select organization_id, id, 'call.tool',
        jsonb_build_object('name', (array['lookup_order', 'book_slot', 'end_call'])[1 + id % 3], 'ok', id % 10 <> 0)
      from calls where organization_id = ${org} and id % 3 = 0
      union all
      select organization_id, id, 'call.transferred', '{"to": "+14155550100"}'::jsonb
      from calls where organization_id = ${org} and id % 20 = 0`);
    const eventsSeconds = seconds(started);
    started = performance.now();
    const backfill = readFileSync(MIGRATION, 'utf8')
      .split('--> statement-breakpoint')
      .filter((statement) => /^\s*(--.*\n)*\s*INSERT INTO/i.test(statement));
    for (const statement of backfill) await database.executeSql(statement);
    const backfillSeconds = seconds(started);
    // The backfill rewrites rows (turns, then transfers, into the calls' rows): vacuum as autovacuum would.
    for (const name of ['calls', 'call_turns', 'call_events', 'call_rollups', 'call_tool_rollups'])
      await database.executeSql(`vacuum analyze ${name}`);
    const { rows: sizes } = await database.executeSql(`
      select (select count(*)::int from calls) as calls, (select count(*)::int from call_turns) as turns,
        (select count(*)::int from call_events) as events, (select count(*)::int from call_rollups) as rollups,
        (select count(*)::int from call_rollups where hours = 24) as day_rollups,
        pg_size_pretty(pg_total_relation_size('calls')) as calls_size,
        pg_size_pretty(pg_total_relation_size('call_turns')) as turns_size,
        pg_size_pretty(pg_total_relation_size('call_rollups') + pg_total_relation_size('call_tool_rollups')) as rollups_size`);
    console.log(`${kind}: seeded`, sizes[0], {
      callsSeconds,
      turnsSeconds,
      eventsSeconds,
      backfillSeconds,
    });

    // ---- the endpoint beside count(*) and a naive scan of the same range ----------------------
    const today = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS);
    const dateOf = (daysBack: number) =>
      new Date(today.getTime() - daysBack * DAY_MS).toISOString().slice(0, 10);
    const cases = [
      { label: '30 days', days: 30, extra: '' },
      { label: '365 days', days: 365, extra: '' },
      { label: '365 days, one assistant', days: 365, extra: `&assistant_id=${assistantIds[3]}` },
      { label: '30 days, America/New_York', days: 30, extra: '&time_zone=America/New_York' },
      { label: '365 days, America/New_York', days: 365, extra: '&time_zone=America/New_York' },
    ];
    const rows: Array<Record<string, string | number>> = [];
    const headline: Record<string, number> = {};
    for (const each of cases) {
      const url = `/api/v1/calls/analytics?date_from=${dateOf(each.days - 1)}&date_to=${dateOf(0)}${each.extra}`;
      let body: { date_from: string; date_to: string; totals: { calls: number } } | undefined;
      const endpoint = await latencies(async () => {
        const response = await app.inject({ method: 'GET', url, headers: user.headers });
        if (response.statusCode !== 200) throw new Error(`${url}: ${response.body}`);
        body = response.json();
      }, repeats);
      const range = [org, body!.date_from, body!.date_to];
      const counted = await latencies(
        () =>
          database.executeSql(
            'select count(*) from calls where organization_id = $1 and created_at between $2 and $3',
            range,
          ),
        repeats,
      );
      const ratio = endpoint.p50 / counted.p50;
      headline[each.label] = ratio;
      rows.push(
        {
          query: `count(*) of the range's calls (baseline), ${each.label}`,
          calls: body!.totals.calls,
          'p50 ms': ms(counted.p50),
          'p95 ms': ms(counted.p95),
          'x count(*)': 1,
        },
        {
          query: `GET /calls/analytics, ${each.label}`,
          calls: body!.totals.calls,
          'p50 ms': ms(endpoint.p50),
          'p95 ms': ms(endpoint.p95),
          'x count(*)': Number(ratio.toFixed(2)),
        },
      );
      if (each.extra === '') {
        const naive = await latencies(
          () =>
            Promise.all([
              database.executeSql(
                `select status, count(*), sum(duration), percentile_cont(array[0.5, 0.95]) within group (order by duration),
                   sum(cost) from calls where organization_id = $1 and created_at >= $2 and created_at < $3 group by status`,
                range,
              ),
              database.executeSql(
                `select percentile_cont(array[0.5, 0.9, 0.95, 0.99]) within group (order by t.end_to_end_ms),
                   percentile_cont(array[0.5, 0.9, 0.95, 0.99]) within group (order by t.llm_ttft_ms),
                   percentile_cont(array[0.5, 0.9, 0.95, 0.99]) within group (order by t.tts_ttfb_ms)
                 from call_turns t join calls c on c.id = t.call_id
                 where c.organization_id = $1 and c.created_at >= $2 and c.created_at < $3 and t.kind = 'reply'`,
                range,
              ),
            ]),
          3,
        );
        rows.push({
          query: `naive scan of calls and turns (percentile_cont), ${each.label}`,
          calls: body!.totals.calls,
          'p50 ms': ms(naive.p50),
          'p95 ms': ms(naive.p95),
          'x count(*)': Number((naive.p50 / counted.p50).toFixed(2)),
        });
      }
    }
    console.log(`${kind}, ${callCount.toLocaleString('en')} calls, ${repeats} runs each:`);
    table(rows);
    console.log(
      `call-analytics (${kind}): 365 days ${headline['365 days']!.toFixed(2)}× count(*), ` +
        `30 days ${headline['30 days']!.toFixed(2)}× count(*)`,
    );
  } finally {
    await bench.close();
  }
}

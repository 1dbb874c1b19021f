/**
 * The call analytics against a naive full scan, on random calls made through the platform's write
 * paths (random outcomes, machines, durations, turns rewritten, tools failing, transfers, calls left
 * under way) and random ranges, time zones and filters: every count exact, every percentile within
 * the stated bucket error. Then migration 0015's backfill, run on the same history, rebuilds exactly
 * the rollups the write paths kept. The tests share one database, seeded once.
 */
import { readFileSync } from 'node:fs';
import { DateTime } from 'luxon';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CallStatus } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import {
  HISTOGRAM_BOUNDS,
  HISTOGRAM_SIZE,
  PERCENTILE_RELATIVE_ERROR,
} from '../src/domains/calls/histogram.js';
import { HISTOGRAMS } from '../src/domains/calls/rollups.js';
import { exactPercentile, makeCall, naiveAnalytics, type OurNumber } from './support/call-analytics-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform();
const SEED = Number(process.env.ANALYTICS_SEED ?? 19);
const MIGRATION = new URL('../src/db/migrations/0015_call_analytics_rollups.sql', import.meta.url);
/** Whole-hour offsets all (the rollups' grain), with and without summer time, both sides of UTC. */
const ZONES = [
  'UTC',
  'America/New_York',
  'Asia/Tokyo',
  'Europe/Berlin',
  'Pacific/Auckland',
  'America/Sao_Paulo',
];
const STATUSES: Array<CallStatus | undefined> = [
  undefined,
  'completed',
  'completed',
  'busy',
  'no-answer',
  'failed',
  'canceled',
];
const TOOLS = ['lookup_order', 'book_slot', 'end_call'];

/** mulberry32: a small seeded generator, so a failure can be replayed with ANALYTICS_SEED. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!,
    chance: (p: number) => next() < p,
    /** Log-uniform milliseconds from 1 to 20 s, sometimes 0 or absent. */
    ms: (): number | null => {
      const roll = next();
      if (roll < 0.1) return null;
      if (roll < 0.15) return 0;
      return Math.round(Math.exp(next() * Math.log(20_000)));
    },
  };
}

let owner: TestUser;
let numbers: OurNumber[];
let assistants: number[];

beforeAll(async () => {
  const f = new Factories(t);
  const org = await f.carrierOrganization({ assistantName: 'One' });
  owner = org.admin;
  const two = await f.assistant(owner, 'Two');
  assistants = [org.assistantId, two];
  numbers = [{ id: org.numberId, phoneNumber: org.number, assistantId: org.assistantId }];
  for (const [index, assistantId] of [two, org.assistantId].entries()) {
    const phoneNumber = `+1415777${String((org.numberId * 3 + index) % 10_000).padStart(4, '0')}`;
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: owner.headers,
      payload: { phone_number: phoneNumber, provider: 'carrier_a', assistant_id: assistantId },
    });
    expect(response.statusCode, response.body).toBe(201);
    numbers.push({ id: response.json().id, phoneNumber, assistantId });
  }

  const random = generator(SEED);
  const start = Date.parse('2026-05-01T00:00:00Z');
  for (let i = 0; i < 45; i++) {
    const number = random.pick(numbers);
    const direction = random.chance(0.3) ? 'inbound' : 'outbound';
    const final = random.pick(STATUSES);
    const turns = Array.from({ length: random.int(0, 4) }, (_, position) => ({
      position,
      kind: random.pick(['reply', 'reply', 'reply', 'greeting', 'idle'] as const),
      interrupted: random.chance(0.2),
      measurements: {
        endToEndMs: random.ms(),
        endpointingMs: random.ms(),
        sttDelayMs: random.ms(),
        llmTtftMs: random.ms(),
        ttsTtfbMs: random.ms(),
        platformMs: random.ms(),
      },
    }));
    const events = Array.from({ length: random.int(0, 3) }, () => {
      const roll = random.next();
      if (roll < 0.15) return { type: 'call.transferred', data: { to: '+14155550100' } };
      if (roll < 0.25) return { type: 'call.dtmf', data: { digit: '5' } };
      const ok = random.pick([true, false, undefined]);
      return { type: 'call.tool', data: { name: random.pick(TOOLS), ...(ok === undefined ? {} : { ok }) } };
    });
    const id = await makeCall(t, owner.organizationId, {
      number,
      ...(direction === 'outbound' && random.chance(0.3) ? { assistantId: random.pick(assistants) } : {}),
      direction,
      createdAt: new Date(start + random.int(0, 9 * 24 * 3_600_000)),
      ...(final ? { final } : {}),
      ...(final && final !== 'failed' ? { durationSeconds: random.int(0, 4000) } : {}),
      ...(final === 'completed' && random.chance(0.25) ? { answeredBy: 'machine' as const } : {}),
      turns,
      events,
    });
    // Some turns are written again, with other figures (a retried write).
    for (const turn of turns) {
      if (!random.chance(0.15)) continue;
      await t.platform.services.callRecords.recordTurn(new Tenant(owner.organizationId), id, {
        ...turn,
        interrupted: !turn.interrupted,
        measurements: { ...turn.measurements, endToEndMs: random.ms(), llmTtftMs: random.ms() },
        startedAt: new Date(),
        userText: 'again',
        assistantText: 'again',
        llmProvider: null,
        marks: {},
      });
    }
  }
});

function expectWithinError(actual: number | null, exact: number | null, what: string): void {
  if (exact === null) {
    expect(actual, what).toBeNull();
    return;
  }
  expect(actual, what).not.toBeNull();
  expect(Math.abs(actual! - exact), `${what}: ${actual} for ${exact}`).toBeLessThanOrEqual(
    PERCENTILE_RELATIVE_ERROR * exact + 1e-9,
  );
}

describe('the analytics equal a naive scan', () => {
  it('on random ranges, time zones and filters', async () => {
    const random = generator(SEED + 1);
    for (let round = 0; round < 16; round++) {
      const timeZone = random.pick(ZONES);
      const first = DateTime.fromISO('2026-04-29', { zone: timeZone }).plus({ days: random.int(0, 10) });
      const last = first.plus({ days: random.int(0, 6) });
      const timestamps = random.chance(0.25);
      const dateFrom = timestamps
        ? first
            .plus({ hours: random.int(0, 23) })
            .toUTC()
            .toISO()!
        : first.toISODate()!;
      const dateTo = timestamps
        ? last
            .plus({ hours: random.int(0, 23) })
            .toUTC()
            .toISO()!
        : last.toISODate()!;
      const filter = random.pick(['none', 'assistant', 'number'] as const);
      const assistantId = filter === 'assistant' ? random.pick(assistants) : undefined;
      const phoneNumber = filter === 'number' ? random.pick(numbers).phoneNumber : undefined;
      const query = new URLSearchParams({ date_from: dateFrom, date_to: dateTo, time_zone: timeZone });
      if (assistantId) query.set('assistant_id', String(assistantId));
      if (phoneNumber) query.set('phone_number', phoneNumber);
      const response = await t.app.inject({
        method: 'GET',
        url: `/api/v1/calls/analytics?${query}`,
        headers: owner.headers,
      });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      const what = `round ${round} (${query})`;
      const naive = await naiveAnalytics(t, owner.organizationId, {
        from: new Date(body.date_from),
        to: new Date(body.date_to),
        timeZone,
        ...(assistantId ? { assistantId } : {}),
        ...(phoneNumber ? { phoneNumber } : {}),
      });

      expect(body.totals, what).toMatchObject({
        calls: naive.calls,
        answered: naive.answered,
        completed: naive.byStatus.completed,
        by_status: naive.byStatus,
        inbound: naive.inbound,
        outbound: naive.outbound,
      });
      expect(body.totals.duration_seconds.total, what).toBe(naive.durationTotal);
      expect(body.totals.cost, what).toBeCloseTo(naive.cost, 4);
      expectWithinError(
        body.totals.duration_seconds.p50,
        exactPercentile(naive.durations, 0.5),
        `${what} p50`,
      );
      expectWithinError(
        body.totals.duration_seconds.p95,
        exactPercentile(naive.durations, 0.95),
        `${what} p95`,
      );
      expect(body.transfers.count, what).toBe(naive.transfers);
      expect(body.interruptions, what).toMatchObject({ count: naive.interrupted, turns: naive.turns });
      expect(
        Object.fromEntries(
          body.tool_use.map((tool: { name: string; calls: number; failures: number }) => [
            tool.name,
            { calls: tool.calls, failures: tool.failures },
          ]),
        ),
        what,
      ).toEqual(Object.fromEntries(naive.tools));
      for (const [name, values] of Object.entries(naive.latency)) {
        const figures = body.latency[name];
        expect(figures.turns, `${what} ${name}`).toBe(values.length);
        for (const p of [50, 90, 95, 99])
          expectWithinError(figures[`p${p}`], exactPercentile(values, p / 100), `${what} ${name} p${p}`);
      }
      const days = body.per_day.map((day: { date: string }) => day.date);
      expect(days[0], what).toBe(first.toISODate());
      expect(days.at(-1), what).toBe(last.toISODate());
      for (const day of body.per_day) {
        const expected = naive.perDay.get(day.date) ?? { calls: 0, completed: 0, answered: 0, duration: 0 };
        expect(
          {
            calls: day.calls,
            completed: day.completed,
            answered: day.answered,
            duration: day.duration_seconds,
          },
          `${what} ${day.date}`,
        ).toEqual(expected);
      }
      expect(
        [...naive.perDay.keys()].every((date) => days.includes(date)),
        what,
      ).toBe(true);
      // Each assistant's part is what a scan of that assistant's calls finds.
      for (const part of body.by_assistant) {
        if (assistantId !== undefined) expect(part.assistant_id).toBe(assistantId);
        const own = await naiveAnalytics(t, owner.organizationId, {
          from: new Date(body.date_from),
          to: new Date(body.date_to),
          timeZone,
          assistantId: part.assistant_id,
          ...(phoneNumber ? { phoneNumber } : {}),
        });
        expect({ calls: part.calls, answered: part.answered, transfers: part.transfers }, what).toEqual({
          calls: own.calls,
          answered: own.answered,
          transfers: own.transfers,
        });
        expectWithinError(
          part.end_to_end_ms.p95,
          exactPercentile(own.latency.end_to_end_ms, 0.95),
          `${what} assistant ${part.assistant_id}`,
        );
      }
      expect(body.by_number.reduce((sum: number, part: { calls: number }) => sum + part.calls, 0)).toBe(
        naive.calls,
      );
    }
  });
});

describe('migration 0015', () => {
  it('bins with the same bounds as the code', () => {
    const text = readFileSync(MIGRATION, 'utf8');
    const literals = [...text.matchAll(/width_bucket\([^,]+, '\{([\d,]+)\}'::int\[\]\)/g)].map((m) => m[1]);
    expect(literals.length).toBeGreaterThanOrEqual(2);
    for (const literal of literals) expect(literal).toBe(HISTOGRAM_BOUNDS.join(','));
  });

  it('backfills exactly the rollups the write paths kept', async () => {
    // Histograms compared bucket by bucket: a rewrite may leave a counted-out bucket at 0 inside
    // the stored span where the backfill, seeing the final turns only, stores a narrower one.
    const dense = Object.values(HISTOGRAMS)
      .map(
        (column) =>
          `array(select coalesce(${column}[i], 0) from generate_series(1, ${HISTOGRAM_SIZE}) i) as ${column}`,
      )
      .join(', ');
    const snapshot = async () => ({
      calls: (
        await t.database.executeSql(
          `select organization_id, hours, period_start, assistant_id, phone_number, calls, completed, voicemail, busy,
             no_answer, failed, canceled, inbound, outbound, duration_seconds, cost, transfers, turns, interrupted_turns, ${dense}
           from call_rollups order by organization_id, hours, period_start, assistant_id, phone_number`,
        )
      ).rows,
      tools: (
        await t.database.executeSql(
          'select * from call_tool_rollups order by organization_id, hours, period_start, assistant_id, phone_number, tool',
        )
      ).rows,
    });
    const kept = await snapshot();
    expect(kept.calls.length).toBeGreaterThan(20);
    expect(kept.tools.length).toBeGreaterThan(5);
    const backfill = readFileSync(MIGRATION, 'utf8')
      .split('--> statement-breakpoint')
      .filter((statement) => /^\s*(--.*\n)*\s*INSERT INTO/i.test(statement));
    expect(backfill).toHaveLength(4);
    await t.database.executeSql('delete from call_rollups; delete from call_tool_rollups');
    for (const statement of backfill) await t.database.executeSql(statement);
    expect(await snapshot()).toEqual(kept);
  });
});

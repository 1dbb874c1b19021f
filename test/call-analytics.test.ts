/**
 * GET /api/v1/calls/analytics on a small known set of calls made through the platform's own write
 * paths (records, carrier statuses, turns, events): every figure, per day in two time zones, per
 * assistant and number, the filters; bad input; who may see what. Then the rollups under carrier
 * callbacks that repeat or arrive out of order, and turns written twice. The tests share one
 * database and the calls seeded once (the later tests add calls on days of their own).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketOf, bucketValue } from '../src/domains/calls/histogram.js';
import { expectError, expectValidation } from './support/assertions.js';
import { makeCall, type OurNumber } from './support/call-analytics-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform();
let f: Factories;
let owner: TestUser;
let stranger: TestUser;
let n1: OurNumber;
let n2: OurNumber;
let strangerNumber: OurNumber;
const costs: number[] = [];

const reply = (position: number, endToEndMs: number, interrupted = false) => ({
  position,
  kind: 'reply' as const,
  interrupted,
  measurements: {
    endToEndMs,
    endpointingMs: 200,
    sttDelayMs: 100 + position,
    llmTtftMs: 300 + position,
    ttsTtfbMs: 150,
    platformMs: 5,
  },
});
const greeting = {
  position: 0,
  kind: 'greeting' as const,
  interrupted: false,
  measurements: {
    endToEndMs: null,
    endpointingMs: null,
    sttDelayMs: null,
    llmTtftMs: null,
    ttsTtfbMs: 120,
    platformMs: null,
  },
};

function analytics(query: string, headers: Record<string, string> = owner.headers) {
  return t.app.inject({ method: 'GET', url: `/api/v1/calls/analytics?${query}`, headers });
}

async function ok(query: string, headers?: Record<string, string>) {
  const response = await analytics(query, headers);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** What a percentile reads as for a value: its bucket's value. */
const read = (value: number) => bucketValue(bucketOf(value));

async function addNumber(user: TestUser, assistantId: number, phoneNumber: string): Promise<OurNumber> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: user.headers,
    payload: { phone_number: phoneNumber, provider: 'carrier_a', assistant_id: assistantId },
  });
  expect(response.statusCode, response.body).toBe(201);
  return { id: response.json().id, phoneNumber, assistantId };
}

beforeAll(async () => {
  f = new Factories(t);
  const org = await f.carrierOrganization({ assistantName: 'Front desk' });
  owner = org.admin;
  n1 = { id: org.numberId, phoneNumber: org.number, assistantId: org.assistantId };
  const second = await f.assistant(owner, 'Billing');
  n2 = await addNumber(owner, second, `+1415888${String(org.numberId % 10_000).padStart(4, '0')}`);
  const other = await f.carrierOrganization({ assistantName: 'Theirs' });
  stranger = other.admin;
  strangerNumber = { id: other.numberId, phoneNumber: other.number, assistantId: other.assistantId };

  const orgId = owner.organizationId;
  const made = [
    await makeCall(t, orgId, {
      number: n1,
      direction: 'outbound',
      createdAt: new Date('2026-03-10T09:15:00Z'),
      final: 'completed',
      durationSeconds: 120,
      turns: [greeting, reply(1, 800), reply(2, 1200, true)],
      events: [
        { type: 'call.tool', data: { name: 'end_call' } },
        { type: 'call.tool', data: { name: 'lookup_order', ok: false } },
        { type: 'call.vendor_fallback', data: { kind: 'tts' } },
      ],
    }),
    await makeCall(t, orgId, {
      number: n1,
      direction: 'outbound',
      createdAt: new Date('2026-03-10T23:30:00Z'),
      final: 'completed',
      durationSeconds: 30,
      answeredBy: 'machine',
    }),
    await makeCall(t, orgId, {
      number: n2,
      direction: 'inbound',
      createdAt: new Date('2026-03-11T02:00:00Z'),
      final: 'completed',
      durationSeconds: 60,
      turns: [reply(1, 1000)],
      events: [
        { type: 'call.tool', data: { name: 'transfer_call', to: '+14155550100' } },
        { type: 'call.transferred', data: { to: '+14155550100' } },
      ],
    }),
    await makeCall(t, orgId, {
      number: n2,
      direction: 'outbound',
      createdAt: new Date('2026-03-11T10:00:00Z'),
      final: 'busy',
    }),
    await makeCall(t, orgId, {
      number: n1,
      direction: 'outbound',
      createdAt: new Date('2026-03-12T12:00:00Z'),
      final: 'failed',
    }),
  ];
  // Under way: its turn counts, the call does not (yet).
  await makeCall(t, orgId, {
    number: n1,
    assistantId: n2.assistantId,
    direction: 'outbound',
    createdAt: new Date('2026-03-12T13:00:00Z'),
    turns: [reply(1, 700)],
  });
  // Outside the range, and another organization's call inside it.
  await makeCall(t, orgId, {
    number: n1,
    direction: 'outbound',
    createdAt: new Date('2026-03-20T09:00:00Z'),
    final: 'completed',
    durationSeconds: 10,
  });
  await makeCall(t, stranger.organizationId, {
    number: strangerNumber,
    direction: 'outbound',
    createdAt: new Date('2026-03-10T12:00:00Z'),
    final: 'completed',
    durationSeconds: 500,
    events: [{ type: 'call.tool', data: { name: 'their_tool' } }],
  });
  for (const id of made) {
    const call = await t.app.inject({ method: 'GET', url: `/api/v1/calls/${id}`, headers: owner.headers });
    costs.push(call.json().cost ?? 0);
  }
});

describe('GET /api/v1/calls/analytics', () => {
  it('adds up the calls of the range: outcomes, durations, cost, transfers, tools, turns', async () => {
    const body = await ok('date_from=2026-03-10&date_to=2026-03-12');
    expect(body.date_from).toBe('2026-03-10T00:00:00.000Z');
    expect(body.date_to).toBe('2026-03-13T00:00:00.000Z');
    expect(body.time_zone).toBe('UTC');
    expect(body.totals).toEqual({
      calls: 5,
      answered: 3,
      completed: 2,
      by_status: { completed: 2, voicemail: 1, busy: 1, 'no-answer': 0, failed: 1, canceled: 0 },
      inbound: 1,
      outbound: 4,
      duration_seconds: { total: 210, avg: 70, p50: read(60), p95: read(120) },
      cost: Number(costs.reduce((a, b) => a + b, 0).toFixed(4)),
    });
    expect(body.totals.cost).toBeGreaterThan(0);
    expect(body.transfers).toEqual({ count: 1, rate: 0.2 });
    expect(body.tool_use).toEqual([
      { name: 'end_call', calls: 1, failures: 0 },
      { name: 'lookup_order', calls: 1, failures: 1 },
      { name: 'transfer_call', calls: 1, failures: 0 },
    ]);
    // Turns of the call under way count: 3 + 1 + 1, one interrupted.
    expect(body.interruptions).toEqual({ count: 1, turns: 5, rate: 0.2 });
    expect(body.latency.end_to_end_ms).toEqual({
      turns: 4,
      p50: read(800),
      p90: read(1200),
      p95: read(1200),
      p99: read(1200),
    });
    expect(body.latency.tts_ttfb_ms.turns).toBe(4); // the greeting's TTS is not a reply turn's
    expect(body.latency.llm_ttft_ms.p50).toBe(read(301));
    expect(body.latency.platform_ms).toEqual({ turns: 4, p50: 5, p90: 5, p95: 5, p99: 5 });
    expect(body.percentile_relative_error).toBeCloseTo(0.0905, 4);
  });

  it('lists every day of the range, zeros included, in the time zone asked', async () => {
    const utc = await ok('date_from=2026-03-09&date_to=2026-03-13');
    expect(utc.per_day.map((d: { date: string; calls: number }) => [d.date, d.calls])).toEqual([
      ['2026-03-09', 0],
      ['2026-03-10', 2],
      ['2026-03-11', 2],
      ['2026-03-12', 1],
      ['2026-03-13', 0],
    ]);
    expect(utc.per_day[1]).toMatchObject({ answered: 2, completed: 1, duration_seconds: 150, transfers: 0 });
    expect(utc.per_day[2]).toMatchObject({ answered: 1, completed: 1, duration_seconds: 60, transfers: 1 });
    expect(utc.per_day[0]).toEqual({
      date: '2026-03-09',
      calls: 0,
      answered: 0,
      completed: 0,
      by_status: { completed: 0, voicemail: 0, busy: 0, 'no-answer': 0, failed: 0, canceled: 0 },
      inbound: 0,
      outbound: 0,
      duration_seconds: 0,
      cost: 0,
      transfers: 0,
    });
    // New York is UTC-4 after 8 March 2026: the inbound call of 02:00 UTC on the 11th was on the 10th there.
    const ny = await ok('date_from=2026-03-10&date_to=2026-03-12&time_zone=America/New_York');
    expect(ny.date_from).toBe('2026-03-10T04:00:00.000Z');
    expect(ny.date_to).toBe('2026-03-13T04:00:00.000Z');
    expect(ny.per_day.map((d: { date: string; calls: number }) => [d.date, d.calls])).toEqual([
      ['2026-03-10', 3],
      ['2026-03-11', 1],
      ['2026-03-12', 1],
    ]);
    expect(ny.totals.calls).toBe(5);
  });

  it('takes timestamps: the hours they fall in bound the range', async () => {
    const body = await ok(
      `date_from=${encodeURIComponent('2026-03-10T09:59:00Z')}&date_to=2026-03-11T01:00:00Z`,
    );
    expect(body.date_from).toBe('2026-03-10T09:00:00.000Z');
    expect(body.date_to).toBe('2026-03-11T02:00:00.000Z');
    expect(body.totals.calls).toBe(2); // 09:15 and 23:30 on the 10th; not 02:00 on the 11th
    expect(body.per_day.map((d: { date: string }) => d.date)).toEqual(['2026-03-10', '2026-03-11']);
  });

  it('breaks the figures down per assistant and per number, and filters by either', async () => {
    const body = await ok('date_from=2026-03-10&date_to=2026-03-12');
    const assistants = body.by_assistant.map((a: Record<string, unknown>) => [
      a.assistant_id,
      a.assistant_name,
      a.calls,
      a.answered,
      a.transfers,
    ]);
    expect(assistants).toEqual([
      [n1.assistantId, 'Front desk', 3, 2, 0],
      [n2.assistantId, 'Billing', 2, 1, 1],
    ]);
    const second = body.by_assistant[1];
    expect(second.end_to_end_ms).toEqual({ p50: read(700), p95: read(1000) });
    expect(second.duration_seconds).toEqual({ total: 60, avg: 60, p50: read(60), p95: read(60) });
    expect(body.by_number.map((n: Record<string, unknown>) => [n.phone_number, n.calls, n.inbound])).toEqual([
      [n1.phoneNumber, 3, 0],
      [n2.phoneNumber, 2, 1],
    ]);

    const billing = await ok(`date_from=2026-03-10&date_to=2026-03-12&assistant_id=${n2.assistantId}`);
    expect(billing.totals.calls).toBe(2);
    expect(billing.by_assistant).toHaveLength(1);
    expect(billing.tool_use).toEqual([{ name: 'transfer_call', calls: 1, failures: 0 }]);
    expect(billing.latency.end_to_end_ms.turns).toBe(2); // its inbound call and the call under way

    const number = await ok(
      `date_from=2026-03-10&date_to=2026-03-12&phone_number=${encodeURIComponent(n1.phoneNumber)}`,
    );
    expect(number.totals.calls).toBe(3);
    expect(number.by_number.map((n: { phone_number: string }) => n.phone_number)).toEqual([n1.phoneNumber]);
    expect(number.by_assistant.map((a: { assistant_id: number }) => a.assistant_id)).toEqual([
      n1.assistantId,
      n2.assistantId, // the call under way on n1 with the other assistant: turns only
    ]);
  });

  it('defaults to the last 30 days in UTC', async () => {
    const body = await ok('');
    expect(body.per_day).toHaveLength(30);
    expect(body.per_day.at(-1).date).toBe(new Date().toISOString().slice(0, 10));
    expect(body.time_zone).toBe('UTC');
  });

  it('allows 366 days and refuses 367', async () => {
    expect((await ok('date_from=2025-03-13&date_to=2026-03-13')).per_day).toHaveLength(366);
    expectValidation(await analytics('date_from=2025-03-12&date_to=2026-03-13'), ['query', 'date_from']);
  });
});

describe('bad input', () => {
  it('answers 422 naming the parameter', async () => {
    expectValidation(await analytics('date_from=yesterday'), ['query', 'date_from']);
    expectValidation(await analytics('date_from=2026-13-40'), ['query', 'date_from']);
    expectValidation(await analytics('date_to=2026-02-30'), ['query', 'date_to']);
    expectValidation(await analytics('date_to=2026-03-10T25:00:00Z'), ['query', 'date_to']);
    expectValidation(await analytics('date_from=2026-03-12&date_to=2026-03-10'), ['query', 'date_to']);
    expectValidation(
      await analytics(`date_from=${'9'.repeat(41)}`),
      ['query', 'date_from'],
      'string_too_long',
    );
    expectValidation(await analytics('time_zone=Mars/Olympus_Mons'), ['query', 'time_zone']);
    expectValidation(await analytics('time_zone='), ['query', 'time_zone']);
    expectValidation(await analytics('assistant_id=0'), ['query', 'assistant_id']);
    expectValidation(await analytics('assistant_id=abc'), ['query', 'assistant_id']);
    expectValidation(await analytics('assistant_id=99999999999'), ['query', 'assistant_id']);
    expectValidation(await analytics('phone_number=12'), ['query', 'phone_number']);
  });
});

describe('who may see what', () => {
  it('refuses without credentials and to API keys without the calls area', async () => {
    expectError(await analytics('', {}), 401);
    const key = await f.apiKey(owner, { permissions: { assistants: 'read_write' } });
    expectError(await analytics('', key.headers), 403);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expect(
      (await analytics('date_from=2026-03-10&date_to=2026-03-12', reader.headers)).json().totals.calls,
    ).toBe(5);
  });

  it("never counts another organization's calls, whatever ids it is asked about", async () => {
    const mine = await ok(
      `date_from=2026-03-10&date_to=2026-03-12&assistant_id=${strangerNumber.assistantId}`,
    );
    expect(mine.totals.calls).toBe(0);
    expect(mine.tool_use).toEqual([]);
    const byNumber = await ok(
      `date_from=2026-03-10&date_to=2026-03-12&phone_number=${encodeURIComponent(strangerNumber.phoneNumber)}`,
    );
    expect(byNumber.totals.calls).toBe(0);
    const theirs = await ok(
      `date_from=2026-03-10&date_to=2026-03-12&assistant_id=${n1.assistantId}`,
      stranger.headers,
    );
    expect(theirs.totals.calls).toBe(0);
    const own = await ok('date_from=2026-03-10&date_to=2026-03-12', stranger.headers);
    expect(own.totals).toMatchObject({ calls: 1, duration_seconds: { total: 500, avg: 500 } });
    expect(own.tool_use).toEqual([{ name: 'their_tool', calls: 1, failures: 0 }]);
    expect(own.by_assistant.map((a: { assistant_id: number }) => a.assistant_id)).toEqual([
      strangerNumber.assistantId,
    ]);
  });
});

describe('the rollups as calls change', () => {
  it('count a call once, however its final status arrives', async () => {
    const orgId = owner.organizationId;
    const { calls } = t.platform.services;
    const id = await makeCall(t, orgId, {
      number: n1,
      direction: 'outbound',
      createdAt: new Date('2026-04-01T10:00:00Z'),
      final: 'completed',
      durationSeconds: 42,
    });
    const sid = `CAanalytics${process.pid}x`;
    const { call_sid: callSid } = (
      await t.database.executeSql('select call_sid from calls where id = $1', [id])
    ).rows[0] as { call_sid: string };
    // The carrier repeats its final callback, and a late "in-progress" arrives after it.
    const status = (s: 'completed' | 'in-progress' | 'busy', durationSeconds?: number) =>
      calls.applyStatus(orgId, id, {
        kind: 'call_status',
        callSid: callSid ?? sid,
        status: s,
        ...(durationSeconds !== undefined ? { durationSeconds } : {}),
      });
    expect(await status('completed', 42)).toBeUndefined();
    expect(await status('in-progress')).toBeUndefined();
    expect(await status('busy', 0)).toBeUndefined();
    // Concurrent repeats of a final callback for a new call: one is applied.
    const racing = await makeCall(t, orgId, {
      number: n2,
      direction: 'inbound',
      createdAt: new Date('2026-04-01T11:00:00Z'),
    });
    const racingSid = (
      (await t.database.executeSql('select call_sid from calls where id = $1', [racing])).rows[0] as {
        call_sid: string;
      }
    ).call_sid;
    await Promise.all(
      [1, 2, 3].map(() =>
        calls.applyStatus(orgId, racing, {
          kind: 'call_status',
          callSid: racingSid,
          status: 'completed',
          durationSeconds: 9,
        }),
      ),
    );
    const body = await ok('date_from=2026-04-01&date_to=2026-04-01');
    expect(body.totals).toMatchObject({
      calls: 2,
      completed: 2,
      by_status: { completed: 2, busy: 0 },
      duration_seconds: { total: 51 },
    });
  });

  it('replace the figures of a turn written again', async () => {
    const orgId = owner.organizationId;
    const id = await makeCall(t, orgId, {
      number: n1,
      direction: 'outbound',
      createdAt: new Date('2026-04-02T10:00:00Z'),
      turns: [reply(1, 900, true), reply(2, 400)],
    });
    const { Tenant } = await import('../src/db/tenant.js');
    const records = t.platform.services.callRecords;
    const again = { startedAt: new Date(), userText: 'q', assistantText: 'a', llmProvider: null, marks: {} };
    // A retried write of turn 1, now not interrupted and slower; turn 2 written twice alike, at once.
    await records.recordTurn(new Tenant(orgId), id, { ...reply(1, 3000), ...again });
    await Promise.all(
      [1, 2].map(() => records.recordTurn(new Tenant(orgId), id, { ...reply(2, 400), ...again })),
    );
    const body = await ok('date_from=2026-04-02&date_to=2026-04-02');
    expect(body.interruptions).toEqual({ count: 0, turns: 2, rate: 0 });
    expect(body.latency.end_to_end_ms).toMatchObject({ turns: 2, p50: read(400), p99: read(3000) });
  });
});

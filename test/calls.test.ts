/**
 * Call records: GET /api/v1/calls (filters, paging, X-Total-Count), GET /api/v1/calls/{id},
 * its transcript (and the store function the runtime appends with), and POST …/end against the
 * carrier_a simulator. Each with bad input and who may see what.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { ValidationFailed } from '../src/domains/errors.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { expectError, expectValidation } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const sim = new CarrierASimulator();
let t: TestPlatform;
let f: Factories;

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true });
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

function get(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url, headers });
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

describe('GET /api/v1/calls', () => {
  let owner: TestUser;
  let sales: number;
  let support: number;
  const ids: number[] = [];

  beforeAll(async () => {
    owner = await f.user();
    sales = await f.assistant(owner, 'Sales');
    support = await f.assistant(owner, 'Support');
    // Oldest first: created 50, 40, 30, 20, 10 minutes ago.
    const plan = [
      { assistantId: sales, status: 'completed' as const },
      { assistantId: support, status: 'busy' as const },
      { assistantId: sales, status: 'completed' as const },
      { assistantId: support, status: 'no-answer' as const },
      { assistantId: sales, status: 'failed' as const },
    ];
    for (const [index, call] of plan.entries())
      ids.push(
        (
          await seedCall(t.database, owner.organizationId, {
            ...call,
            createdAt: minutesAgo(50 - index * 10),
          })
        ).id,
      );
    // Another organization's call is never listed.
    const other = await f.user();
    await seedCall(t.database, other.organizationId, { status: 'completed' });
  });

  it('lists the organization’s calls newest first with the total in X-Total-Count', async () => {
    const response = await get('/api/v1/calls', owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['x-total-count']).toBe('5');
    const body = response.json();
    expect(body.map((call: { id: number }) => call.id)).toEqual([...ids].reverse());
    expect(Object.keys(body[0]).sort()).toEqual(
      [
        'assistant_id',
        'call_meta',
        'call_sid',
        'campaign_id',
        'cost',
        'created_at',
        'customer_phone_number',
        'direction',
        'duration',
        'ended_at',
        'from_phone_number',
        'graph_session_id',
        'id',
        'started_at',
        'status',
        'to_phone_number',
        'updated_at',
      ].sort(),
    );
    expect(body[0]).toMatchObject({
      assistant_id: sales,
      status: 'failed',
      direction: 'outbound',
      duration: 30,
    });
  });

  it('pages with skip and limit; the total stays the whole count', async () => {
    const response = await get('/api/v1/calls?skip=1&limit=2', owner.headers);
    expect(response.headers['x-total-count']).toBe('5');
    expect(response.json().map((call: { id: number }) => call.id)).toEqual([ids[3], ids[2]]);
    const beyond = await get('/api/v1/calls?skip=10', owner.headers);
    expect(beyond.json()).toEqual([]);
    expect(beyond.headers['x-total-count']).toBe('5');
  });

  it('filters by status, assistant and creation dates (inclusive), together', async () => {
    const byStatus = await get('/api/v1/calls?status=completed', owner.headers);
    expect(byStatus.json().map((call: { id: number }) => call.id)).toEqual([ids[2], ids[0]]);
    expect(byStatus.headers['x-total-count']).toBe('2');
    const byAssistant = await get(`/api/v1/calls?assistant_id=${support}`, owner.headers);
    expect(byAssistant.json().map((call: { id: number }) => call.id)).toEqual([ids[3], ids[1]]);

    const [from, to] = [minutesAgo(45), minutesAgo(15)].map((date) => encodeURIComponent(date.toISOString()));
    const range = await get(`/api/v1/calls?date_from=${from}&date_to=${to}`, owner.headers);
    expect(range.json().map((call: { id: number }) => call.id)).toEqual([ids[3], ids[2], ids[1]]);
    const all = await get(
      `/api/v1/calls?date_from=${from}&date_to=${to}&assistant_id=${sales}&status=completed`,
      owner.headers,
    );
    expect(all.json().map((call: { id: number }) => call.id)).toEqual([ids[2]]);
    expect(all.headers['x-total-count']).toBe('1');
  });

  it('answers 422 with the validation body for each invalid parameter', async () => {
    const cases: Array<[string, string]> = [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['skip=-1', 'skip'],
      ['status=hung-up', 'status'],
      ['assistant_id=abc', 'assistant_id'],
      ['assistant_id=0', 'assistant_id'],
      ['date_from=yesterday', 'date_from'],
      ['date_to=2026-13-01T00:00:00Z', 'date_to'],
      ['date_from=2026-02-01T00:00:00Z&date_to=2026-01-01T00:00:00Z', 'date_to'],
    ];
    for (const [query, field] of cases)
      expectValidation(await get(`/api/v1/calls?${query}`, owner.headers), ['query', field]);
  });

  it('refuses without credentials and to API keys without the calls area', async () => {
    expectError(await get('/api/v1/calls'), 401);
    const smsOnly = await f.apiKey(owner, { permissions: { sms: 'read_write' } });
    expectError(await get('/api/v1/calls', smsOnly.headers), 403);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    const allowed = await get('/api/v1/calls', reader.headers);
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['x-total-count']).toBe('5');
  });

  it('shows members of the organization its calls, and an empty list to another organization', async () => {
    const member = await f.member(owner.organizationId, 'user');
    expect((await get('/api/v1/calls', member.headers)).headers['x-total-count']).toBe('5');
    const stranger = await f.user();
    const theirs = await get(`/api/v1/calls?assistant_id=${sales}`, stranger.headers);
    expect(theirs.json()).toEqual([]);
    expect(theirs.headers['x-total-count']).toBe('0');
  });
});

describe('GET /api/v1/calls/{id} and its transcript', () => {
  it('answers one call with call_meta, cost and timestamps', async () => {
    const owner = await f.user();
    const started = new Date('2026-11-20T10:00:00.000Z');
    const call = await seedCall(t.database, owner.organizationId, {
      direction: 'inbound',
      customer: '+12125550123',
      from: '+14155550199',
      status: 'completed',
      duration: 95,
      startedAt: started,
      endedAt: new Date(started.getTime() + 95_000),
      callMeta: { answered_by: 'human', variables: { name: 'Ada' } },
    });
    const response = await get(`/api/v1/calls/${call.id}`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      id: call.id,
      direction: 'inbound',
      from_phone_number: '+12125550123',
      to_phone_number: '+14155550199',
      customer_phone_number: '+12125550123',
      status: 'completed',
      call_meta: { answered_by: 'human', variables: { name: 'Ada' } },
      duration: 95,
      cost: null,
      started_at: '2026-11-20T10:00:00.000Z',
      ended_at: '2026-11-20T10:01:35.000Z',
      campaign_id: null,
      graph_session_id: null,
    });
  });

  it('answers the transcript in spoken order', async () => {
    const owner = await f.user();
    const call = await seedCall(t.database, owner.organizationId, {
      startedAt: new Date('2026-11-20T10:00:00.000Z'),
      transcript: [
        ['assistant', 'Hello, how can I help?'],
        ['user', 'I would like a refund.'],
        ['assistant', 'Of course.'],
      ],
    });
    const response = await get(`/api/v1/calls/${call.id}/transcript`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual([
      {
        speaker: 'assistant',
        text: 'Hello, how can I help?',
        started_at: '2026-11-20T10:00:00.000Z',
        ended_at: '2026-11-20T10:00:01.900Z',
      },
      {
        speaker: 'user',
        text: 'I would like a refund.',
        started_at: '2026-11-20T10:00:02.000Z',
        ended_at: '2026-11-20T10:00:03.900Z',
      },
      {
        speaker: 'assistant',
        text: 'Of course.',
        started_at: '2026-11-20T10:00:04.000Z',
        ended_at: '2026-11-20T10:00:05.900Z',
      },
    ]);
    const silent = await seedCall(t.database, owner.organizationId);
    expect((await get(`/api/v1/calls/${silent.id}/transcript`, owner.headers)).json()).toEqual([]);
  });

  it('keeps segments appended concurrently in one gapless order', async () => {
    const owner = await f.user();
    const call = await seedCall(t.database, owner.organizationId);
    const tenant = new Tenant(owner.organizationId);
    const at = new Date();
    await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        t.platform.services.callRecords.appendTranscript(tenant, call.id, [
          { speaker: 'user', text: `utterance ${index}`, startedAt: at, endedAt: at },
          { speaker: 'assistant', text: `answer ${index}`, startedAt: at, endedAt: at },
        ]),
      ),
    );
    const segments = (await get(`/api/v1/calls/${call.id}/transcript`, owner.headers)).json();
    expect(segments).toHaveLength(24);
    // Each append's two segments stay next to each other, whatever order the appends ran in.
    for (let index = 0; index < 24; index += 2) {
      const number = segments[index].text.replace('utterance ', '');
      expect(segments[index + 1].text).toBe(`answer ${number}`);
    }
    expect(new Set(segments.map((segment: { text: string }) => segment.text)).size).toBe(24);
  });

  it('refuses segments that are too long or end before they start, and another organization’s call', async () => {
    const owner = await f.user();
    const call = await seedCall(t.database, owner.organizationId);
    const records = t.platform.services.callRecords;
    const tenant = new Tenant(owner.organizationId);
    const at = new Date();
    await expect(
      records.appendTranscript(tenant, call.id, [
        { speaker: 'user', text: 'x'.repeat(10_001), startedAt: at, endedAt: at },
      ]),
    ).rejects.toBeInstanceOf(ValidationFailed);
    await expect(
      records.appendTranscript(tenant, call.id, [
        { speaker: 'user', text: 'late', startedAt: at, endedAt: new Date(at.getTime() - 1) },
      ]),
    ).rejects.toBeInstanceOf(ValidationFailed);
    const stranger = await f.user();
    expect(
      await records.appendTranscript(new Tenant(stranger.organizationId), call.id, [
        { speaker: 'user', text: 'intrusion', startedAt: at, endedAt: at },
      ]),
    ).toBeUndefined();
    expect((await get(`/api/v1/calls/${call.id}/transcript`, owner.headers)).json()).toEqual([]);
  });

  it('answers 404 for another organization’s call or one that does not exist, 422 for a bad id', async () => {
    const owner = await f.user();
    const call = await seedCall(t.database, owner.organizationId, { transcript: [['user', 'secret words']] });
    const stranger = await f.user();
    expectError(await get(`/api/v1/calls/${call.id}`, stranger.headers), 404, /Call not found/);
    expectError(await get(`/api/v1/calls/${call.id}/transcript`, stranger.headers), 404, /Call not found/);
    expectError(await get('/api/v1/calls/2147483647', owner.headers), 404);
    expectValidation(await get('/api/v1/calls/abc', owner.headers), ['path', 'call_id']);
    expectValidation(await get('/api/v1/calls/0/transcript', owner.headers), ['path', 'call_id']);
    expectError(await get(`/api/v1/calls/${call.id}`), 401);
    expectError(await get(`/api/v1/calls/${call.id}/transcript`), 401);
    const smsOnly = await f.apiKey(owner, { permissions: { sms: 'read' } });
    expectError(await get(`/api/v1/calls/${call.id}/transcript`, smsOnly.headers), 403);
  });
});

describe('POST /api/v1/calls/{id}/end', () => {
  /** An organization with carrier_a credentials and a live call at the simulator (in progress). */
  async function liveCall() {
    const { admin: owner, number } = await f.carrierOrganization({ sim, assistantName: 'Closer' });
    // The simulator keeps the call but tells us nothing: it stays live until we end it.
    sim.dropCallbacks = true;
    try {
      const placed = await t.app.inject({
        method: 'POST',
        url: '/calls/initiate',
        headers: owner.headers,
        payload: { from_phone_number: number, to_phone_number: '+12125550188' },
      });
      expect(placed.statusCode, placed.body).toBe(200);
      await sim.settle();
      const { call_id: callId, call_sid: callSid } = placed.json();
      await t.platform.services.calls.applyStatus(owner.organizationId, callId, {
        kind: 'call_status',
        callSid,
        status: 'in-progress',
      });
      return { owner, callId: callId as number, callSid: callSid as string };
    } finally {
      sim.dropCallbacks = false;
    }
  }

  function end(callId: number, headers: Record<string, string> = {}) {
    return t.app.inject({ method: 'POST', url: `/api/v1/calls/${callId}/end`, headers });
  }

  it('asks the carrier to hang up and records the request', async () => {
    const { owner, callId, callSid } = await liveCall();
    const response = await end(callId, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      message: 'Hang-up requested',
      call: { id: callId, status: 'in-progress' },
    });
    expect(sim.calls.get(callSid)!.hungUp).toBe(true);
    const hangUp = sim.requests.find(
      (request) => request.method === 'POST' && request.path.endsWith(`/Calls/${callSid}.json`),
    );
    expect(hangUp?.body).toMatchObject({ Status: 'completed' });
    const events = await t.database.db.select().from(callEvents).where(eq(callEvents.callId, callId));
    expect(events.map((event) => event.type)).toContain('call.end_requested');
  });

  it('answers 409 for a call that has ended or has not reached the carrier, 502 when the carrier refuses', async () => {
    const { owner, callId } = await liveCall();
    sim.failNext(1, 500);
    expectError(await end(callId, owner.headers), 502, /carrier did not end the call/);
    await t.platform.services.calls.applyStatus(owner.organizationId, callId, {
      kind: 'call_status',
      callSid: 'ignored',
      status: 'completed',
      durationSeconds: 12,
    });
    expectError(await end(callId, owner.headers), 409, /already ended \(completed\)/);
    const unplaced = await seedCall(t.database, owner.organizationId, { status: 'queued', callSid: null });
    expectError(await end(unplaced.id, owner.headers), 409, /not reached the carrier/);
  });

  it('refuses without credentials, read-only keys, other organizations and bad ids', async () => {
    const { owner, callId, callSid } = await liveCall();
    expectError(await end(callId), 401);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expectError(await end(callId, reader.headers), 403);
    const stranger = await f.user();
    expectError(await end(callId, stranger.headers), 404);
    expectValidation(
      await t.app.inject({ method: 'POST', url: '/api/v1/calls/x/end', headers: owner.headers }),
      ['path', 'call_id'],
    );
    expect(sim.calls.get(callSid)!.hungUp).toBe(false);
    const writer = await f.apiKey(owner, { permissions: { calls: 'read_write' } });
    expect((await end(callId, writer.headers)).statusCode).toBe(200);
  });
});

describe('route order', () => {
  it('reaches search and export rather than reading them as call ids', async () => {
    const owner = await f.user();
    const search = await get('/api/v1/calls/search?q=refund', owner.headers);
    expect(search.statusCode, search.body).toBe(200);
    const exported = await get('/api/v1/calls/export', owner.headers);
    expect(exported.statusCode, exported.body).toBe(200);
    expect(exported.headers['content-type']).toMatch(/^text\/csv/);
  });
});

/**
 * GET /api/v1/calls/{id}/events: what the live runtime and the carrier noted about a call, in the
 * order it happened, one type at a time if asked, paged; bad input, and who may see what (as the
 * transcript and the turns).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { insertCallEvent } from '../src/domains/calls/store.js';
import { expectError, expectValidation } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

// The tests share one database; each makes its own calls.
const t = useTestPlatform();
let f: Factories;
let owner: TestUser;
let tenant: Tenant;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
  tenant = new Tenant(owner.organizationId);
});

function get(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url, headers });
}

async function callWithEvents() {
  const call = await seedCall(t.database, owner.organizationId);
  const note = (type: string, data: Record<string, unknown>) =>
    insertCallEvent(t.database.db, tenant, call.id, type, data);
  await note('call.tool', {
    name: 'lookup_order',
    arguments: '{"order":"A-17"}',
    ok: true,
    duration_ms: 412,
    result: '{"status":"shipped"}',
  });
  await note('call.interrupted', { heard_ms: 840 });
  await note('call.tool', { name: 'end_call' });
  return call;
}

describe('GET /api/v1/calls/{id}/events', () => {
  it('reads the events back in order, one type when asked, paged', async () => {
    const call = await callWithEvents();
    const response = await get(`/api/v1/calls/${call.id}/events`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    const events = response.json();
    expect(events.map((event: { type: string }) => event.type)).toEqual([
      'call.tool',
      'call.interrupted',
      'call.tool',
    ]);
    expect(events[0]).toMatchObject({
      type: 'call.tool',
      data: { name: 'lookup_order', ok: true, duration_ms: 412, result: '{"status":"shipped"}' },
    });
    expect(Number.isNaN(Date.parse(events[0].created_at))).toBe(false);
    expect(events[1].id).toBeGreaterThan(events[0].id);

    const tools = (await get(`/api/v1/calls/${call.id}/events?type=call.tool`, owner.headers)).json();
    expect(tools.map((event: { data: { name: string } }) => event.data.name)).toEqual([
      'lookup_order',
      'end_call',
    ]);
    const second = (await get(`/api/v1/calls/${call.id}/events?skip=1&limit=1`, owner.headers)).json();
    expect(second.map((event: { type: string }) => event.type)).toEqual(['call.interrupted']);

    const quiet = await seedCall(t.database, owner.organizationId);
    expect((await get(`/api/v1/calls/${quiet.id}/events`, owner.headers)).json()).toEqual([]);
  });

  it('answers 422 for bad input and 404 for an unknown call or another organization’s', async () => {
    const call = await callWithEvents();
    expectValidation(await get('/api/v1/calls/abc/events', owner.headers), ['path', 'call_id']);
    expectValidation(await get(`/api/v1/calls/${call.id}/events?type=Call%20Tool`, owner.headers), [
      'query',
      'type',
    ]);
    expectValidation(await get(`/api/v1/calls/${call.id}/events?limit=0`, owner.headers), ['query', 'limit']);
    expectValidation(await get(`/api/v1/calls/${call.id}/events?extra=1`, owner.headers), ['query', 'extra']);
    expectError(await get('/api/v1/calls/2147483647/events', owner.headers), 404, /Call not found/);
    const stranger = await f.user();
    const theirs = await get(`/api/v1/calls/${call.id}/events`, stranger.headers);
    expectError(theirs, 404, /Call not found/);
    expect(theirs.body).not.toContain('lookup_order');
  });

  it('refuses without credentials (401) and API keys without the calls area (403)', async () => {
    const call = await callWithEvents();
    const url = `/api/v1/calls/${call.id}/events`;
    expectError(await get(url), 401);
    expectError(await get(url, { authorization: 'Bearer sk_not_a_key' }), 401);
    const smsOnly = await f.apiKey(owner, { permissions: { sms: 'read_write' } });
    expectError(await get(url, smsOnly.headers), 403);
    const member = await f.member(owner.organizationId, 'user');
    const callsReader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    for (const headers of [member.headers, callsReader.headers]) {
      const response = await get(url, headers);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toHaveLength(3);
    }
  });
});

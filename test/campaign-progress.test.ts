/**
 * GET /api/v1/campaigns/{id}/executions and /progress: every figure of a seeded campaign checked
 * against hand-computed values, an empty campaign's zeros, the pagination arithmetic and the
 * execution view, then bad input (422) and security (401, API key areas 403, another organization's
 * campaign 404). Rows are written directly, as the campaign executor writes them. The tests share
 * one platform; each creates the users it needs.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectValidation } from './support/assertions.js';
import {
  addCall,
  addContacts,
  addExecutions,
  type NewExecution,
  ownCampaign,
  setCampaign,
} from './support/campaign-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false });
  f = new Factories(t);
});
afterAll(() => t.close());

const url = (id: number | string, what: 'executions' | 'progress', query = '') =>
  `/api/v1/campaigns/${id}/${what}${query}`;
const get = (headers: Record<string, string>, path: string) =>
  t.app.inject({ method: 'GET', url: path, headers });

const at = (minute: number) => new Date(Date.UTC(2025, 0, 15, 10, minute, 0));

/**
 * Eight contacts: 3 completed, 1 failed, 2 pending, 1 in progress, 1 skipped; eight executions
 * (six calls with an outcome or under way, one not yet dialled, one SMS). The figures:
 * - progress_percentage 100 × (3 + 1 + 1) / 8 = 62.5; completion_rate 100 × 3 / 8 = 37.5;
 *   success_rate 100 × 3 / (3 + 1) = 75.
 * - answer_rate: 3 answered of 5 call attempts with an outcome (completed ×3, no_answer, failed) = 60.
 * - durations 90 (the call's own, not the 85 stored) + 30 + 0 + 60 = 180; mean of those above 0 = 60.
 * - actual_cost 0.08 (the call's) + 0.02 + 0.01 + 0.03 + 0.01 + 0.0075 (SMS) = 0.1575.
 * - cost_estimate: 4 finished contacts with an attempt, 3 to go (2 pending + 1 processing):
 *   0.1575 + 3 × 0.1575 / 4 = 0.275625 → 0.2756.
 */
async function seedKnown(user: TestUser, campaignId: number) {
  const contacts = await addContacts(
    t,
    user,
    campaignId,
    ['completed', 'completed', 'completed', 'failed', 'pending', 'in_progress', 'skipped', 'pending'],
    1000,
    // Attempts made: c2 twice (no answer, then answered), c3 twice (call, then SMS).
    [1, 1, 2, 2, 0, 1, 0, 0],
  );
  const c = (i: number) => contacts[i]!.id;
  const callId = await addCall(t, user, { duration: 90, cost: 0.08, to: contacts[0]!.phoneNumber });
  const smsId = randomUUID();
  const updated = new Date(Date.UTC(2025, 0, 15, 11, 0, 0));
  // Every row last changed at 10:30, but the first at 11:00: the progress' last_updated.
  const rows: NewExecution[] = [
    {
      contactId: c(0),
      attemptNumber: 1,
      channel: 'call',
      status: 'completed',
      callId,
      executedAt: at(1),
      finishedAt: at(2),
      executionData: {
        from_number: '+14155550100',
        to_number: contacts[0]!.phoneNumber,
        personalized_welcome_message: 'Hi Contact 1000',
        template_variables_used: { name: 'Contact 1000' },
        duration_seconds: 85,
        call_sid: 'CA-known-1',
      },
      updatedAt: updated,
    },
    {
      contactId: c(1),
      attemptNumber: 1,
      channel: 'call',
      status: 'completed',
      cost: 0.02,
      executedAt: at(2),
      executionData: { duration_seconds: 30 },
    },
    {
      contactId: c(2),
      attemptNumber: 1,
      channel: 'call',
      status: 'no_answer',
      cost: 0.01,
      executedAt: at(3),
      executionData: { duration_seconds: 0, retry_reason: 'no_answer' },
    },
    {
      contactId: c(2),
      attemptNumber: 2,
      channel: 'call',
      status: 'completed',
      cost: 0.03,
      executedAt: at(4),
      executionData: { duration_seconds: 60 },
    },
    {
      contactId: c(3),
      attemptNumber: 1,
      channel: 'call',
      status: 'failed',
      cost: 0.01,
      executedAt: at(5),
      executionData: { error_details: 'Carrier rejected the number' },
    },
    { contactId: c(5), attemptNumber: 1, channel: 'call', status: 'in_progress', executedAt: at(6) },
    // Not dialled yet: no executed_at, so it sorts by its creation (now), first.
    { contactId: c(4), attemptNumber: 1, channel: 'call', status: 'pending' },
    {
      contactId: c(3),
      attemptNumber: 2,
      channel: 'sms',
      status: 'completed',
      smsId,
      cost: 0.0075,
      executedAt: at(7),
      executionData: { personalized_sms: 'Sorry we missed you' },
    },
  ];
  const ids = await addExecutions(
    t,
    user,
    campaignId,
    rows.map((row) => ({ updatedAt: at(30), ...row })),
  );
  return { contacts, callId, smsId, ids, updated };
}

describe('GET /api/v1/campaigns/{campaign_id}/progress', () => {
  it('answers every figure of a seeded campaign exactly; the campaign GET shows the same metrics', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const started = at(0);
    await setCampaign(t, campaignId, {
      status: 'running',
      startedAt: started,
      updatedAt: new Date(Date.UTC(2025, 0, 15, 9, 0, 0)),
    });
    const { contacts, callId, ids, updated } = await seedKnown(user, campaignId);
    const response = await get(user.headers, url(campaignId, 'progress'));
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).toEqual({
      campaign_id: campaignId,
      status: 'running',
      progress: {
        total_contacts: 8,
        completed: 3,
        failed: 1,
        processing: 1,
        pending: 2,
        progress_percentage: 62.5,
        success_rate: 75,
      },
      metrics: {
        total_duration_seconds: 180,
        average_duration_seconds: 60,
        success_rate: 75,
        answer_rate: 60,
        completion_rate: 37.5,
        cost_estimate: 0.2756,
        actual_cost: 0.1575,
        // The latest execution change (11:00) is newer than the campaign's own (09:00).
        last_updated: updated.toISOString(),
      },
      started_at: started.toISOString(),
      completed_at: null,
      recent_activity: expect.any(Array),
    });
    const phone = (i: number) => contacts[i]!.phoneNumber;
    expect(body.recent_activity).toEqual([
      { execution_id: ids[6], contact_phone: phone(4), status: 'pending', executed_at: null, call_id: null },
      {
        execution_id: ids[7],
        contact_phone: phone(3),
        status: 'completed',
        executed_at: at(7).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[5],
        contact_phone: phone(5),
        status: 'in_progress',
        executed_at: at(6).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[4],
        contact_phone: phone(3),
        status: 'failed',
        executed_at: at(5).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[3],
        contact_phone: phone(2),
        status: 'completed',
        executed_at: at(4).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[2],
        contact_phone: phone(2),
        status: 'no_answer',
        executed_at: at(3).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[1],
        contact_phone: phone(1),
        status: 'completed',
        executed_at: at(2).toISOString(),
        call_id: null,
      },
      {
        execution_id: ids[0],
        contact_phone: phone(0),
        status: 'completed',
        executed_at: at(1).toISOString(),
        call_id: String(callId),
      },
    ]);
    const campaign = (await get(user.headers, `/api/v1/campaigns/${campaignId}`)).json();
    expect(campaign.metrics).toEqual({
      success_rate: body.metrics.success_rate,
      answer_rate: body.metrics.answer_rate,
      average_duration_seconds: body.metrics.average_duration_seconds,
      total_duration_seconds: body.metrics.total_duration_seconds,
      actual_cost: body.metrics.actual_cost,
    });
  });

  it('answers zeros for a campaign without contacts or executions; last_updated is the campaign’s', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const response = await get(user.headers, url(campaignId, 'progress'));
    expect(response.statusCode, response.body).toBe(200);
    const campaign = (await get(user.headers, `/api/v1/campaigns/${campaignId}`)).json();
    expect(response.json()).toEqual({
      campaign_id: campaignId,
      status: 'draft',
      progress: {
        total_contacts: 0,
        completed: 0,
        failed: 0,
        processing: 0,
        pending: 0,
        progress_percentage: 0,
        success_rate: 0,
      },
      metrics: {
        total_duration_seconds: 0,
        average_duration_seconds: 0,
        success_rate: 0,
        answer_rate: 0,
        completion_rate: 0,
        cost_estimate: 0,
        actual_cost: 0,
        last_updated: campaign.updated_at,
      },
      started_at: null,
      completed_at: null,
      recent_activity: [],
    });
  });

  it('estimates the cost as spent so far while no contact has finished, and after completion', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const contacts = await addContacts(t, user, campaignId, ['in_progress', 'pending', 'pending'], 1000, [1]);
    await addExecutions(t, user, campaignId, [
      { contactId: contacts[0]!.id, attemptNumber: 1, channel: 'call', status: 'no_answer', cost: 0.05 },
    ]);
    const before = (await get(user.headers, url(campaignId, 'progress'))).json();
    expect(before.metrics).toMatchObject({ actual_cost: 0.05, cost_estimate: 0.05 });
    expect(before.progress).toMatchObject({ processing: 1, pending: 2, progress_percentage: 0 });

    // A campaign that ran to the end: nothing left to estimate; a later campaign change is the last update.
    const completedAt = new Date();
    await setCampaign(t, campaignId, { status: 'completed', completedAt, updatedAt: completedAt });
    await t.database.executeSql(`update campaign_contacts set status = 'completed' where campaign_id = $1`, [
      campaignId,
    ]);
    const after = (await get(user.headers, url(campaignId, 'progress'))).json();
    expect(after.progress).toMatchObject({ completed: 3, progress_percentage: 100, success_rate: 100 });
    expect(after.metrics).toMatchObject({ completion_rate: 100, actual_cost: 0.05, cost_estimate: 0.05 });
    expect(after.completed_at).toBe(completedAt.toISOString());
    expect(after.metrics.last_updated).toBe(completedAt.toISOString());
  });

  it('lists only the 10 latest executions, by executed_at then id', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const [contact] = await addContacts(t, user, campaignId, ['completed']);
    // Twelve attempts: 1..12 at minute 12, 11, … 1 (so the first inserted is the latest), the
    // last two sharing minute 1 (the higher id first).
    const minutes = [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 1, 1];
    const ids = await addExecutions(
      t,
      user,
      campaignId,
      minutes.map((minute, i) => ({
        contactId: contact!.id,
        attemptNumber: i + 1,
        channel: 'call' as const,
        status: 'busy' as const,
        executedAt: at(minute),
      })),
    );
    const recent = (await get(user.headers, url(campaignId, 'progress'))).json().recent_activity;
    expect(recent.map((r: { execution_id: number }) => r.execution_id)).toEqual(ids.slice(0, 10));
  });

  it('answers 404 for an unknown campaign and another organization’s; 422 for an id that is not one', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const stranger = await f.user();
    expectError(await get(stranger.headers, url(campaignId, 'progress')), 404, /Campaign not found/);
    expectError(await get(user.headers, url(2_000_000_000, 'progress')), 404, /Campaign not found/);
    for (const id of ['0', 'abc', '2147483648'])
      expectValidation(await get(user.headers, url(id, 'progress')), ['path', 'campaign_id']);
  });
});

describe('GET /api/v1/campaigns/{campaign_id}/executions', () => {
  it('answers the execution view, newest first, with the call’s duration filled in', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const { contacts, callId, smsId, ids } = await seedKnown(user, campaignId);
    const response = await get(user.headers, url(campaignId, 'executions'));
    expect(response.statusCode, response.body).toBe(200);
    const { executions, pagination } = response.json();
    expect(pagination).toEqual({
      page: 1,
      per_page: 50,
      total_items: 8,
      total_pages: 1,
      has_next: false,
      has_prev: false,
    });
    expect(executions.map((e: { id: number }) => e.id)).toEqual([...ids].reverse());
    const call = executions.find((e: { id: number }) => e.id === ids[0]);
    expect(call).toEqual({
      id: ids[0],
      execution_id: ids[0],
      contact_id: contacts[0]!.id,
      contact_name: 'Contact 1000',
      contact_phone: contacts[0]!.phoneNumber,
      status: 'completed',
      call_id: String(callId),
      sms_id: null,
      executed_at: at(1).toISOString(),
      execution_data: {
        from_number: '+14155550100',
        to_number: contacts[0]!.phoneNumber,
        personalized_welcome_message: 'Hi Contact 1000',
        template_variables_used: { name: 'Contact 1000' },
        // The carrier's 90 s, not the 85 the executor stored.
        duration_seconds: 90,
        call_sid: 'CA-known-1',
      },
      attempt_number: 1,
      channel: 'call',
      occurrence: 0,
      finished_at: at(2).toISOString(),
      cost: null,
    });
    const sms = executions.find((e: { id: number }) => e.id === ids[7]);
    expect(sms).toMatchObject({
      channel: 'sms',
      call_id: null,
      sms_id: smsId,
      cost: 0.0075,
      attempt_number: 2,
      execution_data: { personalized_sms: 'Sorry we missed you' },
    });
    const failed = executions.find((e: { id: number }) => e.id === ids[4]);
    expect(failed.execution_data).toEqual({ error_details: 'Carrier rejected the number' });
    const pending = executions.find((e: { id: number }) => e.id === ids[6]);
    expect(pending).toMatchObject({ status: 'pending', executed_at: null, execution_data: {} });
  });

  it('pages: per_page 3 gives 3 pages, the last one short; a page after the last is empty with the totals', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const { ids } = await seedKnown(user, campaignId);
    const newestFirst = [...ids].reverse();
    const page = async (n: number) =>
      (await get(user.headers, url(campaignId, 'executions', `?page=${n}&per_page=3`))).json();
    const first = await page(1);
    expect(first.executions.map((e: { id: number }) => e.id)).toEqual(newestFirst.slice(0, 3));
    expect(first.pagination).toEqual({
      page: 1,
      per_page: 3,
      total_items: 8,
      total_pages: 3,
      has_next: true,
      has_prev: false,
    });
    const third = await page(3);
    expect(third.executions.map((e: { id: number }) => e.id)).toEqual(newestFirst.slice(6));
    expect(third.pagination).toEqual({
      page: 3,
      per_page: 3,
      total_items: 8,
      total_pages: 3,
      has_next: false,
      has_prev: true,
    });
    const beyond = await page(4);
    expect(beyond.executions).toEqual([]);
    expect(beyond.pagination).toEqual({
      page: 4,
      per_page: 3,
      total_items: 8,
      total_pages: 3,
      has_next: false,
      has_prev: true,
    });
  });

  it('answers an empty list for a campaign without executions; never another campaign’s', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const busy = await ownCampaign(t, f, user);
    await seedKnown(user, busy.campaignId);
    const body = (await get(user.headers, url(campaignId, 'executions'))).json();
    expect(body).toEqual({
      executions: [],
      pagination: { page: 1, per_page: 50, total_items: 0, total_pages: 0, has_next: false, has_prev: false },
    });
  });

  it('answers 422 for a page or per_page out of range or not a number', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    for (const [query, field] of [
      ['?page=0', 'page'],
      ['?page=-1', 'page'],
      ['?page=x', 'page'],
      ['?per_page=0', 'per_page'],
      ['?per_page=1001', 'per_page'],
      ['?per_page=1.5', 'per_page'],
    ] as const) {
      expectValidation(await get(user.headers, url(campaignId, 'executions', query)), ['query', field]);
    }
    expect((await get(user.headers, url(campaignId, 'executions', '?per_page=1000'))).statusCode).toBe(200);
    expectValidation(await get(user.headers, url('abc', 'executions')), ['path', 'campaign_id']);
  });

  it('answers 404 for an unknown campaign and another organization’s', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    await seedKnown(user, campaignId);
    const stranger = await f.user();
    expectError(await get(stranger.headers, url(campaignId, 'executions')), 404, /Campaign not found/);
    expectError(await get(user.headers, url(2_000_000_000, 'executions')), 404, /Campaign not found/);
  });
});

describe('security of executions and progress', () => {
  it('answers 401 without credentials or with a bad token', async () => {
    const { campaignId } = await ownCampaign(t, f);
    for (const what of ['executions', 'progress'] as const) {
      expectError(await get({}, url(campaignId, what)), 401);
      expectError(await get({ authorization: 'Bearer not-a-jwt' }, url(campaignId, what)), 401);
      expectError(
        await get({ authorization: 'Bearer sk_unknownkey0123456789abcdefghijklmn' }, url(campaignId, what)),
        401,
      );
    }
  });

  it('API keys need campaigns read: none or another area answers 403; read and read_write answer 200', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const none = await f.apiKey(user, { permissions: {} });
    const calls = await f.apiKey(user, { permissions: { calls: 'read_write' } });
    const read = await f.apiKey(user, { permissions: { campaigns: 'read' } });
    const write = await f.apiKey(user, { permissions: { campaigns: 'read_write' } });
    for (const what of ['executions', 'progress'] as const) {
      expectError(await get(none.headers, url(campaignId, what)), 403, /campaigns/);
      expectError(await get(calls.headers, url(campaignId, what)), 403, /campaigns/);
      expect((await get(read.headers, url(campaignId, what))).statusCode).toBe(200);
      expect((await get(write.headers, url(campaignId, what))).statusCode).toBe(200);
    }
  });

  it('a member of the organization may read; the session cookie works too', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const member = await f.member(user.organizationId, 'user');
    for (const what of ['executions', 'progress'] as const) {
      expect((await get(member.headers, url(campaignId, what))).statusCode).toBe(200);
      expect(
        (await get({ cookie: `sb_session=${user.sessionCookie}` }, url(campaignId, what))).statusCode,
      ).toBe(200);
    }
  });
});

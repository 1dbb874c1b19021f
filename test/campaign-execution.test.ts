/**
 * The campaign executor end to end: the platform listens on loopback, the carrier_a simulator
 * answers some calls, leaves some unanswered, reports busy lines, voicemail and failures, and posts
 * its signed callbacks; the job-queue workers dispatch, attempt, retry and finish. Checked exactly:
 * executions per contact and their statuses, retries and retry reasons, what each call was given
 * (personalised texts), contact and campaign counters, the list metrics, concurrency limits (the
 * campaign's and the organization's), SMS and mixed campaigns, stop and pause mid-run, a campaign
 * that fails when its number is removed, and the sweep recovering lost callbacks and a dial that
 * never reached the carrier.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  calls,
  campaignContacts,
  campaignExecutions,
  campaignSchedules,
  campaigns,
  messages,
} from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import * as executorStore from '../src/domains/campaigns/execution/store.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const sim = new CarrierASimulator();
let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform(
    {
      CARRIER_A_BASE_URL: sim.baseUrl,
      CAMPAIGN_ORGANIZATION_CONCURRENCY: '3',
      CAMPAIGN_SWEEP_INTERVAL_SECONDS: '1',
      CAMPAIGN_RECOVER_AFTER_SECONDS: '2',
    },
    { listen: true },
  );
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

type Org = CarrierOrganization;

function nextNumber(): string {
  serial += 1;
  return `+1415777${String(1000 + serial).padStart(4, '0')}`;
}

function organization(): Promise<Org> {
  // A fast sending rate, so SMS campaigns do not wait on the long-code default of 1 a second.
  return f.carrierOrganization({ sim, assistantName: 'Outreach', smsRatePerSecond: 20 });
}

async function campaign(org: Org, body: Record<string, unknown>, contacts: Array<Record<string, unknown>>) {
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: org.admin.headers,
    payload: {
      name: 'Run',
      campaign_type: 'call',
      assistant_id: org.assistantId,
      retry_delay_minutes: 0,
      ...body,
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as number;
  const added = await t.app.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${id}/contacts`,
    headers: org.admin.headers,
    payload: { contacts },
  });
  expect(added.statusCode, added.body).toBe(200);
  expect(added.json().imported).toBe(contacts.length);
  return id;
}

function move(org: Org, id: number, verb: 'start' | 'pause' | 'stop') {
  return t.app.inject({ method: 'POST', url: `/api/v1/campaigns/${id}/${verb}`, headers: org.admin.headers });
}

async function get(org: Org, id: number) {
  const response = await t.app.inject({
    method: 'GET',
    url: `/api/v1/campaigns/${id}`,
    headers: org.admin.headers,
  });
  expect(response.statusCode).toBe(200);
  return response.json();
}

async function settled(org: Org, id: number, status: string, timeoutMs = 20_000) {
  const found = await waitFor(async () => {
    const row = await get(org, id);
    return row.status === status ? row : undefined;
  }, timeoutMs);
  await sim.settle();
  return found;
}

async function executionsOf(id: number) {
  return t.database.db
    .select({
      contactId: campaignExecutions.contactId,
      phone: campaignContacts.phoneNumber,
      attempt: campaignExecutions.attemptNumber,
      channel: campaignExecutions.channel,
      status: campaignExecutions.status,
      callId: campaignExecutions.callId,
      smsId: campaignExecutions.smsId,
      data: campaignExecutions.executionData,
      cost: campaignExecutions.cost,
    })
    .from(campaignExecutions)
    .innerJoin(campaignContacts, eq(campaignContacts.id, campaignExecutions.contactId))
    .where(eq(campaignExecutions.campaignId, id))
    .orderBy(asc(campaignContacts.id), asc(campaignExecutions.attemptNumber));
}

async function contactsOf(id: number) {
  const rows = await t.database.db
    .select()
    .from(campaignContacts)
    .where(eq(campaignContacts.campaignId, id))
    .orderBy(asc(campaignContacts.id));
  return new Map(rows.map((row) => [row.phoneNumber, row]));
}

/** The calls the simulator was asked to place to `to`. */
const dialsTo = (to: string) => [...sim.calls.values()].filter((call) => call.to === to);

describe('a call campaign end to end', () => {
  it('answers, busy lines, no answer, failures and voicemail: executions, retries, counters and metrics exactly', async () => {
    const org = await organization();
    const [answered, busy, silent, broken, machine, late] = Array.from({ length: 6 }, nextNumber);
    sim.setCallOutcome(answered!, { status: 'completed', durationSeconds: 42 });
    sim.setCallOutcome(busy!, { status: 'busy' });
    sim.setCallOutcome(silent!, { status: 'no-answer' });
    sim.setCallOutcome(broken!, { status: 'failed' });
    sim.setCallOutcome(machine!, { status: 'completed', durationSeconds: 15, answeredBy: 'machine' });
    sim.setCallOutcome(late!, { status: 'completed', durationSeconds: 60 });
    const id = await campaign(
      org,
      {
        max_attempts: 2,
        welcome_message_template:
          'Hello {{ name | title_case }} from {{ company | default("your company") }}',
        agenda_template: 'Talk about {{ plan }} with {{ assistant_name }}',
        fallback_values: { plan: 'the basics' },
      },
      [
        { phone_number: answered, name: 'ada lovelace', company: 'Engines', custom_fields: { plan: 'gold' } },
        { phone_number: busy, name: 'bob' },
        { phone_number: silent, name: 'cy' },
        { phone_number: broken, name: 'di' },
        { phone_number: machine, name: 'ed' },
        { phone_number: late, name: 'flo' },
      ],
    );
    const started = await move(org, id, 'start');
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json()).toMatchObject({ id, status: 'running' });
    expect(started.json().started_at).not.toBeNull();

    const done = await settled(org, id, 'completed');
    expect(done).toMatchObject({ total_contacts: 6, completed_contacts: 2, failed_contacts: 4 });
    expect(done.completed_at).not.toBeNull();

    // Exactly one dial per attempt, and one execution row per dial.
    const rows = await executionsOf(id);
    const expected: Array<[string, string[]]> = [
      [answered!, ['completed']],
      [busy!, ['busy', 'busy']],
      [silent!, ['no_answer', 'no_answer']],
      [broken!, ['failed', 'failed']],
      [machine!, ['voicemail', 'voicemail']],
      [late!, ['completed']],
    ];
    for (const [phone, statuses] of expected) {
      const mine = rows.filter((row) => row.phone === phone);
      expect(
        mine.map((row) => row.status),
        phone,
      ).toEqual(statuses);
      expect(mine.map((row) => row.attempt)).toEqual(statuses.map((_, i) => i + 1));
      expect(dialsTo(phone)).toHaveLength(statuses.length);
      if (statuses.length === 2) expect(mine[1]!.data.retry_reason).toBe(`previous attempt ${statuses[0]}`);
      expect(mine[0]!.data.retry_reason).toBeUndefined();
    }
    const contacts = await contactsOf(id);
    expect(contacts.get(answered!)).toMatchObject({ status: 'completed', attempts: 1 });
    expect(contacts.get(busy!)).toMatchObject({ status: 'failed', attempts: 2 });

    // What the first contact's call was given, and what its execution records.
    const first = rows.find((row) => row.phone === answered)!;
    expect(first.data).toMatchObject({
      from_number: org.number,
      to_number: answered,
      personalized_welcome_message: 'Hello Ada Lovelace from Engines',
      personalized_agenda: 'Talk about gold with Outreach',
      template_variables_used: {
        name: 'ada lovelace',
        company: 'Engines',
        plan: 'gold',
        assistant_name: 'Outreach',
      },
      duration_seconds: 42,
      call_status: 'completed',
    });
    const [call] = await t.database.db.select().from(calls).where(eq(calls.id, first.callId!));
    expect(call).toMatchObject({
      campaignId: id,
      status: 'completed',
      duration: 42,
      toPhoneNumber: answered,
    });
    expect(call!.callMeta).toMatchObject({ welcome_message: 'Hello Ada Lovelace from Engines' });
    // Campaign calls ask for answering-machine detection.
    expect(dialsTo(answered!)[0]!.request).toMatchObject({
      MachineDetection: 'DetectMessageEnd',
      AsyncAmd: 'true',
    });
    // The fallback and the default filter fill what a contact lacks.
    const bob = rows.find((row) => row.phone === busy)!;
    expect(bob.data.personalized_welcome_message).toBe('Hello Bob from your company');
    expect(bob.data.personalized_agenda).toBe('Talk about the basics with Outreach');
    expect(rows.find((row) => row.phone === broken)!.data.error_details).toBeTruthy();

    // Metrics: success 2 of 6 finished contacts; 2 answered of 10 call attempts; durations of the
    // calls that lasted (42, 60, 15, 15); cost per started second at 0.05 a minute.
    expect(done.metrics).toEqual({
      success_rate: 33.33,
      answer_rate: 20,
      total_duration_seconds: 132,
      average_duration_seconds: 33,
      actual_cost: 0.11,
    });

    // Progress, with the document's formulas over the same figures.
    const progress = await t.app.inject({
      method: 'GET',
      url: `/api/v1/campaigns/${id}/progress`,
      headers: org.admin.headers,
    });
    expect(progress.statusCode, progress.body).toBe(200);
    const body = progress.json();
    expect(body).toMatchObject({
      campaign_id: id,
      status: 'completed',
      progress: {
        total_contacts: 6,
        completed: 2,
        failed: 4,
        processing: 0,
        pending: 0,
        progress_percentage: 100,
        success_rate: 33.33,
      },
      metrics: {
        success_rate: 33.33,
        answer_rate: 20,
        completion_rate: 33.33,
        total_duration_seconds: 132,
        average_duration_seconds: 33,
        actual_cost: 0.11,
        cost_estimate: 0.11,
      },
    });
    expect(body.recent_activity).toHaveLength(10);
    const times = body.recent_activity.map((a: { executed_at: string }) => new Date(a.executed_at).getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('keeps the campaign to its concurrency limit and the organization to CAMPAIGN_ORGANIZATION_CONCURRENCY', async () => {
    const org = await organization();
    sim.delayMs = 150; // every carrier request takes a moment, so attempts overlap
    try {
      const numbers = Array.from({ length: 12 }, nextNumber);
      const one = await campaign(
        org,
        { concurrency_limit: 2 },
        numbers.slice(0, 6).map((n) => ({ phone_number: n })),
      );
      const two = await campaign(
        org,
        { concurrency_limit: 5 },
        numbers.slice(6).map((n) => ({ phone_number: n })),
      );
      const peaks = { one: 0, organization: 0 };
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const [row] = await t.database.db
            .select({
              one: sql<number>`count(*) filter (where ${campaignExecutions.campaignId} = ${one})::int`,
              all: sql<number>`count(*)::int`,
            })
            .from(campaignExecutions)
            .where(
              and(
                inArray(campaignExecutions.campaignId, [one, two]),
                inArray(campaignExecutions.status, ['pending', 'in_progress']),
              ),
            );
          peaks.one = Math.max(peaks.one, row!.one);
          peaks.organization = Math.max(peaks.organization, row!.all);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      expect((await move(org, one, 'start')).statusCode).toBe(200);
      expect((await move(org, two, 'start')).statusCode).toBe(200);
      await settled(org, one, 'completed', 30_000);
      await settled(org, two, 'completed', 30_000);
      sampling = false;
      await sampler;
      expect(peaks.one).toBeLessThanOrEqual(2);
      expect(peaks.organization).toBeLessThanOrEqual(3);
      expect(peaks.organization).toBeGreaterThanOrEqual(2); // it did run attempts side by side
      for (const n of numbers) expect(dialsTo(n)).toHaveLength(1);
    } finally {
      sim.delayMs = 0;
    }
  });
});

describe('SMS and mixed campaigns', () => {
  it('an SMS campaign sends the personalised template through the SMS queue and retries a refused send', async () => {
    const org = await organization();
    const numbers = Array.from({ length: 3 }, nextNumber);
    const id = await campaign(
      org,
      {
        campaign_type: 'sms',
        sms_message_template: 'Hi {{ name | upper }}, your code is {{ code }}',
        max_attempts: 2,
      },
      numbers.map((n, i) => ({ phone_number: n, name: `p${i}`, custom_fields: { code: `C${i}` } })),
    );
    sim.failNext(1, 400, { code: 21610, message: 'Attempt to send to unsubscribed recipient', status: 400 });
    expect((await move(org, id, 'start')).statusCode).toBe(200);
    const done = await settled(org, id, 'completed');
    expect(done).toMatchObject({ completed_contacts: 3, failed_contacts: 0 });
    const rows = await executionsOf(id);
    expect(rows).toHaveLength(4); // one refused, retried once
    expect(rows.filter((row) => row.status === 'failed')).toHaveLength(1);
    expect(rows.filter((row) => row.status === 'completed')).toHaveLength(3);
    expect(rows.every((row) => row.channel === 'sms' && row.smsId !== null && row.callId === null)).toBe(
      true,
    );
    for (const [i, n] of numbers.entries()) {
      const sent = sim.messages.filter((m) => m.to === n);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body).toBe(`Hi P${i}, your code is C${i}`);
      expect(sent[0]!.from).toBe(org.number);
    }
    const refused = rows.find((row) => row.status === 'failed')!;
    expect(refused.data.error_details).toMatch(/unsubscribed/);
    const [message] = await t.database.db.select().from(messages).where(eq(messages.id, refused.smsId!));
    expect(message!.status).toBe('failed');
  });

  it('a mixed campaign calls first and texts only the contacts whose calls did not connect', async () => {
    const org = await organization();
    const [picks, ignores] = [nextNumber(), nextNumber()];
    sim.setCallOutcome(picks, { status: 'completed', durationSeconds: 20 });
    sim.setCallOutcome(ignores, { status: 'no-answer' });
    const id = await campaign(
      org,
      { campaign_type: 'mixed', max_attempts: 2, sms_message_template: 'Sorry we missed you, {{ name }}' },
      [
        { phone_number: picks, name: 'Pat' },
        { phone_number: ignores, name: 'Ira' },
      ],
    );
    expect((await move(org, id, 'start')).statusCode).toBe(200);
    const done = await settled(org, id, 'completed');
    expect(done).toMatchObject({ completed_contacts: 2, failed_contacts: 0 });
    const rows = await executionsOf(id);
    expect(rows.filter((row) => row.phone === picks).map((row) => [row.channel, row.status])).toEqual([
      ['call', 'completed'],
    ]);
    expect(rows.filter((row) => row.phone === ignores).map((row) => [row.channel, row.status])).toEqual([
      ['call', 'no_answer'],
      ['call', 'no_answer'],
      ['sms', 'completed'],
    ]);
    expect(sim.messages.filter((m) => m.to === picks)).toHaveLength(0);
    expect(sim.messages.filter((m) => m.to === ignores).map((m) => m.body)).toEqual([
      'Sorry we missed you, Ira',
    ]);
  });
});

describe('moves while running', () => {
  it('stop skips the contacts still waiting and makes no further attempt', async () => {
    const org = await organization();
    sim.delayMs = 200;
    try {
      const numbers = Array.from({ length: 8 }, nextNumber);
      const id = await campaign(
        org,
        { concurrency_limit: 1 },
        numbers.map((n) => ({ phone_number: n })),
      );
      expect((await move(org, id, 'start')).statusCode).toBe(200);
      await waitFor(() => sim.calls.size > 0 && numbers.some((n) => dialsTo(n).length > 0), 10_000);
      const stopped = await move(org, id, 'stop');
      expect(stopped.statusCode, stopped.body).toBe(200);
      expect(stopped.json().status).toBe('cancelled');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await sim.settle();
      const contacts = [...(await contactsOf(id)).values()];
      const dialled = numbers.filter((n) => dialsTo(n).length > 0);
      expect(dialled.length).toBeLessThan(numbers.length);
      expect(contacts.filter((c) => c.status === 'skipped').length).toBe(numbers.length - dialled.length);
      for (const n of numbers) expect(dialsTo(n).length).toBeLessThanOrEqual(1);
      expect((await get(org, id)).status).toBe('cancelled');
    } finally {
      sim.delayMs = 0;
    }
  });

  it('pause holds new attempts; start resumes and the campaign completes', async () => {
    const org = await organization();
    sim.delayMs = 150;
    try {
      const numbers = Array.from({ length: 6 }, nextNumber);
      const id = await campaign(
        org,
        { concurrency_limit: 1 },
        numbers.map((n) => ({ phone_number: n })),
      );
      expect((await move(org, id, 'start')).statusCode).toBe(200);
      await waitFor(() => numbers.some((n) => dialsTo(n).length > 0), 10_000);
      expect((await move(org, id, 'pause')).json().status).toBe('paused');
      await new Promise((resolve) => setTimeout(resolve, 800));
      await sim.settle();
      const whilePaused = numbers.filter((n) => dialsTo(n).length > 0).length;
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(numbers.filter((n) => dialsTo(n).length > 0).length).toBe(whilePaused);
      expect(whilePaused).toBeLessThan(numbers.length);
      expect((await move(org, id, 'start')).json().status).toBe('running');
      const done = await settled(org, id, 'completed');
      expect(done.completed_contacts).toBe(6);
      for (const n of numbers) expect(dialsTo(n)).toHaveLength(1);
    } finally {
      sim.delayMs = 0;
    }
  });

  it('fails a running campaign that cannot go on: its number was removed', async () => {
    const org = await organization();
    sim.delayMs = 150;
    try {
      const numbers = Array.from({ length: 5 }, nextNumber);
      const id = await campaign(
        org,
        { concurrency_limit: 1 },
        numbers.map((n) => ({ phone_number: n })),
      );
      expect((await move(org, id, 'start')).statusCode).toBe(200);
      await waitFor(() => numbers.some((n) => dialsTo(n).length > 0), 10_000);
      const removed = await t.app.inject({
        method: 'DELETE',
        url: `/api/v1/phone-numbers/${org.numberId}`,
        headers: org.admin.headers,
      });
      expect(removed.statusCode, removed.body).toBe(204);
      const failed = await settled(org, id, 'failed');
      expect(failed.failure_reason).toMatch(/No phone number is routed/);
      expect(failed.completed_at).not.toBeNull();
      const contacts = [...(await contactsOf(id)).values()];
      expect(contacts.some((c) => c.status === 'skipped')).toBe(true);
      expect(contacts.every((c) => c.status !== 'pending')).toBe(true);
    } finally {
      sim.delayMs = 0;
    }
  });
});

describe('recovery by the sweep', () => {
  it('finishes attempts whose status callbacks never came from the carrier’s own records', async () => {
    const org = await organization();
    const numbers = [nextNumber(), nextNumber()];
    sim.setCallOutcome(numbers[0]!, { status: 'completed', durationSeconds: 12 });
    sim.setCallOutcome(numbers[1]!, { status: 'busy' });
    const id = await campaign(
      org,
      { max_attempts: 1 },
      numbers.map((n) => ({ phone_number: n })),
    );
    sim.dropCallbacks = true;
    try {
      expect((await move(org, id, 'start')).statusCode).toBe(200);
      const done = await settled(org, id, 'completed', 30_000);
      expect(done).toMatchObject({ completed_contacts: 1, failed_contacts: 1 });
    } finally {
      sim.dropCallbacks = false;
    }
    const rows = await executionsOf(id);
    expect(rows.map((row) => [row.phone, row.status, row.data.duration_seconds])).toEqual([
      [numbers[0], 'completed', 12],
      [numbers[1], 'busy', 0],
    ]);
    for (const n of numbers) expect(dialsTo(n)).toHaveLength(1);
  });

  it('makes an attempt again, under the same attempt number, when its dial never reached the carrier', async () => {
    const org = await organization();
    const to = nextNumber();
    sim.setCallOutcome(to, { status: 'completed', durationSeconds: 7 });
    const id = await campaign(org, {}, [{ phone_number: to }]);
    // What a process that stopped between claiming the attempt and dialling leaves behind: the
    // campaign running, the execution in progress, its call recorded but never sent to the carrier.
    const tenant = new Tenant(org.admin.organizationId);
    const services = t.platform.services;
    const [contact] = await t.database.db
      .select()
      .from(campaignContacts)
      .where(eq(campaignContacts.campaignId, id));
    const { callId, executionId } = await t.database.db.transaction(async (tx) => {
      await tx
        .update(campaigns)
        .set({ status: 'running', startedAt: new Date() })
        .where(eq(campaigns.id, id));
      await tx
        .update(campaignContacts)
        .set({ status: 'in_progress', attempts: 1 })
        .where(eq(campaignContacts.id, contact!.id));
      const [execution] = await tx
        .insert(campaignExecutions)
        .values({
          organizationId: tenant.organizationId,
          campaignId: id,
          contactId: contact!.id,
          attemptNumber: 1,
          channel: 'call',
          status: 'in_progress',
          executedAt: new Date(),
        })
        .returning();
      const call = await services.calls.recordOutbound(tx, tenant, {
        assistantId: org.assistantId,
        phoneNumberId: org.numberId,
        provider: 'carrier_a',
        from: org.number,
        to,
        campaignId: id,
        callMeta: {},
      });
      await tx
        .update(campaignExecutions)
        .set({ callId: call.id })
        .where(eq(campaignExecutions.id, execution!.id));
      return { callId: call.id, executionId: execution!.id };
    });
    // Just dialled: the dial may still be on its way to the carrier, so it is left alone.
    const inFlight = await executorStore.findExecution(t.database.db, tenant, executionId);
    await services.campaignRecovery.recoverAttempt(inFlight!);
    expect(dialsTo(to)).toHaveLength(0);
    expect(await executorStore.findExecution(t.database.db, tenant, executionId)).toMatchObject({
      status: 'in_progress',
      callId,
    });
    // A minute later the dial is lost for sure: the attempt is made again.
    await t.database.db
      .update(campaignExecutions)
      .set({ executedAt: new Date(Date.now() - 60_000) })
      .where(eq(campaignExecutions.id, executionId));
    const stale = await executorStore.findExecution(t.database.db, tenant, executionId);
    await services.campaignRecovery.recoverAttempt(stale!);

    const done = await settled(org, id, 'completed');
    expect(done.completed_contacts).toBe(1);
    const rows = await executionsOf(id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ attempt: 1, status: 'completed' });
    expect(rows[0]!.callId).not.toBe(callId);
    expect(dialsTo(to)).toHaveLength(1);
    const [orphan] = await t.database.db.select().from(calls).where(eq(calls.id, callId));
    expect(orphan!.status).toBe('failed');
    expect(String(orphan!.callMeta.error)).toMatch(/Never placed/);
  });
});

describe('schedules and retry delays', () => {
  it('a scheduled campaign starts by itself at its time', async () => {
    const org = await organization();
    const to = nextNumber();
    const id = await campaign(org, {}, [{ phone_number: to }]);
    const at = new Date(Date.now() + 2500);
    const scheduled = await t.app.inject({
      method: 'POST',
      url: `/api/v1/campaigns/${id}/schedule`,
      headers: org.admin.headers,
      payload: { schedule_type: 'scheduled', scheduled_at: at.toISOString() },
    });
    expect(scheduled.statusCode, scheduled.body).toBe(200);
    expect((await get(org, id)).status).toBe('scheduled');
    const done = await settled(org, id, 'completed', 30_000);
    expect(new Date(done.started_at).getTime()).toBeGreaterThanOrEqual(at.getTime());
    expect(dialsTo(to)).toHaveLength(1);
    const schedule = await t.app.inject({
      method: 'GET',
      url: `/api/v1/campaigns/${id}/schedule`,
      headers: org.admin.headers,
    });
    expect(schedule.json()).toMatchObject({ next_run_at: null });
    expect(schedule.json().last_run_at).not.toBeNull();
  });

  it('a recurring campaign contacts every contact once per occurrence, then waits for the next', async () => {
    const org = await organization();
    const numbers = [nextNumber(), nextNumber()];
    const id = await campaign(
      org,
      {},
      numbers.map((n) => ({ phone_number: n })),
    );
    const set = await t.app.inject({
      method: 'POST',
      url: `/api/v1/campaigns/${id}/schedule`,
      headers: org.admin.headers,
      payload: {
        schedule_type: 'recurring',
        recurring_config: { frequency: 'daily', time: '09:30', time_zone: 'Europe/Berlin' },
      },
    });
    expect(set.statusCode, set.body).toBe(200);
    // The occurrence's time comes (moved into the past instead of waiting for 09:30 in Berlin).
    const arrive = () =>
      t.database.db
        .update(campaignSchedules)
        .set({ nextRunAt: new Date(Date.now() - 1000) })
        .where(eq(campaignSchedules.campaignId, id));
    for (const occurrence of [0, 1]) {
      await arrive();
      await waitFor(async () => {
        const rows = await executionsOf(id);
        const row = await get(org, id);
        return rows.filter((r) => r.status === 'completed').length === 2 * (occurrence + 1) &&
          row.status === 'scheduled'
          ? row
          : undefined;
      }, 30_000);
      const [schedule] = await t.database.db
        .select()
        .from(campaignSchedules)
        .where(eq(campaignSchedules.campaignId, id));
      // The next occurrence: 09:30 in Berlin, in the future.
      expect(schedule!.nextRunAt!.getTime()).toBeGreaterThan(Date.now());
      expect(
        new Intl.DateTimeFormat('en-GB', {
          timeZone: 'Europe/Berlin',
          hour: '2-digit',
          minute: '2-digit',
        }).format(schedule!.nextRunAt!),
      ).toBe('09:30');
    }
    await sim.settle();
    for (const n of numbers) expect(dialsTo(n)).toHaveLength(2);
    const occurrences = await t.database.db
      .select({ occurrence: campaignExecutions.occurrence, attempt: campaignExecutions.attemptNumber })
      .from(campaignExecutions)
      .where(eq(campaignExecutions.campaignId, id))
      .orderBy(asc(campaignExecutions.occurrence));
    expect(occurrences).toEqual([
      { occurrence: 0, attempt: 1 },
      { occurrence: 0, attempt: 1 },
      { occurrence: 1, attempt: 1 },
      { occurrence: 1, attempt: 1 },
    ]);
    expect((await get(org, id)).completed_contacts).toBe(2);
  });

  it('a retry waits retry_delay_minutes (its wakeup queued for then), and runs once due', async () => {
    const org = await organization();
    const to = nextNumber();
    sim.setCallOutcome(to, { status: 'busy' });
    const id = await campaign(org, { retry_delay_minutes: 3, max_attempts: 2 }, [{ phone_number: to }]);
    const startedAt = Date.now();
    expect((await move(org, id, 'start')).statusCode).toBe(200);
    const waiting = await waitFor(async () => {
      const contact = (await contactsOf(id)).get(to)!;
      return contact.status === 'pending' && contact.nextAttemptAt ? contact : undefined;
    });
    const due = waiting.nextAttemptAt!.getTime();
    expect(due).toBeGreaterThanOrEqual(startedAt + 3 * 60_000);
    expect(due).toBeLessThan(Date.now() + 3 * 60_000 + 1000);
    const { rows } = await t.database.executeSql(
      `select start_after from pgboss.job where name = 'campaign.wakeup' and (data->>'campaign_id')::int = $1`,
      [id],
    );
    expect(rows).toHaveLength(1);
    expect(Math.abs(new Date(String(rows[0]!.start_after)).getTime() - due)).toBeLessThan(5000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(dialsTo(to)).toHaveLength(1); // not before its time
    // Its time comes.
    await t.database.db
      .update(campaignContacts)
      .set({ nextAttemptAt: new Date(Date.now() - 1000) })
      .where(eq(campaignContacts.id, waiting.id));
    const done = await settled(org, id, 'completed');
    expect(done.failed_contacts).toBe(1);
    expect(dialsTo(to)).toHaveLength(2);
  });
});

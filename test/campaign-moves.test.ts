/**
 * The campaign state machine: every move (start, pause, stop) from every state, the new state of
 * each allowed move and a 409 that changes nothing for each refused one; what start checks before a
 * campaign may run (contacts, assistant number, credentials, SMS template, balance); what start and
 * stop do to schedules, waiting contacts and attempts not yet started; and who may move what.
 * No job-queue workers run here, so nothing is dialled: the moves alone are under test (the
 * executor's runs are in campaign-execution.test.ts).
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CampaignStatus,
  campaignContacts,
  campaignExecutions,
  campaignSchedules,
  campaigns,
} from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { expectError } from './support/assertions.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  t = await startTestPlatform({ CARRIER_A_BASE_URL: 'http://127.0.0.1:9' }, { workers: false });
  f = new Factories(t);
});
afterAll(() => t.close());

const STATES: CampaignStatus[] = [
  'draft',
  'scheduled',
  'running',
  'paused',
  'completed',
  'cancelled',
  'failed',
];
type Move = 'start' | 'pause' | 'stop';

/** The document's moves (decisions §4): state → the state each move leads to; absent = refused. */
const TABLE: Record<Move, Partial<Record<CampaignStatus, CampaignStatus>>> = {
  start: { draft: 'running', scheduled: 'running', paused: 'running' },
  pause: { running: 'paused' },
  stop: { draft: 'cancelled', scheduled: 'cancelled', running: 'cancelled', paused: 'cancelled' },
};

type Org = CarrierOrganization;

function nextNumber(): string {
  serial += 1;
  return `+1415888${String(1000 + serial).padStart(4, '0')}`;
}

function organization(options: { credentials?: boolean; number?: boolean } = {}): Promise<Org> {
  return f.carrierOrganization({ assistantName: 'Mover', ...options });
}

async function campaign(org: Org, body: Record<string, unknown> = {}, contacts = 2): Promise<number> {
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: org.admin.headers,
    payload: { name: 'Moves', campaign_type: 'call', assistant_id: org.assistantId, ...body },
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as number;
  if (contacts > 0) {
    const added = await t.app.inject({
      method: 'POST',
      url: `/api/v1/campaigns/${id}/contacts`,
      headers: org.admin.headers,
      payload: { contacts: Array.from({ length: contacts }, () => ({ phone_number: nextNumber() })) },
    });
    expect(added.statusCode, added.body).toBe(200);
  }
  return id;
}

function move(headers: Record<string, string>, id: number, verb: Move | string) {
  return t.app.inject({ method: 'POST', url: `/api/v1/campaigns/${id}/${verb}`, headers });
}

async function row(id: number) {
  const [found] = await t.database.db.select().from(campaigns).where(eq(campaigns.id, id));
  return found!;
}

async function setStatus(id: number, status: CampaignStatus) {
  await t.database.db
    .update(campaigns)
    .set({ status, ...(status === 'draft' || status === 'scheduled' ? {} : { startedAt: new Date() }) })
    .where(eq(campaigns.id, id));
}

async function jobs(name: string, campaignId: number): Promise<number> {
  const { rows } = await t.database.executeSql(
    `select count(*)::int as n from pgboss.job where name = $1 and (data->>'campaign_id')::int = $2`,
    [name, campaignId],
  );
  return Number(rows[0]!.n);
}

describe('every move from every state', () => {
  const org = () => shared;
  let shared: Org;
  beforeAll(async () => {
    shared = await organization();
  });

  for (const verb of ['start', 'pause', 'stop'] as Move[]) {
    for (const from of STATES) {
      const to = TABLE[verb][from];
      it(`${verb} on ${from} → ${to ?? '409, unchanged'}`, async () => {
        const id = await campaign(org());
        await setStatus(id, from);
        const before = await row(id);
        const response = await move(org().admin.headers, id, verb);
        if (to) {
          expect(response.statusCode, response.body).toBe(200);
          expect(response.json()).toMatchObject({ id, status: to });
          expect((await row(id)).status).toBe(to);
        } else {
          expectError(response, 409, new RegExp(`${from} campaign cannot be`));
          const after = await row(id);
          expect(after.status).toBe(from);
          expect(after.updatedAt).toEqual(before.updatedAt);
        }
      });
    }
  }
});

describe('start', () => {
  it('starts a draft: running, started_at set, one dispatch queued', async () => {
    const org = await organization();
    const id = await campaign(org);
    const response = await move(org.admin.headers, id, 'start');
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().started_at).not.toBeNull();
    expect(response.json().completed_at).toBeNull();
    expect(await jobs('campaign.dispatch', id)).toBe(1);
  });

  it('a second start of a running campaign answers 409', async () => {
    const org = await organization();
    const id = await campaign(org);
    expect((await move(org.admin.headers, id, 'start')).statusCode).toBe(200);
    expectError(await move(org.admin.headers, id, 'start'), 409, /running campaign cannot be started/);
  });

  it('uses up a one-off schedule when started early, and keeps a recurring one', async () => {
    const org = await organization();
    const oneOff = await campaign(org);
    const recurring = await campaign(org);
    const next = new Date(Date.now() + 3_600_000);
    for (const [id, type] of [
      [oneOff, 'scheduled'],
      [recurring, 'recurring'],
    ] as const) {
      await setStatus(id, 'scheduled');
      await t.database.db.insert(campaignSchedules).values({
        campaignId: id,
        organizationId: org.admin.organizationId,
        scheduleType: type,
        scheduledAt: type === 'scheduled' ? next : null,
        recurringConfig: type === 'recurring' ? { frequency: 'daily', interval: 1, time: '09:00' } : null,
        nextRunAt: next,
      });
      expect((await move(org.admin.headers, id, 'start')).statusCode).toBe(200);
    }
    const schedule = async (id: number) =>
      (await t.database.db.select().from(campaignSchedules).where(eq(campaignSchedules.campaignId, id)))[0]!;
    expect((await schedule(oneOff)).nextRunAt).toBeNull();
    expect((await schedule(recurring)).nextRunAt).toEqual(next);
  });

  it('resuming hands out again the attempts claimed before the pause', async () => {
    const org = await organization();
    const id = await campaign(org, {}, 1);
    await setStatus(id, 'paused');
    const [contact] = await t.database.db
      .select()
      .from(campaignContacts)
      .where(eq(campaignContacts.campaignId, id));
    await t.database.db.insert(campaignExecutions).values({
      organizationId: org.admin.organizationId,
      campaignId: id,
      contactId: contact!.id,
      attemptNumber: 1,
      channel: 'call',
      status: 'pending',
    });
    expect((await move(org.admin.headers, id, 'start')).json().status).toBe('running');
    const { rows } = await t.database.executeSql(
      `select count(*)::int as n from pgboss.job j join campaign_executions e on e.id = (j.data->>'execution_id')::int
       where j.name = 'campaign.attempt' and e.campaign_id = $1`,
      [id],
    );
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('400 when the campaign could not run, naming why; the campaign stays a draft', async () => {
    const cases: Array<[string, () => Promise<[Org, number]>, RegExp]> = [
      [
        'no contacts',
        async () => {
          const org = await organization();
          return [org, await campaign(org, {}, 0)];
        },
        /no contacts/,
      ],
      [
        'no number routed to the assistant',
        async () => {
          const org = await organization({ number: false });
          return [org, await campaign(org)];
        },
        /No phone number is routed/,
      ],
      [
        'no carrier credentials',
        async () => {
          const org = await organization({ credentials: false });
          return [org, await campaign(org)];
        },
        /No carrier_a credentials/,
      ],
      [
        'an SMS campaign without its template',
        async () => {
          const org = await organization();
          return [org, await campaign(org, { campaign_type: 'sms' })];
        },
        /sms_message_template/,
      ],
    ];
    for (const [label, make, detail] of cases) {
      const [org, id] = await make();
      expectError(await move(org.admin.headers, id, 'start'), 400, detail);
      expect((await row(id)).status, label).toBe('draft');
    }
  });

  it('402 when the wallet is not above zero', async () => {
    const org = await organization();
    const id = await campaign(org);
    const { balance } = await t.platform.services.billing.wallet(new Tenant(org.admin.organizationId));
    await t.platform.services.billing.apply({
      organizationId: org.admin.organizationId,
      amount: -balance,
      kind: 'adjustment',
      description: 'empty the wallet',
    });
    expectError(await move(org.admin.headers, id, 'start'), 402, /balance/i);
    expect((await row(id)).status).toBe('draft');
  });
});

describe('stop', () => {
  it('skips waiting contacts and attempts not yet started; clears the schedule', async () => {
    const org = await organization();
    const id = await campaign(org, {}, 3);
    await setStatus(id, 'running');
    const contacts = await t.database.db
      .select()
      .from(campaignContacts)
      .where(eq(campaignContacts.campaignId, id))
      .orderBy(campaignContacts.id);
    // The first contact has an attempt under way, the second one claimed but not started.
    await t.database.db
      .update(campaignContacts)
      .set({ status: 'in_progress', attempts: 1 })
      .where(eq(campaignContacts.id, contacts[0]!.id));
    await t.database.db
      .update(campaignContacts)
      .set({ status: 'in_progress', attempts: 1 })
      .where(eq(campaignContacts.id, contacts[1]!.id));
    await t.database.db.insert(campaignExecutions).values([
      {
        organizationId: org.admin.organizationId,
        campaignId: id,
        contactId: contacts[0]!.id,
        attemptNumber: 1,
        channel: 'call',
        status: 'in_progress',
      },
      {
        organizationId: org.admin.organizationId,
        campaignId: id,
        contactId: contacts[1]!.id,
        attemptNumber: 1,
        channel: 'call',
        status: 'pending',
      },
    ]);
    await t.database.db.insert(campaignSchedules).values({
      campaignId: id,
      organizationId: org.admin.organizationId,
      scheduleType: 'recurring',
      recurringConfig: { frequency: 'daily', interval: 1, time: '09:00' },
      nextRunAt: new Date(Date.now() + 3_600_000),
    });
    const stopped = await move(org.admin.headers, id, 'stop');
    expect(stopped.statusCode, stopped.body).toBe(200);
    expect(stopped.json().status).toBe('cancelled');
    expect(stopped.json().completed_at).not.toBeNull();
    const after = await t.database.db
      .select({ status: campaignContacts.status })
      .from(campaignContacts)
      .where(eq(campaignContacts.campaignId, id))
      .orderBy(campaignContacts.id);
    expect(after.map((c) => c.status)).toEqual(['in_progress', 'skipped', 'skipped']);
    const executions = await t.database.db
      .select({ status: campaignExecutions.status })
      .from(campaignExecutions)
      .where(eq(campaignExecutions.campaignId, id))
      .orderBy(campaignExecutions.id);
    expect(executions.map((e) => e.status)).toEqual(['in_progress', 'skipped']);
    const [schedule] = await t.database.db
      .select()
      .from(campaignSchedules)
      .where(eq(campaignSchedules.campaignId, id));
    expect(schedule!.nextRunAt).toBeNull();
  });
});

describe('who may move a campaign', () => {
  it('401 without credentials, on every move', async () => {
    const org = await organization();
    const id = await campaign(org);
    for (const verb of ['start', 'pause', 'stop']) expectError(await move({}, id, verb), 401);
    expect((await row(id)).status).toBe('draft');
  });

  it('403 for an API key without campaigns write permission; a read_write key may move', async () => {
    const org = await organization();
    const id = await campaign(org);
    const reader = await f.apiKey(org.admin, { permissions: { campaigns: 'read' } });
    const none = await f.apiKey(org.admin, { permissions: { calls: 'read_write' } });
    for (const key of [reader, none])
      for (const verb of ['start', 'pause', 'stop']) expectError(await move(key.headers, id, verb), 403);
    expect((await row(id)).status).toBe('draft');
    const writer = await f.apiKey(org.admin, { permissions: { campaigns: 'read_write' } });
    expect((await move(writer.headers, id, 'start')).statusCode).toBe(200);
  });

  it("404 for another organization's campaign, which stays as it was", async () => {
    const org = await organization();
    const stranger = await organization();
    const id = await campaign(org);
    for (const verb of ['start', 'pause', 'stop'])
      expectError(await move(stranger.admin.headers, id, verb), 404);
    expect((await row(id)).status).toBe('draft');
    expectError(await move(org.admin.headers, 999_999_999, 'start'), 404);
  });

  it('422 for an id that is not a number', async () => {
    const org = await organization();
    expect((await move(org.admin.headers, 'abc' as unknown as number, 'start')).statusCode).toBe(422);
  });
});

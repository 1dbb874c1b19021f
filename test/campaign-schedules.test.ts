/**
 * Campaign schedules: POST/GET /api/v1/campaigns/{id}/schedule and POST …/unschedule. Every move of
 * the transition table, every refused one (409 in each other status, nothing changed), 400 for
 * every kind of bad body (schema and schedule rules), the `campaign.wakeup` job enqueued with the
 * schedule, and who may call what. Workers are off: no wakeup handler runs, the jobs stay queued.
 * Statuses other than draft and scheduled are set directly in the database.
 * The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CampaignStatus, campaigns } from '../src/db/schema/index.js';
import { nextRunAfter } from '../src/domains/campaigns/schedules/recurrence.js';
import { expectError, type Issue } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/campaigns';
const DAY = 86_400_000;
const REFUSING: CampaignStatus[] = ['running', 'paused', 'completed', 'cancelled', 'failed'];

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false });
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;

function setSchedule(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({
    method: 'POST',
    url: `${BASE}/${id}/schedule`,
    headers,
    payload: payload as object,
  });
}
function getSchedule(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}/schedule`, headers });
}
function unschedule(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'POST', url: `${BASE}/${id}/unschedule`, headers });
}

async function owner(): Promise<{ user: TestUser; assistantId: number }> {
  const user = await f.user();
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `Caller ${Math.random().toString(36).slice(2)}` },
  });
  expect(response.statusCode, response.body).toBe(201);
  return { user, assistantId: response.json().id };
}

async function createCampaign(user: TestUser, assistantId: number): Promise<number> {
  const response = await t.app.inject({
    method: 'POST',
    url: BASE,
    headers: user.headers,
    payload: { name: 'Spring renewals', campaign_type: 'call', assistant_id: assistantId },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function draft(): Promise<{ user: TestUser; id: number }> {
  const { user, assistantId } = await owner();
  return { user, id: await createCampaign(user, assistantId) };
}

async function statusOf(id: number): Promise<CampaignStatus> {
  const [row] = await t.database.db
    .select({ status: campaigns.status })
    .from(campaigns)
    .where(eq(campaigns.id, id));
  return row!.status;
}

async function setStatus(id: number, status: CampaignStatus): Promise<void> {
  await t.database.db.update(campaigns).set({ status }).where(eq(campaigns.id, id));
}

/** The campaign.wakeup jobs of a campaign, oldest first. */
async function wakeups(id: number): Promise<Array<{ state: string; startAfter: Date; data: Json }>> {
  const { rows } = await t.database.executeSql(
    "select state, start_after, data from pgboss.job where name = 'campaign.wakeup' and (data->>'campaign_id')::int = $1 order by created_on, id",
    [id],
  );
  return rows.map((row) => ({
    state: String(row.state),
    startAfter: new Date(row.start_after as string),
    data: (typeof row.data === 'string' ? JSON.parse(row.data) : row.data) as Json,
  }));
}

const inDays = (days: number) => new Date(Date.now() + days * DAY);
/** A whole second, so the API's ISO string and ours compare equal. */
const seconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000);

function expectOk(response: LightMyRequestResponse): string {
  expect(response.statusCode, response.body).toBe(200);
  const body = response.json();
  expect(Object.keys(body).sort()).toEqual(['message', 'success']);
  expect(body.success).toBe(true);
  expect(typeof body.message).toBe('string');
  return body.message;
}

/** A 400 in the validation envelope, with an issue at `loc` (of `type`, when given). */
function expect400(response: LightMyRequestResponse, loc: Array<string | number>, type?: string): void {
  expect(response.statusCode, response.body).toBe(400);
  const detail = response.json().detail as Issue[];
  expect(Array.isArray(detail), response.body).toBe(true);
  for (const each of detail) expect(Object.keys(each).sort()).toEqual(['loc', 'msg', 'type']);
  const issue = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  expect(issue, `no issue at ${JSON.stringify(loc)} in ${response.body}`).toBeDefined();
  if (type) expect(issue?.type, response.body).toBe(type);
}

const EMPTY = {
  schedule_type: 'immediate',
  scheduled_at: null,
  timezone: 'UTC',
  recurring_config: null,
  next_run_at: null,
  last_run_at: null,
};

describe('setting a schedule', () => {
  it('a campaign without a schedule reads as immediate, with nulls', async () => {
    const { user, id } = await draft();
    const response = await getSchedule(user.headers, id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ campaign_id: id, ...EMPTY });
  });

  it('scheduled on a draft: status scheduled, the schedule saved, a wakeup job for next_run_at', async () => {
    const { user, id } = await draft();
    const at = seconds(inDays(2));
    const message = expectOk(
      await setSchedule(user.headers, id, { schedule_type: 'scheduled', scheduled_at: at.toISOString() }),
    );
    expect(message).toContain(at.toISOString());
    expect(await statusOf(id)).toBe('scheduled');
    const schedule = (await getSchedule(user.headers, id)).json();
    expect(schedule).toEqual({
      campaign_id: id,
      schedule_type: 'scheduled',
      scheduled_at: at.toISOString(),
      timezone: 'UTC',
      recurring_config: null,
      next_run_at: at.toISOString(),
      last_run_at: null,
    });
    const jobs = await wakeups(id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.state).toBe('created');
    expect(jobs[0]!.data).toEqual({ campaign_id: id, organization_id: user.organizationId });
    // Rounded up to whole seconds: never before next_run_at, at most a moment after.
    const lag = jobs[0]!.startAfter.getTime() - at.getTime();
    expect(lag).toBeGreaterThanOrEqual(-1000);
    expect(lag).toBeLessThan(5000);
  });

  it('reads a time without an offset as wall-clock time in timezone', async () => {
    const { user, id } = await draft();
    const year = new Date().getUTCFullYear() + 1;
    expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'scheduled',
        scheduled_at: `${year}-07-01T09:00:00`,
        timezone: 'America/New_York',
      }),
    );
    const schedule = (await getSchedule(user.headers, id)).json();
    expect(schedule.scheduled_at).toBe(`${year}-07-01T13:00:00.000Z`);
    expect(schedule.timezone).toBe('America/New_York');
    expect(schedule.next_run_at).toBe(`${year}-07-01T13:00:00.000Z`);
  });

  it('recurring on a draft: status scheduled, the normalised config without internal keys, next_run_at', async () => {
    const { user, id } = await draft();
    const before = new Date();
    const config = { frequency: 'weekly', interval: 2, days_of_week: [5, 1], time: '09:30' };
    const message = expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'recurring',
        timezone: 'Europe/Berlin',
        recurring_config: config,
      }),
    );
    expect(message).toMatch(/first run/);
    expect(await statusOf(id)).toBe('scheduled');
    const schedule = (await getSchedule(user.headers, id)).json();
    expect(schedule).toMatchObject({
      campaign_id: id,
      schedule_type: 'recurring',
      scheduled_at: null,
      timezone: 'Europe/Berlin',
      recurring_config: {
        frequency: 'weekly',
        interval: 2,
        days_of_week: [1, 5],
        time: '09:30',
        time_zone: 'Europe/Berlin',
        end_date: null,
      },
      last_run_at: null,
    });
    expect(Object.keys(schedule.recurring_config)).not.toContain('anchor_date');
    // The same rules, anchored today: next_run_at is the first run after the request.
    const expected = nextRunAfter(
      {
        scheduleType: 'recurring',
        scheduledAt: null,
        timezone: 'Europe/Berlin',
        recurringConfig: { ...schedule.recurring_config },
        anchor: before,
      },
      before,
    );
    expect(schedule.next_run_at).toBe(expected?.toISOString());
    const jobs = await wakeups(id);
    expect(jobs).toHaveLength(1);
    expect(Math.abs(jobs[0]!.startAfter.getTime() - expected!.getTime())).toBeLessThan(5000);
  });

  it('a schedule on a scheduled campaign replaces the one before and stays scheduled', async () => {
    const { user, id } = await draft();
    const first = seconds(inDays(3));
    const second = seconds(inDays(1));
    expectOk(
      await setSchedule(user.headers, id, { schedule_type: 'scheduled', scheduled_at: first.toISOString() }),
    );
    expectOk(
      await setSchedule(user.headers, id, { schedule_type: 'scheduled', scheduled_at: second.toISOString() }),
    );
    expect(await statusOf(id)).toBe('scheduled');
    expect((await getSchedule(user.headers, id)).json()).toMatchObject({
      schedule_type: 'scheduled',
      scheduled_at: second.toISOString(),
      next_run_at: second.toISOString(),
    });
    expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'recurring',
        recurring_config: { frequency: 'daily', time: '06:00' },
      }),
    );
    const replaced = (await getSchedule(user.headers, id)).json();
    expect(replaced).toMatchObject({ schedule_type: 'recurring', scheduled_at: null, timezone: 'UTC' });
    expect(replaced.recurring_config).toEqual({
      frequency: 'daily',
      interval: 1,
      time: '06:00',
      time_zone: 'UTC',
      end_date: null,
    });
    // One wakeup per schedule set; the earlier ones find nothing due when they come.
    const jobs = await wakeups(id);
    expect(jobs).toHaveLength(3);
    expect(Math.abs(jobs[1]!.startAfter.getTime() - second.getTime())).toBeLessThan(5000);
    expect(Math.abs(jobs[2]!.startAfter.getTime() - Date.parse(replaced.next_run_at))).toBeLessThan(5000);
  });

  it('immediate on a scheduled campaign: back to draft, the schedule cleared', async () => {
    const { user, id } = await draft();
    expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'scheduled',
        scheduled_at: inDays(1).toISOString(),
      }),
    );
    expect(expectOk(await setSchedule(user.headers, id, { schedule_type: 'immediate' }))).toMatch(/cleared/);
    expect(await statusOf(id)).toBe('draft');
    expect((await getSchedule(user.headers, id)).json()).toEqual({ campaign_id: id, ...EMPTY });
  });

  it('immediate on a draft: success, and it stays a draft', async () => {
    const { user, id } = await draft();
    expectOk(await setSchedule(user.headers, id, { schedule_type: 'immediate', timezone: 'Asia/Tokyo' }));
    expect(await statusOf(id)).toBe('draft');
    expect((await getSchedule(user.headers, id)).json()).toEqual({ campaign_id: id, ...EMPTY });
    expect(await wakeups(id)).toEqual([]);
  });

  it.each(REFUSING)(
    'refuses every schedule change of a %s campaign (409) and changes nothing',
    async (status) => {
      const { user, id } = await draft();
      const at = seconds(inDays(2)).toISOString();
      expectOk(await setSchedule(user.headers, id, { schedule_type: 'scheduled', scheduled_at: at }));
      const saved = (await getSchedule(user.headers, id)).json();
      await setStatus(id, status);
      const bodies = [
        { schedule_type: 'scheduled', scheduled_at: inDays(5).toISOString() },
        { schedule_type: 'recurring', recurring_config: { frequency: 'daily', time: '10:00' } },
        { schedule_type: 'immediate' },
      ];
      for (const body of bodies)
        expectError(await setSchedule(user.headers, id, body), 409, new RegExp(status));
      expectError(await unschedule(user.headers, id), 409, new RegExp(status));
      expect(await statusOf(id)).toBe(status);
      expect((await getSchedule(user.headers, id)).json()).toEqual(saved);
      expect(await wakeups(id)).toHaveLength(1);
    },
  );
});

describe('unscheduling', () => {
  it('takes a scheduled campaign back to draft and deletes its schedule', async () => {
    const { user, id } = await draft();
    expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'recurring',
        recurring_config: { frequency: 'monthly', day_of_month: 31, time: '12:00' },
      }),
    );
    expectOk(await unschedule(user.headers, id));
    expect(await statusOf(id)).toBe('draft');
    expect((await getSchedule(user.headers, id)).json()).toEqual({ campaign_id: id, ...EMPTY });
  });

  it('refuses a draft (409)', async () => {
    const { user, id } = await draft();
    expectError(await unschedule(user.headers, id), 409, /draft/);
    expect(await statusOf(id)).toBe('draft');
  });

  it('two unschedules at once: one succeeds, the other finds a draft (409)', async () => {
    const { user, id } = await draft();
    expectOk(
      await setSchedule(user.headers, id, {
        schedule_type: 'scheduled',
        scheduled_at: inDays(1).toISOString(),
      }),
    );
    const answers = await Promise.all([unschedule(user.headers, id), unschedule(user.headers, id)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409]);
    expect(await statusOf(id)).toBe('draft');
  });
});

describe('bad schedules answer 400', () => {
  const past = () => new Date(Date.now() - 60_000).toISOString();
  const future = () => inDays(1).toISOString();
  const daily = { frequency: 'daily', time: '09:00' };

  it.each<[string, () => unknown, Array<string | number>, string | undefined]>([
    ['no body', () => undefined, ['body'], undefined],
    ['an empty object', () => ({}), ['body', 'schedule_type'], 'missing'],
    ['an unknown schedule_type', () => ({ schedule_type: 'hourly' }), ['body', 'schedule_type'], undefined],
    [
      'an unknown key',
      () => ({ schedule_type: 'immediate', start: 'now' }),
      ['body', 'start'],
      'extra_forbidden',
    ],
    [
      'scheduled without scheduled_at',
      () => ({ schedule_type: 'scheduled' }),
      ['body', 'scheduled_at'],
      'missing',
    ],
    [
      'a time in the past',
      () => ({ schedule_type: 'scheduled', scheduled_at: past() }),
      ['body', 'scheduled_at'],
      'datetime_future',
    ],
    [
      'a time in the year 10000 (UTC)',
      () => ({ schedule_type: 'scheduled', scheduled_at: '9999-12-31T23:59:59-14:00' }),
      ['body', 'scheduled_at'],
      'datetime_too_late',
    ],
    [
      'a time that is no date',
      () => ({ schedule_type: 'scheduled', scheduled_at: 'next week' }),
      ['body', 'scheduled_at'],
      'datetime_parsing',
    ],
    [
      'a bad time zone',
      () => ({ schedule_type: 'scheduled', scheduled_at: future(), timezone: 'Mars/Base' }),
      ['body', 'timezone'],
      'time_zone',
    ],
    [
      'recurring without a config',
      () => ({ schedule_type: 'recurring' }),
      ['body', 'recurring_config'],
      'missing',
    ],
    [
      'an unknown frequency',
      () => ({ schedule_type: 'recurring', recurring_config: { ...daily, frequency: 'yearly' } }),
      ['body', 'recurring_config', 'frequency'],
      undefined,
    ],
    [
      'interval 0',
      () => ({ schedule_type: 'recurring', recurring_config: { ...daily, interval: 0 } }),
      ['body', 'recurring_config', 'interval'],
      undefined,
    ],
    [
      'weekly without days',
      () => ({ schedule_type: 'recurring', recurring_config: { frequency: 'weekly', time: '09:00' } }),
      ['body', 'recurring_config', 'days_of_week'],
      'missing',
    ],
    [
      'a repeated day',
      () => ({
        schedule_type: 'recurring',
        recurring_config: { frequency: 'weekly', time: '09:00', days_of_week: [2, 2] },
      }),
      ['body', 'recurring_config', 'days_of_week'],
      undefined,
    ],
    [
      'monthly without a day',
      () => ({ schedule_type: 'recurring', recurring_config: { frequency: 'monthly', time: '09:00' } }),
      ['body', 'recurring_config', 'day_of_month'],
      'missing',
    ],
    [
      'day_of_month 32',
      () => ({
        schedule_type: 'recurring',
        recurring_config: { frequency: 'monthly', time: '09:00', day_of_month: 32 },
      }),
      ['body', 'recurring_config', 'day_of_month'],
      undefined,
    ],
    [
      'a bad time',
      () => ({ schedule_type: 'recurring', recurring_config: { frequency: 'daily', time: '9am' } }),
      ['body', 'recurring_config', 'time'],
      undefined,
    ],
    [
      'a bad recurrence zone',
      () => ({ schedule_type: 'recurring', recurring_config: { ...daily, time_zone: 'Europe/Nowhere' } }),
      ['body', 'recurring_config', 'time_zone'],
      'time_zone',
    ],
    [
      'an end date in the past',
      () => ({ schedule_type: 'recurring', recurring_config: { ...daily, end_date: '2020-01-01' } }),
      ['body', 'recurring_config', 'end_date'],
      'date_past',
    ],
    [
      'an unknown config key',
      () => ({ schedule_type: 'recurring', recurring_config: { ...daily, anchor_date: '2020-01-01' } }),
      ['body', 'recurring_config', 'anchor_date'],
      'extra_forbidden',
    ],
    [
      'a config with immediate',
      () => ({ schedule_type: 'immediate', recurring_config: daily }),
      ['body', 'recurring_config'],
      'extra_forbidden',
    ],
  ])('%s', async (_name, body, loc, type) => {
    const { user, id } = await draft();
    expect400(await setSchedule(user.headers, id, body()), loc, type);
    expect(await statusOf(id)).toBe('draft');
    expect(await wakeups(id)).toEqual([]);
  });

  it('malformed JSON', async () => {
    const { user, id } = await draft();
    const response = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${id}/schedule`,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"schedule_type":',
    });
    expect400(response, ['body'], 'json_invalid');
  });

  it('a path id that is no id', async () => {
    const { user } = await draft();
    expect400(await setSchedule(user.headers, 'abc', { schedule_type: 'immediate' }), [
      'path',
      'campaign_id',
    ]);
    expect400(await unschedule(user.headers, 0), ['path', 'campaign_id']);
  });

  it('reports the schedule rules all at once', async () => {
    const { user, id } = await draft();
    const response = await setSchedule(user.headers, id, {
      schedule_type: 'recurring',
      timezone: 'Bad/Zone',
      recurring_config: {
        frequency: 'daily',
        time: '09:00',
        time_zone: 'Worse/Zone',
        end_date: '2020-02-02',
      },
    });
    expect400(response, ['body', 'timezone']);
    expect400(response, ['body', 'recurring_config', 'time_zone']);
    expect(response.json().detail).toHaveLength(2);
  });

  it('is documented as 400, not 422', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [`${BASE}/{campaign_id}/schedule`, `${BASE}/{campaign_id}/unschedule`]) {
      const responses = document.paths[path].post.responses;
      expect(Object.keys(responses)).toEqual(
        expect.arrayContaining(['200', '400', '401', '403', '404', '409']),
      );
      expect(Object.keys(responses)).not.toContain('422');
    }
  });
});

describe('who may schedule', () => {
  function everyRoute(headers: Headers, id: number) {
    return [
      () => setSchedule(headers, id, { schedule_type: 'scheduled', scheduled_at: inDays(1).toISOString() }),
      () => getSchedule(headers, id),
      () => unschedule(headers, id),
    ];
  }

  it('answers 401 without credentials or with a bad token, and changes nothing', async () => {
    const { id } = await draft();
    const anonymous: Headers[] = [
      {},
      { authorization: 'Bearer not-a-token' },
      { authorization: 'Bearer sk_nope' },
    ];
    for (const headers of anonymous) {
      for (const send of everyRoute(headers, id)) expectError(await send(), 401);
    }
    expect(await statusOf(id)).toBe('draft');
  });

  it('refuses an API key without the campaigns area (403)', async () => {
    const { user, id } = await draft();
    const key = await f.apiKey(user, { permissions: { assistants: 'read_write', calls: 'read_write' } });
    for (const send of everyRoute(key.headers, id)) expectError(await send(), 403);
    expect(await statusOf(id)).toBe('draft');
  });

  it('lets a campaigns:read key read the schedule but not change it (403)', async () => {
    const { user, id } = await draft();
    const key = await f.apiKey(user, { permissions: { campaigns: 'read' } });
    expect((await getSchedule(key.headers, id)).statusCode).toBe(200);
    expectError(await setSchedule(key.headers, id, { schedule_type: 'immediate' }), 403);
    expectError(await unschedule(key.headers, id), 403);
  });

  it('lets a campaigns:read_write key and a member (role user) schedule', async () => {
    const { user, id } = await draft();
    const key = await f.apiKey(user, { permissions: { campaigns: 'read_write' } });
    expectOk(
      await setSchedule(key.headers, id, {
        schedule_type: 'scheduled',
        scheduled_at: inDays(1).toISOString(),
      }),
    );
    const member = await f.member(user.organizationId, 'user');
    expectOk(await unschedule(member.headers, id));
    expect(await statusOf(id)).toBe('draft');
  });

  it("answers 404 for another organization's campaign and for none, and changes nothing", async () => {
    const { id } = await draft();
    const stranger = await f.user();
    for (const send of everyRoute(stranger.headers, id)) expectError(await send(), 404);
    expectError(await setSchedule(stranger.headers, id, { schedule_type: 'immediate' }), 404);
    for (const send of everyRoute(stranger.headers, 2_000_000_000)) expectError(await send(), 404);
    expect(await statusOf(id)).toBe('draft');
    expect(await wakeups(id)).toEqual([]);
  });
});

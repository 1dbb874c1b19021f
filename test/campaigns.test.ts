/**
 * Campaigns: POST/GET /api/v1/campaigns, GET/PUT/DELETE /api/v1/campaigns/{id} and
 * POST /api/v1/campaigns/template-preview. The response shape and defaults, one test per validation
 * rule (names, types, the assistant, templates with positions, fallbacks, variable mappings, limits,
 * read-only fields), list filters and the pagination arithmetic, metrics computed from contacts and
 * executions, changes and deletion refused while running, the preview's filters and fallbacks, who
 * may (not) call what, and the assistant that cannot be deleted while an unfinished campaign uses it.
 * Statuses other than draft are set directly in the database (the moves are not built yet).
 * The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CampaignStatus,
  calls,
  campaignContacts,
  campaignExecutions,
  campaigns,
} from '../src/db/schema/index.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/campaigns';
const PREVIEW = `${BASE}/template-preview`;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const RESPONSE_FIELDS = [
  'id',
  'organization_id',
  'name',
  'description',
  'campaign_type',
  'status',
  'assistant_id',
  'assistant_name',
  'welcome_message_template',
  'agenda_template',
  'end_call_message_template',
  'sms_message_template',
  'fallback_values',
  'variable_mappings',
  'available_variables',
  'max_attempts',
  'retry_delay_minutes',
  'concurrency_limit',
  'total_contacts',
  'completed_contacts',
  'failed_contacts',
  'failure_reason',
  'created_at',
  'updated_at',
  'started_at',
  'completed_at',
  'metrics',
].sort();
const METRIC_FIELDS = [
  'success_rate',
  'answer_rate',
  'average_duration_seconds',
  'total_duration_seconds',
  'actual_cost',
].sort();
const ZERO_METRICS = {
  success_rate: 0,
  answer_rate: 0,
  average_duration_seconds: 0,
  total_duration_seconds: 0,
  actual_cost: 0,
};
const STANDARD_VARIABLES = ['name', 'company', 'email', 'phone_number', 'assistant_name'];
const TEMPLATE_FIELDS = [
  'welcome_message_template',
  'agenda_template',
  'end_call_message_template',
  'sms_message_template',
] as const;
const UNFINISHED: CampaignStatus[] = ['draft', 'scheduled', 'running', 'paused'];
const FINISHED: CampaignStatus[] = ['completed', 'cancelled', 'failed'];

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  // Campaigns here are put in states by hand (a `running` one with no contacts, say): the periodic
  // sweep, which would dispatch and so complete them, must not run in the middle of a test.
  t = await startTestPlatform({ CAMPAIGN_SWEEP_INTERVAL_SECONDS: '3600' });
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;
type Campaign = Json & {
  id: number;
  name: string;
  status: CampaignStatus;
  assistant_id: number | null;
  updated_at: string;
  metrics: Json;
};
interface Pagination {
  page: number;
  per_page: number;
  total_items: number;
  total_pages: number;
  has_next: boolean;
  has_prev: boolean;
}

function create(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
}
function list(headers: Headers, query = '') {
  return t.app.inject({ method: 'GET', url: `${BASE}${query}`, headers });
}
function get(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers });
}
function update(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${BASE}/${id}`, headers, payload: payload as object });
}
function remove(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers });
}
function preview(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: PREVIEW, headers, payload: payload as object });
}
function deleteAssistant(user: TestUser, id: number) {
  return t.app.inject({ method: 'DELETE', url: `/api/v1/assistants/${id}`, headers: user.headers });
}

let assistantSerial = 0;
async function createAssistant(user: TestUser, name?: string): Promise<{ id: number; name: string }> {
  assistantSerial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: name ?? `Caller ${assistantSerial}` },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** A user with an assistant, ready to create campaigns. */
async function owner(): Promise<{ user: TestUser; assistant: { id: number; name: string } }> {
  const user = await f.user();
  return { user, assistant: await createAssistant(user) };
}

async function createCampaign(user: TestUser, assistantId: number, payload: Json = {}): Promise<Campaign> {
  const response = await create(user.headers, {
    name: 'Spring renewals',
    campaign_type: 'call',
    assistant_id: assistantId,
    ...payload,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function setStatus(id: number, status: CampaignStatus): Promise<void> {
  await t.database.db.update(campaigns).set({ status }).where(eq(campaigns.id, id));
}

async function storedRow(id: number) {
  const [row] = await t.database.db.select().from(campaigns).where(eq(campaigns.id, id));
  return row;
}

async function countOf(user: TestUser): Promise<number> {
  const response = await list(user.headers);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json().pagination as Pagination).total_items;
}

describe('POST /api/v1/campaigns', () => {
  it('answers 201 with every documented field, status draft and the defaults; GET returns the same', async () => {
    const { user, assistant } = await owner();
    const response = await create(user.headers, {
      name: 'Spring renewals',
      campaign_type: 'call',
      assistant_id: assistant.id,
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json() as Campaign;
    expect(Object.keys(body).sort()).toEqual(RESPONSE_FIELDS);
    expect(Object.keys(body.metrics).sort()).toEqual(METRIC_FIELDS);
    expect(body).toMatchObject({
      organization_id: user.organizationId,
      name: 'Spring renewals',
      description: null,
      campaign_type: 'call',
      status: 'draft',
      assistant_id: assistant.id,
      assistant_name: assistant.name,
      welcome_message_template: null,
      agenda_template: null,
      end_call_message_template: null,
      sms_message_template: null,
      fallback_values: {},
      variable_mappings: {},
      available_variables: STANDARD_VARIABLES,
      max_attempts: 3,
      retry_delay_minutes: 30,
      concurrency_limit: 5,
      total_contacts: 0,
      completed_contacts: 0,
      failed_contacts: 0,
      failure_reason: null,
      started_at: null,
      completed_at: null,
      metrics: ZERO_METRICS,
    });
    expect(Number.isInteger(body.id) && body.id > 0).toBe(true);
    expect(body.created_at).toMatch(ISO);
    expect(body.updated_at).toMatch(ISO);
    const fetched = await get(user.headers, body.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(body);
    expect(await storedRow(body.id)).toMatchObject({ createdByUserId: user.id, status: 'draft' });
  });

  it('stores every field given', async () => {
    const { user, assistant } = await owner();
    const payload = {
      name: '  Winter outreach  ',
      description: 'Calls then texts',
      campaign_type: 'mixed',
      assistant_id: assistant.id,
      welcome_message_template: 'Hi {{ name | title_case }}, this is {{assistant_name}}.',
      agenda_template: 'Talk about {{ plan | default("your plan") }} at {{company}}',
      end_call_message_template: 'Goodbye {{name}}',
      sms_message_template: 'We tried to reach {{ phone | phone_format }}',
      fallback_values: { name: 'there', discount: 10, vip: false, note: null },
      variable_mappings: { plan: 'custom_fields.plan', phone: 'phone_number', who: 'name' },
      max_attempts: 5,
      retry_delay_minutes: 120,
      concurrency_limit: 20,
    };
    const created = await create(user.headers, payload);
    expect(created.statusCode, created.body).toBe(201);
    const { name: _name, ...rest } = payload;
    expect(created.json()).toMatchObject({ ...rest, name: 'Winter outreach', status: 'draft' });
    expect((await get(user.headers, created.json().id)).json()).toEqual(created.json());
  });

  it('accepts each campaign_type: call, sms, mixed', async () => {
    const { user, assistant } = await owner();
    for (const campaignType of ['call', 'sms', 'mixed']) {
      const created = await createCampaign(user, assistant.id, { campaign_type: campaignType });
      expect(created.campaign_type).toBe(campaignType);
    }
  });

  it('takes names of 1 and 200 characters; refuses 0, 201, blank, missing and non-strings (422 at name)', async () => {
    const { user, assistant } = await owner();
    const base = { campaign_type: 'sms', assistant_id: assistant.id };
    for (const name of ['x', 'n'.repeat(200)]) {
      const created = await create(user.headers, { ...base, name });
      expect(created.statusCode, created.body).toBe(201);
      expect(created.json().name).toBe(name);
    }
    expectValidation(await create(user.headers, { ...base, name: '' }), ['body', 'name'], 'string_too_short');
    expectValidation(
      await create(user.headers, { ...base, name: 'n'.repeat(201) }),
      ['body', 'name'],
      'string_too_long',
    );
    expectValidation(
      await create(user.headers, { ...base, name: '   ' }),
      ['body', 'name'],
      'string_too_short',
    );
    expectValidation(await create(user.headers, base), ['body', 'name'], 'missing');
    for (const name of [null, 7, ['a'], { a: 1 }])
      expectValidation(await create(user.headers, { ...base, name }), ['body', 'name']);
    expect(await countOf(user)).toBe(2);
  });

  it('refuses a description over 2000 characters or not a string; null and blank mean none', async () => {
    const { user, assistant } = await owner();
    expectValidation(
      await create(user.headers, {
        name: 'x',
        campaign_type: 'call',
        assistant_id: assistant.id,
        description: 'd'.repeat(2001),
      }),
      ['body', 'description'],
      'string_too_long',
    );
    expectValidation(
      await create(user.headers, {
        name: 'x',
        campaign_type: 'call',
        assistant_id: assistant.id,
        description: 5,
      }),
      ['body', 'description'],
    );
    expect((await createCampaign(user, assistant.id, { description: null })).description).toBeNull();
    expect((await createCampaign(user, assistant.id, { description: '   ' })).description).toBeNull();
    expect(
      (await createCampaign(user, assistant.id, { description: 'd'.repeat(2000) })).description,
    ).toHaveLength(2000);
  });

  it('refuses any other campaign_type, and a missing one (422 at campaign_type)', async () => {
    const { user, assistant } = await owner();
    for (const campaignType of ['voice', 'CALL', '', null, 1]) {
      expectValidation(
        await create(user.headers, { name: 'x', campaign_type: campaignType, assistant_id: assistant.id }),
        ['body', 'campaign_type'],
      );
    }
    expectValidation(
      await create(user.headers, { name: 'x', assistant_id: assistant.id }),
      ['body', 'campaign_type'],
      'missing',
    );
    expect(await countOf(user)).toBe(0);
  });

  it("refuses a missing, malformed, unknown, deleted or another organization's assistant (422 at assistant_id)", async () => {
    const { user } = await owner();
    const stranger = await owner();
    const gone = await createAssistant(user);
    expect((await deleteAssistant(user, gone.id)).statusCode).toBe(204);
    const base = { name: 'x', campaign_type: 'call' };
    expectValidation(await create(user.headers, base), ['body', 'assistant_id'], 'missing');
    for (const assistantId of [0, -1, 2_147_483_648, 1.5, 'abc', null])
      expectValidation(await create(user.headers, { ...base, assistant_id: assistantId }), [
        'body',
        'assistant_id',
      ]);
    for (const assistantId of [stranger.assistant.id, gone.id, 2_147_483_647]) {
      const refused = await create(user.headers, { ...base, assistant_id: assistantId });
      expectValidation(refused, ['body', 'assistant_id']);
      expect(refused.body).toContain('No assistant with this id in your organization');
    }
    expect(await countOf(user)).toBe(0);
  });

  it('refuses a template that does not parse (422 naming the field and the position), in every template field', async () => {
    const { user, assistant } = await owner();
    const broken: Array<[string, number, RegExp]> = [
      ['Hello {{ name', 6, /never closed/],
      ['Hi {{ name | shout }}', 12, /Unknown filter "shout"/],
      ['Hi {{ }}', 5, /needs a variable name/],
      ['Hi {{ 1abc }}', 5, /not a variable name/],
      ['Hi {{ name | default(nope) }}', 21, /quoted strings or numbers/],
    ];
    for (const field of TEMPLATE_FIELDS) {
      for (const [template, position, message] of broken) {
        const refused = await create(user.headers, {
          name: 'x',
          campaign_type: 'mixed',
          assistant_id: assistant.id,
          [field]: template,
        });
        expectValidation(refused, ['body', field], 'template_syntax');
        const issue = (refused.json().detail as Array<{ loc: string[]; msg: string }>).find(
          (d) => d.loc[1] === field,
        );
        expect(issue?.msg).toMatch(message);
        expect(issue?.msg).toContain(`at position ${position}`);
      }
    }
    expect(await countOf(user)).toBe(0);
  });

  it('reports every broken template (and an unknown assistant) at once', async () => {
    const { user } = await owner();
    const refused = await create(user.headers, {
      name: 'x',
      campaign_type: 'mixed',
      assistant_id: 2_000_000_000,
      welcome_message_template: '{{ a | nope }}',
      sms_message_template: '{{ b',
    });
    expect(refused.statusCode).toBe(422);
    const locs = (refused.json().detail as Array<{ loc: string[] }>).map((d) => d.loc.join('.')).sort();
    expect(locs).toEqual(['body.assistant_id', 'body.sms_message_template', 'body.welcome_message_template']);
  });

  it('refuses templates over 10,000 characters or not strings; null and blank store none', async () => {
    const { user, assistant } = await owner();
    for (const field of TEMPLATE_FIELDS) {
      expectValidation(
        await create(user.headers, {
          name: 'x',
          campaign_type: 'call',
          assistant_id: assistant.id,
          [field]: 'a'.repeat(10_001),
        }),
        ['body', field],
        'string_too_long',
      );
      expectValidation(
        await create(user.headers, {
          name: 'x',
          campaign_type: 'call',
          assistant_id: assistant.id,
          [field]: 3,
        }),
        ['body', field],
      );
      expect((await createCampaign(user, assistant.id, { [field]: null }))[field]).toBeNull();
      expect((await createCampaign(user, assistant.id, { [field]: '  ' }))[field]).toBeNull();
      expect((await createCampaign(user, assistant.id, { [field]: 'a'.repeat(10_000) }))[field]).toHaveLength(
        10_000,
      );
    }
  });

  it('fallback_values: an object of variable names to strings, numbers, booleans or null (422 otherwise)', async () => {
    const { user, assistant } = await owner();
    const base = { name: 'x', campaign_type: 'call', assistant_id: assistant.id };
    for (const value of [[], 'x', 1, null])
      expectValidation(await create(user.headers, { ...base, fallback_values: value }), [
        'body',
        'fallback_values',
      ]);
    expectValidation(await create(user.headers, { ...base, fallback_values: { plan: { nested: 1 } } }), [
      'body',
      'fallback_values',
      'plan',
    ]);
    expectValidation(await create(user.headers, { ...base, fallback_values: { plan: 'p'.repeat(1001) } }), [
      'body',
      'fallback_values',
      'plan',
    ]);
    for (const key of ['first name', '1st', 'a.b', ''])
      expectValidation(await create(user.headers, { ...base, fallback_values: { [key]: 'x' } }), [
        'body',
        'fallback_values',
        key,
      ]);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`v${i}`, 'x']));
    expectValidation(await create(user.headers, { ...base, fallback_values: many }), [
      'body',
      'fallback_values',
    ]);
    expect(await countOf(user)).toBe(0);
  });

  it('variable_mappings: variable name → name, company, email, phone_number or custom_fields.<key> (422 otherwise)', async () => {
    const { user, assistant } = await owner();
    const base = { name: 'x', campaign_type: 'call', assistant_id: assistant.id };
    const good = {
      a: 'name',
      b: 'company',
      c: 'email',
      d: 'phone_number',
      plan: 'custom_fields.plan',
      tier: 'custom_fields.Account Tier',
    };
    expect((await createCampaign(user, assistant.id, { variable_mappings: good })).variable_mappings).toEqual(
      good,
    );
    for (const field of ['address', 'custom_fields.', 'custom_fields', 'custom_fields. x', 'NAME', ''])
      expectValidation(await create(user.headers, { ...base, variable_mappings: { plan: field } }), [
        'body',
        'variable_mappings',
        'plan',
      ]);
    expectValidation(
      await create(user.headers, {
        ...base,
        variable_mappings: { plan: `custom_fields.${'k'.repeat(101)}` },
      }),
      ['body', 'variable_mappings', 'plan'],
    );
    expectValidation(await create(user.headers, { ...base, variable_mappings: { plan: 3 } }), [
      'body',
      'variable_mappings',
      'plan',
    ]);
    expectValidation(await create(user.headers, { ...base, variable_mappings: { 'my plan': 'name' } }), [
      'body',
      'variable_mappings',
      'my plan',
    ]);
    const builtIn = await create(user.headers, { ...base, variable_mappings: { assistant_name: 'name' } });
    expectValidation(builtIn, ['body', 'variable_mappings', 'assistant_name']);
    expect(builtIn.body).toContain('built in');
    expectValidation(await create(user.headers, { ...base, variable_mappings: ['name'] }), [
      'body',
      'variable_mappings',
    ]);
    expect(await countOf(user)).toBe(1);
  });

  it('max_attempts 1..10, retry_delay_minutes 0..10080 (0: retry at once), concurrency_limit 1..100 (422 outside, and for non-integers)', async () => {
    const { user, assistant } = await owner();
    const base = { name: 'x', campaign_type: 'call', assistant_id: assistant.id };
    const limits: Array<[string, number, number]> = [
      ['max_attempts', 1, 10],
      ['retry_delay_minutes', 0, 10_080],
      ['concurrency_limit', 1, 100],
    ];
    for (const [field, min, max] of limits) {
      for (const value of [min, max])
        expect((await createCampaign(user, assistant.id, { [field]: value }))[field]).toBe(value);
      expectValidation(
        await create(user.headers, { ...base, [field]: min - 1 }),
        ['body', field],
        'greater_than_equal',
      );
      expectValidation(
        await create(user.headers, { ...base, [field]: max + 1 }),
        ['body', field],
        'less_than_equal',
      );
      for (const value of [1.5, '3', null, true])
        expectValidation(await create(user.headers, { ...base, [field]: value }), ['body', field]);
    }
    expect(await countOf(user)).toBe(6);
  });

  it('refuses read-only and unknown fields (422 extra_forbidden)', async () => {
    const { user, assistant } = await owner();
    const base = { name: 'x', campaign_type: 'call', assistant_id: assistant.id };
    for (const field of [
      'available_variables',
      'status',
      'total_contacts',
      'completed_contacts',
      'failed_contacts',
      'id',
      'organization_id',
      'started_at',
      'metrics',
      'surprise',
    ]) {
      expectValidation(
        await create(user.headers, { ...base, [field]: 'running' }),
        ['body', field],
        'extra_forbidden',
      );
    }
    expectValidation(await create(user.headers, ['not', 'an', 'object']), ['body']);
    expect(await countOf(user)).toBe(0);
  });
});

describe('GET /api/v1/campaigns', () => {
  it('an organization without campaigns gets an empty page', async () => {
    const user = await f.user();
    const response = await list(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      campaigns: [],
      pagination: { page: 1, per_page: 50, total_items: 0, total_pages: 0, has_next: false, has_prev: false },
    });
  });

  it('lists newest first with the same items as GET, and does the pagination arithmetic', async () => {
    const { user, assistant } = await owner();
    const made: Campaign[] = [];
    for (let i = 1; i <= 7; i++) made.push(await createCampaign(user, assistant.id, { name: `c${i}` }));
    const newestFirst = [...made].reverse();

    const all = await list(user.headers);
    expect(all.json().campaigns).toEqual(newestFirst);
    expect(all.json().pagination).toEqual({
      page: 1,
      per_page: 50,
      total_items: 7,
      total_pages: 1,
      has_next: false,
      has_prev: false,
    });
    const pages: Array<[number, number, Campaign[], Partial<Pagination>]> = [
      [1, 3, newestFirst.slice(0, 3), { total_pages: 3, has_next: true, has_prev: false }],
      [2, 3, newestFirst.slice(3, 6), { total_pages: 3, has_next: true, has_prev: true }],
      [3, 3, newestFirst.slice(6), { total_pages: 3, has_next: false, has_prev: true }],
      [4, 3, [], { total_pages: 3, has_next: false, has_prev: true }],
      [1, 7, newestFirst, { total_pages: 1, has_next: false, has_prev: false }],
      [2, 7, [], { total_pages: 1, has_next: false, has_prev: true }],
      [1, 1, newestFirst.slice(0, 1), { total_pages: 7, has_next: true, has_prev: false }],
      [7, 1, newestFirst.slice(6), { total_pages: 7, has_next: false, has_prev: true }],
      [1, 1000, newestFirst, { total_pages: 1, has_next: false, has_prev: false }],
    ];
    for (const [page, perPage, items, expected] of pages) {
      const response = await list(user.headers, `?page=${page}&per_page=${perPage}`);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().campaigns.map((c: Campaign) => c.id)).toEqual(items.map((c) => c.id));
      expect(response.json().pagination).toEqual({ page, per_page: perPage, total_items: 7, ...expected });
    }
    const defaults = await list(user.headers, '?page=2');
    expect(defaults.json().pagination).toMatchObject({
      page: 2,
      per_page: 50,
      total_pages: 1,
      has_prev: true,
    });
  });

  it('filters by status, campaign_type, assistant_id and search (name or description), also combined', async () => {
    const { user, assistant } = await owner();
    const other = await createAssistant(user);
    const a = await createCampaign(user, assistant.id, { name: 'Gold renewals', campaign_type: 'call' });
    const b = await createCampaign(user, assistant.id, {
      name: 'Reminders',
      description: 'For GOLD members',
      campaign_type: 'sms',
    });
    const c = await createCampaign(user, other.id, { name: '50%_off sale', campaign_type: 'mixed' });
    const d = await createCampaign(user, other.id, {
      name: '50 percent',
      description: 'a_b',
      campaign_type: 'call',
    });
    await setStatus(b.id, 'running');
    await setStatus(c.id, 'completed');
    const ids = async (query: string) => {
      const response = await list(user.headers, query);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.pagination.total_items).toBe(body.campaigns.length);
      return body.campaigns.map((x: Campaign) => x.id);
    };
    expect(await ids('?status=draft')).toEqual([d.id, a.id]);
    expect(await ids('?status=running')).toEqual([b.id]);
    expect(await ids('?status=completed')).toEqual([c.id]);
    expect(await ids('?status=paused')).toEqual([]);
    expect(await ids('?campaign_type=call')).toEqual([d.id, a.id]);
    expect(await ids('?campaign_type=sms')).toEqual([b.id]);
    expect(await ids(`?assistant_id=${other.id}`)).toEqual([d.id, c.id]);
    expect(await ids(`?assistant_id=${assistant.id}`)).toEqual([b.id, a.id]);
    expect(await ids('?search=gold')).toEqual([b.id, a.id]);
    expect(await ids('?search=RENEW')).toEqual([a.id]);
    expect(await ids('?search=50%25_')).toEqual([c.id]);
    expect(await ids('?search=_')).toEqual([d.id, c.id]);
    expect(await ids('?search=%25')).toEqual([c.id]);
    expect(await ids('?search=nothing-like-it')).toEqual([]);
    expect(await ids(`?search=gold&campaign_type=call&assistant_id=${assistant.id}&status=draft`)).toEqual([
      a.id,
    ]);
    expect(await ids('?search=gold&status=completed')).toEqual([]);
    const paged = await list(user.headers, '?campaign_type=call&per_page=1&page=2');
    expect(paged.json().campaigns.map((x: Campaign) => x.id)).toEqual([a.id]);
    expect(paged.json().pagination).toEqual({
      page: 2,
      per_page: 1,
      total_items: 2,
      total_pages: 2,
      has_next: false,
      has_prev: true,
    });
  });

  it('refuses unknown filter values (422)', async () => {
    const user = await f.user();
    expectValidation(await list(user.headers, '?status=done'), ['query', 'status']);
    expectValidation(await list(user.headers, '?campaign_type=fax'), ['query', 'campaign_type']);
    for (const id of ['0', 'x', '2147483648'])
      expectValidation(await list(user.headers, `?assistant_id=${id}`), ['query', 'assistant_id']);
    expectValidation(await list(user.headers, '?search='), ['query', 'search']);
    expectValidation(await list(user.headers, `?search=${'s'.repeat(201)}`), ['query', 'search']);
  });

  it("another organization's assistant id as filter lists nothing", async () => {
    const { user, assistant } = await owner();
    const stranger = await f.user();
    await createCampaign(user, assistant.id);
    const response = await list(stranger.headers, `?assistant_id=${assistant.id}`);
    expect(response.json().campaigns).toEqual([]);
  });

  it('items carry assistant_name, started_at, completed_at and metrics', async () => {
    const { user, assistant } = await owner();
    const created = await createCampaign(user, assistant.id);
    const started = new Date('2026-03-01T09:00:00.000Z');
    const completed = new Date('2026-03-01T10:30:00.000Z');
    await t.database.db
      .update(campaigns)
      .set({ status: 'completed', startedAt: started, completedAt: completed })
      .where(eq(campaigns.id, created.id));
    const [item] = (await list(user.headers)).json().campaigns;
    expect(item).toMatchObject({
      id: created.id,
      assistant_name: assistant.name,
      status: 'completed',
      started_at: started.toISOString(),
      completed_at: completed.toISOString(),
      metrics: ZERO_METRICS,
    });
    expect(Object.keys(item).sort()).toEqual(RESPONSE_FIELDS);
  });
});

describe('metrics', () => {
  /** Contacts with the given statuses (and executions written as the executor will). */
  async function seed(user: TestUser, campaignId: number) {
    const db = t.database.db;
    const organizationId = user.organizationId;
    const statuses = [
      'completed',
      'completed',
      'completed',
      'failed',
      'pending',
      'skipped',
      'in_progress',
    ] as const;
    const contacts = await db
      .insert(campaignContacts)
      .values(
        statuses.map((status, i) => ({
          organizationId,
          campaignId,
          phoneNumber: `+1415555${String(7000 + i)}`,
          status,
        })),
      )
      .returning({ id: campaignContacts.id });
    const [call] = await db
      .insert(calls)
      .values({
        organizationId,
        provider: 'carrier_a',
        direction: 'outbound',
        fromPhoneNumber: '+14155550100',
        toPhoneNumber: '+14155557000',
        customerPhoneNumber: '+14155557000',
        status: 'completed',
        duration: 90,
        cost: 0.08,
      })
      .returning({ id: calls.id });
    const execution = (
      contact: number,
      attempt: number,
      channel: 'call' | 'sms',
      status: (typeof campaignExecutions.$inferInsert)['status'],
      extra: Partial<typeof campaignExecutions.$inferInsert> = {},
    ) => ({
      organizationId,
      campaignId,
      contactId: contacts[contact]!.id,
      attemptNumber: attempt,
      channel,
      status,
      ...extra,
    });
    await db.insert(campaignExecutions).values([
      // Answered: the call's own duration (90 s) and cost (0.08) count.
      execution(0, 1, 'call', 'completed', { callId: call!.id }),
      // Answered: duration from execution_data, its own cost.
      execution(1, 1, 'call', 'completed', { executionData: { duration_seconds: 30 }, cost: 0.0255 }),
      // Not answered: they are attempts, with no duration.
      execution(2, 1, 'call', 'no_answer', { executionData: { duration_seconds: 0 } }),
      execution(2, 2, 'call', 'busy'),
      execution(3, 1, 'call', 'voicemail', { executionData: { duration_seconds: 20 } }),
      execution(3, 2, 'call', 'failed', { executionData: { duration_seconds: 'n/a' } }),
      // Not attempts: still running, never dialled, and SMS.
      execution(4, 1, 'call', 'in_progress'),
      execution(5, 1, 'call', 'skipped'),
      execution(6, 1, 'call', 'pending'),
      execution(2, 3, 'sms', 'completed', { cost: 0.0075, executionData: { duration_seconds: 999 } }),
    ]);
  }

  it('are computed from contacts and executions; list and GET agree; other campaigns keep zeros', async () => {
    const { user, assistant } = await owner();
    const measured = await createCampaign(user, assistant.id, { name: 'measured' });
    const quiet = await createCampaign(user, assistant.id, { name: 'quiet' });
    await seed(user, measured.id);
    const expected = {
      // 3 completed / (3 completed + 1 failed) contacts.
      success_rate: 75,
      // 2 answered / 6 finished call attempts (completed ×2, no_answer, busy, voicemail, failed).
      answer_rate: 33.33,
      // 90 + 30 + 0 + 20 seconds of calls; the mean over the 3 that lasted.
      total_duration_seconds: 140,
      average_duration_seconds: 46.67,
      // 0.08 (the call's) + 0.0255 + 0.0075 (the SMS).
      actual_cost: 0.113,
    };
    const fetched = await get(user.headers, measured.id);
    expect(fetched.json().metrics).toEqual(expected);
    const listed = (await list(user.headers)).json().campaigns as Campaign[];
    expect(listed.find((c) => c.id === measured.id)?.metrics).toEqual(expected);
    expect(listed.find((c) => c.id === quiet.id)?.metrics).toEqual(ZERO_METRICS);
    // Other organizations' rows never leak into metrics: a stranger's view of its own campaign is zero.
    const stranger = await owner();
    const theirs = await createCampaign(stranger.user, stranger.assistant.id);
    expect((await get(stranger.user.headers, theirs.id)).json().metrics).toEqual(ZERO_METRICS);
  });

  it('success_rate is 0 when no contact has completed or failed, 100 when all that finished completed', async () => {
    const { user, assistant } = await owner();
    const campaign = await createCampaign(user, assistant.id);
    const add = (status: 'pending' | 'completed', i: number) =>
      t.database.db.insert(campaignContacts).values({
        organizationId: user.organizationId,
        campaignId: campaign.id,
        phoneNumber: `+1415555${8000 + i}`,
        status,
      });
    await add('pending', 0);
    expect((await get(user.headers, campaign.id)).json().metrics.success_rate).toBe(0);
    await add('completed', 1);
    expect((await get(user.headers, campaign.id)).json().metrics.success_rate).toBe(100);
  });
});

describe('GET /api/v1/campaigns/{campaign_id}', () => {
  it('answers 404 for an unknown id and 422 for ids that are not ids', async () => {
    const user = await f.user();
    expectError(await get(user.headers, 2_000_000_000), 404, /Campaign not found/);
    for (const id of ['0', '-1', '2147483648', 'abc', '1.5'])
      expectValidation(await get(user.headers, id), ['path', 'campaign_id']);
  });
});

describe('PUT /api/v1/campaigns/{campaign_id}', () => {
  it('changes only the fields named and moves updated_at', async () => {
    const { user, assistant } = await owner();
    const other = await createAssistant(user);
    const created = await createCampaign(user, assistant.id, {
      description: 'first',
      welcome_message_template: 'Hi {{name}}',
      fallback_values: { name: 'friend' },
    });
    const changed = await update(user.headers, created.id, {
      name: ' Renamed ',
      assistant_id: other.id,
      agenda_template: '{{ company | upper }}',
      variable_mappings: { plan: 'custom_fields.plan' },
      max_attempts: 2,
      retry_delay_minutes: 5,
      concurrency_limit: 1,
      campaign_type: 'sms',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    const body = changed.json() as Campaign;
    expect(Object.keys(body).sort()).toEqual(RESPONSE_FIELDS);
    expect(body).toEqual({
      ...created,
      name: 'Renamed',
      assistant_id: other.id,
      assistant_name: other.name,
      agenda_template: '{{ company | upper }}',
      variable_mappings: { plan: 'custom_fields.plan' },
      max_attempts: 2,
      retry_delay_minutes: 5,
      concurrency_limit: 1,
      campaign_type: 'sms',
      updated_at: body.updated_at,
    });
    expect(new Date(body.updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(created.updated_at).getTime(),
    );
    expect((await get(user.headers, created.id)).json()).toEqual(body);
    // null clears a template and the description; an object replaces the one stored.
    const cleared = await update(user.headers, created.id, {
      welcome_message_template: null,
      description: null,
      fallback_values: { company: 'your company' },
    });
    expect(cleared.json()).toMatchObject({
      welcome_message_template: null,
      description: null,
      fallback_values: { company: 'your company' },
      agenda_template: '{{ company | upper }}',
    });
  });

  it('applies every rule of creation (422) and changes nothing', async () => {
    const { user, assistant } = await owner();
    const stranger = await owner();
    const created = await createCampaign(user, assistant.id);
    const refusals: Array<[Json, Array<string | number>]> = [
      [{ name: '' }, ['body', 'name']],
      [{ name: '  ' }, ['body', 'name']],
      [{ name: 'n'.repeat(201) }, ['body', 'name']],
      [{ name: null }, ['body', 'name']],
      [{ campaign_type: 'fax' }, ['body', 'campaign_type']],
      [{ assistant_id: null }, ['body', 'assistant_id']],
      [{ assistant_id: stranger.assistant.id }, ['body', 'assistant_id']],
      [{ welcome_message_template: '{{ name | nope }}' }, ['body', 'welcome_message_template']],
      [{ agenda_template: '{{' }, ['body', 'agenda_template']],
      [{ end_call_message_template: '{{ }}' }, ['body', 'end_call_message_template']],
      [{ sms_message_template: '{{ a | default(x) }}' }, ['body', 'sms_message_template']],
      [{ fallback_values: { 'bad key': 1 } }, ['body', 'fallback_values', 'bad key']],
      [{ variable_mappings: { plan: 'address' } }, ['body', 'variable_mappings', 'plan']],
      [{ max_attempts: 0 }, ['body', 'max_attempts']],
      [{ retry_delay_minutes: 10_081 }, ['body', 'retry_delay_minutes']],
      [{ concurrency_limit: 101 }, ['body', 'concurrency_limit']],
      [{ available_variables: ['x'] }, ['body', 'available_variables']],
      [{ status: 'running' }, ['body', 'status']],
    ];
    for (const [payload, loc] of refusals)
      expectValidation(await update(user.headers, created.id, payload), loc);
    const empty = await update(user.headers, created.id, {});
    expect(empty.statusCode, empty.body).toBe(422);
    const broken = await update(user.headers, created.id, { sms_message_template: 'Hi {{ name | shout }}' });
    expect(broken.body).toContain('at position 12');
    expect((await get(user.headers, created.id)).json()).toEqual(created);
  });

  it('answers 404 for an unknown id and 422 for ids that are not ids', async () => {
    const user = await f.user();
    expectError(await update(user.headers, 2_000_000_000, { name: 'x' }), 404, /Campaign not found/);
    for (const id of ['0', '-1', '2147483648', 'abc'])
      expectValidation(await update(user.headers, id, { name: 'x' }), ['path', 'campaign_id']);
  });

  it('is refused while the campaign is running (409) and allowed in every other state', async () => {
    const { user, assistant } = await owner();
    const created = await createCampaign(user, assistant.id);
    await setStatus(created.id, 'running');
    const refused = await update(user.headers, created.id, { name: 'changed' });
    expectError(refused, 409, /running/);
    const row = await storedRow(created.id);
    expect(row?.name).toBe('Spring renewals');
    expect(row?.updatedAt.toISOString()).toBe(created.updated_at);
    for (const status of ['draft', 'scheduled', 'paused', 'completed', 'cancelled', 'failed'] as const) {
      await setStatus(created.id, status);
      const changed = await update(user.headers, created.id, { name: `while ${status}` });
      expect(changed.statusCode, changed.body).toBe(200);
      expect(changed.json()).toMatchObject({ name: `while ${status}`, status });
    }
  });
});

describe('DELETE /api/v1/campaigns/{campaign_id}', () => {
  it('answers 204; the campaign, its contacts and executions are gone (GET 404, a second DELETE 404)', async () => {
    const { user, assistant } = await owner();
    const kept = await createCampaign(user, assistant.id, { name: 'kept' });
    const created = await createCampaign(user, assistant.id);
    const [contact] = await t.database.db
      .insert(campaignContacts)
      .values({ organizationId: user.organizationId, campaignId: created.id, phoneNumber: '+14155559001' })
      .returning({ id: campaignContacts.id });
    await t.database.db.insert(campaignExecutions).values({
      organizationId: user.organizationId,
      campaignId: created.id,
      contactId: contact!.id,
      attemptNumber: 1,
      channel: 'call',
    });
    const deleted = await remove(user.headers, created.id);
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(deleted.body).toBe('');
    expectError(await get(user.headers, created.id), 404);
    expectError(await remove(user.headers, created.id), 404);
    expect(await storedRow(created.id)).toBeUndefined();
    expect(
      await t.database.db.select().from(campaignContacts).where(eq(campaignContacts.campaignId, created.id)),
    ).toEqual([]);
    expect(
      await t.database.db
        .select()
        .from(campaignExecutions)
        .where(eq(campaignExecutions.campaignId, created.id)),
    ).toEqual([]);
    expect((await list(user.headers)).json().campaigns).toEqual([kept]);
  });

  it('is refused while the campaign is running (409), and allowed in every other state', async () => {
    const { user, assistant } = await owner();
    const running = await createCampaign(user, assistant.id);
    await setStatus(running.id, 'running');
    expectError(await remove(user.headers, running.id), 409, /running/);
    expect((await get(user.headers, running.id)).json()).toMatchObject({ id: running.id, status: 'running' });
    for (const status of ['draft', 'scheduled', 'paused', 'completed', 'cancelled', 'failed'] as const) {
      const campaign = await createCampaign(user, assistant.id);
      await setStatus(campaign.id, status);
      expect((await remove(user.headers, campaign.id)).statusCode).toBe(204);
    }
    await setStatus(running.id, 'paused');
    expect((await remove(user.headers, running.id)).statusCode).toBe(204);
  });

  it('answers 404 for an unknown id and 422 for ids that are not ids', async () => {
    const user = await f.user();
    expectError(await remove(user.headers, 2_000_000_000), 404);
    for (const id of ['0', '-1', '2147483648', 'abc'])
      expectValidation(await remove(user.headers, id), ['path', 'campaign_id']);
  });
});

describe('POST /api/v1/campaigns/template-preview', () => {
  async function rendered(user: TestUser, payload: Json): Promise<string> {
    const response = await preview(user.headers, payload);
    expect(response.statusCode, response.body).toBe(200);
    expect(Object.keys(response.json())).toEqual(['rendered']);
    return response.json().rendered;
  }

  it('renders variables with the filters title_case, upper, lower, default and phone_format', async () => {
    const user = await f.user();
    const variables = {
      name: "ada o'brien-smith",
      company: 'Acme',
      phone_number: '+14155552671',
      assistant_name: 'Max',
      custom: { plan: 'gold' },
    };
    const cases: Array<[string, string]> = [
      ['Hi {{ name | title_case }}', "Hi Ada O'Brien-Smith"],
      ['{{company|upper}} / {{ company | lower }}', 'ACME / acme'],
      ['{{ phone_number | phone_format }}', '(415) 555-2671'],
      ['{{ phone_number | phone_format("international") }}', '+1 415 555 2671'],
      ['{{ city | default("your city") }}', 'your city'],
      ['{{ city | default("x") | upper }}', 'X'],
      ['This is {{assistant_name}} about {{ custom.plan }}', 'This is Max about gold'],
      ['no variables', 'no variables'],
      ['', ''],
    ];
    for (const [template, expected] of cases)
      expect(await rendered(user, { template, variables })).toBe(expected);
  });

  it('fills missing (and empty) variables from fallback_values, else renders them empty', async () => {
    const user = await f.user();
    expect(
      await rendered(user, {
        template: 'Hello {{name}} from {{company}}, {{ topic | upper }}.',
        variables: { name: '' },
        fallback_values: { name: 'there', topic: 'billing' },
      }),
    ).toBe('Hello there from , BILLING.');
    expect(await rendered(user, { template: 'Hi {{name}}!' })).toBe('Hi !');
    expect(
      await rendered(user, { template: '{{ n }}', variables: { n: 3 }, fallback_values: { n: 9 } }),
    ).toBe('3');
  });

  it('is a sandbox: no attribute access beyond plain values, nothing evaluated', async () => {
    const user = await f.user();
    expect(
      await rendered(user, {
        template: '{{ name.constructor }}{{ __proto__ }}{{ toString }}{{ process.env }}',
        variables: { name: 'x' },
      }),
    ).toBe('');
  });

  it('answers 422 naming the position for a broken template, and for a bad body', async () => {
    const user = await f.user();
    const broken = await preview(user.headers, { template: 'Hi {{ name | shout }}', variables: {} });
    expectValidation(broken, ['body', 'template'], 'template_syntax');
    expect(broken.body).toContain('Unknown filter');
    expect(broken.body).toContain('at position 12');
    expectValidation(await preview(user.headers, { template: 'Hello {{ name' }), ['body', 'template']);
    expectValidation(await preview(user.headers, {}), ['body', 'template'], 'missing');
    expectValidation(await preview(user.headers, { template: 3 }), ['body', 'template']);
    expectValidation(await preview(user.headers, { template: 'a'.repeat(10_001) }), ['body', 'template']);
    expectValidation(await preview(user.headers, { template: 'x', variables: [] }), ['body', 'variables']);
    expectValidation(await preview(user.headers, { template: 'x', fallback_values: 'y' }), [
      'body',
      'fallback_values',
    ]);
    expectValidation(
      await preview(user.headers, { template: 'x', extra: 1 }),
      ['body', 'extra'],
      'extra_forbidden',
    );
  });
});

describe('security', () => {
  /** Every route, with a campaign id to use. */
  function everyRoute(headers: Headers, id: number, assistantId: number) {
    return [
      () => create(headers, { name: 'x', campaign_type: 'call', assistant_id: assistantId }),
      () => list(headers),
      () => get(headers, id),
      () => update(headers, id, { name: 'hijacked' }),
      () => remove(headers, id),
      () => preview(headers, { template: 'Hi {{name}}', variables: { name: 'x' } }),
    ];
  }

  it('answers 401 without credentials and with a bad token on every route, and changes nothing', async () => {
    const { user, assistant } = await owner();
    const created = await createCampaign(user, assistant.id);
    const anonymous: Headers[] = [
      {},
      { authorization: 'Bearer not-a-real-token' },
      { authorization: 'Bearer sk_nope' },
    ];
    for (const headers of anonymous) {
      for (const send of everyRoute(headers, created.id, assistant.id)) expectError(await send(), 401);
    }
    expect((await list(user.headers)).json().campaigns).toEqual([created]);
  });

  it('refuses an API key without the campaigns area (403) on every route', async () => {
    const { user, assistant } = await owner();
    const created = await createCampaign(user, assistant.id);
    const key = await f.apiKey(user, {
      permissions: {
        assistants: 'read_write',
        calls: 'read_write',
        phone_numbers: 'read_write',
        graphs: 'read_write',
      },
    });
    for (const send of everyRoute(key.headers, created.id, assistant.id)) expectError(await send(), 403);
    expect((await list(user.headers)).json().campaigns).toEqual([created]);
  });

  it('lets a campaigns:read key read and preview, but not create, change or delete (403)', async () => {
    const { user, assistant } = await owner();
    const created = await createCampaign(user, assistant.id);
    const key = await f.apiKey(user, { permissions: { campaigns: 'read' } });
    const listed = await list(key.headers);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().campaigns).toEqual([created]);
    expect((await get(key.headers, created.id)).json()).toEqual(created);
    const previewed = await preview(key.headers, {
      template: '{{ name | upper }}',
      variables: { name: 'x' },
    });
    expect(previewed.statusCode, previewed.body).toBe(200);
    expect(previewed.json()).toEqual({ rendered: 'X' });
    expectError(
      await create(key.headers, { name: 'x', campaign_type: 'call', assistant_id: assistant.id }),
      403,
    );
    expectError(await update(key.headers, created.id, { name: 'x' }), 403);
    expectError(await remove(key.headers, created.id), 403);
    expect((await list(user.headers)).json().campaigns).toEqual([created]);
  });

  it('lets a campaigns:read_write key create, change and delete', async () => {
    const { user, assistant } = await owner();
    const key = await f.apiKey(user, { permissions: { campaigns: 'read_write' } });
    const created = await create(key.headers, {
      name: 'via key',
      campaign_type: 'sms',
      assistant_id: assistant.id,
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      organization_id: user.organizationId,
      assistant_name: assistant.name,
    });
    const id = created.json().id;
    const changed = await update(key.headers, id, { description: 'changed by key' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().description).toBe('changed by key');
    expect((await remove(key.headers, id)).statusCode).toBe(204);
    expect((await list(user.headers)).json().campaigns).toEqual([]);
  });

  it("never shows or touches another organization's campaign (404 on every route, never listed), which stays unchanged", async () => {
    const { user, assistant } = await owner();
    const stranger = await owner();
    const theirs = await createCampaign(user, assistant.id, { description: 'private' });
    const runningTheirs = await createCampaign(user, assistant.id, { name: 'running' });
    await setStatus(runningTheirs.id, 'running');
    const strangerKey = await f.apiKey(stranger.user, { permissions: { campaigns: 'read_write' } });
    for (const headers of [stranger.user.headers, strangerKey.headers]) {
      for (const id of [theirs.id, runningTheirs.id]) {
        expectError(await get(headers, id), 404, /Campaign not found/);
        expectError(await update(headers, id, { name: 'hijacked' }), 404, /Campaign not found/);
        expectError(
          await update(headers, id, { assistant_id: stranger.assistant.id, max_attempts: 9 }),
          404,
          /Campaign not found/,
        );
        expectError(await remove(headers, id), 404, /Campaign not found/);
      }
      const listed = await list(headers, `?search=private&assistant_id=${assistant.id}`);
      expect(listed.json().campaigns).toEqual([]);
      expect((await list(headers)).json().pagination.total_items).toBe(0);
    }
    expect((await get(user.headers, theirs.id)).json()).toEqual(theirs);
    expect(await storedRow(runningTheirs.id)).toMatchObject({ name: 'running', status: 'running' });
    expect(await storedRow(theirs.id)).toMatchObject({
      organizationId: user.organizationId,
      name: 'Spring renewals',
      description: 'private',
      assistantId: assistant.id,
    });
  });

  it('a member (role user) of the organization sees and manages its campaigns', async () => {
    const { user: admin, assistant } = await owner();
    const byAdmin = await createCampaign(admin, assistant.id);
    const member = await f.member(admin.organizationId, 'user');
    expect((await get(member.headers, byAdmin.id)).json()).toEqual(byAdmin);
    const own = await create(member.headers, {
      name: 'by member',
      campaign_type: 'call',
      assistant_id: assistant.id,
    });
    expect(own.statusCode, own.body).toBe(201);
    const changed = await update(member.headers, byAdmin.id, { name: 'changed by member' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await remove(member.headers, own.json().id)).statusCode).toBe(204);
    expect((await list(admin.headers)).json().campaigns).toEqual([changed.json()]);
  });
});

describe('an assistant an unfinished campaign uses cannot be deleted', () => {
  it.each(UNFINISHED)('answers 409 naming a %s campaign and its id; the assistant stays', async (status) => {
    const { user, assistant } = await owner();
    const campaign = await createCampaign(user, assistant.id, { name: `Uses it (${status})` });
    await setStatus(campaign.id, status);
    const refused = await deleteAssistant(user, assistant.id);
    expectError(refused, 409);
    expect(refused.json().detail).toContain(`campaign "Uses it (${status})" (id ${campaign.id}, ${status})`);
    const still = await t.app.inject({
      method: 'GET',
      url: `/api/v1/assistants/${assistant.id}`,
      headers: user.headers,
    });
    expect(still.statusCode, still.body).toBe(200);
    expect((await get(user.headers, campaign.id)).json()).toMatchObject({
      assistant_id: assistant.id,
      assistant_name: assistant.name,
    });
  });

  it.each(FINISHED)(
    'is allowed when the campaign is %s: the campaign stays, without an assistant',
    async (status) => {
      const { user, assistant } = await owner();
      const campaign = await createCampaign(user, assistant.id);
      await setStatus(campaign.id, status);
      expect((await deleteAssistant(user, assistant.id)).statusCode).toBe(204);
      expect((await get(user.headers, campaign.id)).json()).toMatchObject({
        id: campaign.id,
        status,
        assistant_id: null,
        assistant_name: null,
      });
    },
  );

  it('names every unfinished campaign (with the numbers that route to it); finishing or moving them frees it', async () => {
    const { user, assistant } = await owner();
    const other = await createAssistant(user);
    const first = await createCampaign(user, assistant.id, { name: 'first' });
    const second = await createCampaign(user, assistant.id, { name: 'second' });
    const number = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: user.headers,
      payload: { phone_number: '+14155559876', provider: 'carrier_a', assistant_id: assistant.id },
    });
    expect(number.statusCode, number.body).toBe(201);
    const refused = await deleteAssistant(user, assistant.id);
    expectError(refused, 409);
    expect(refused.json().detail).toContain('phone number +14155559876');
    expect(refused.json().detail).toContain(`campaign "first" (id ${first.id}, draft)`);
    expect(refused.json().detail).toContain(`campaign "second" (id ${second.id}, draft)`);
    await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/phone-numbers/${number.json().id}`,
      headers: user.headers,
    });
    await setStatus(first.id, 'completed');
    const again = await deleteAssistant(user, assistant.id);
    expectError(again, 409);
    expect(again.json().detail).not.toContain('"first"');
    expect((await update(user.headers, second.id, { assistant_id: other.id })).statusCode).toBe(200);
    expect((await deleteAssistant(user, assistant.id)).statusCode).toBe(204);
  });

  it("another organization's campaigns never block (nor name) an assistant", async () => {
    const { user, assistant } = await owner();
    const stranger = await owner();
    await createCampaign(stranger.user, stranger.assistant.id, { name: 'theirs' });
    expect((await deleteAssistant(user, assistant.id)).statusCode).toBe(204);
  });

  it('creating a campaign and deleting its assistant at the same time never leaves a draft without an assistant', async () => {
    for (let round = 0; round < 5; round++) {
      const { user, assistant } = await owner();
      const [created, deleted] = await Promise.all([
        create(user.headers, { name: 'race', campaign_type: 'call', assistant_id: assistant.id }),
        deleteAssistant(user, assistant.id),
      ]);
      // Either the campaign came first (and the deletion is refused) or the deletion (and the campaign is).
      expect([
        [201, 409],
        [422, 204],
      ]).toContainEqual([created.statusCode, deleted.statusCode]);
      const rows = await t.database.db
        .select()
        .from(campaigns)
        .where(eq(campaigns.organizationId, user.organizationId));
      if (created.statusCode === 201) {
        expect(rows.map((r) => r.assistantId)).toEqual([assistant.id]);
      } else {
        expectValidation(created, ['body', 'assistant_id']);
        expect(rows).toEqual([]);
      }
    }
  });
});

/**
 * SMS compliance: GET /v1/sms-compliance/status/{id}, POST /v1/sms-compliance/submit,
 * GET /v1/sms-compliance/can-send/{id}, GET /v1/sms-compliance/summary and
 * PUT /v1/sms-compliance/admin/status/{id}. The status response with and without a submission, one
 * test per validation rule, resubmission, the admin review and its rules, can_send (true only when
 * approved), the summary counting never-submitted numbers, `canSendOutbound` for other services, and
 * who may call what: a JWT only (API keys and cookie-only sessions 403), the review admins only,
 * another organization's numbers 404. The tests share one platform; each creates the users and
 * numbers it needs (through POST /api/v1/phone-numbers).
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsCompliance } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { DomainError } from '../src/domains/errors.js';
import { SESSION_COOKIE } from '../src/domains/identity/principal.js';
import { canSendOutbound, USE_CASES } from '../src/domains/sms-compliance/service.js';
import { statusOf } from '../src/http/errors.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/v1/sms-compliance';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const STATUS_FIELDS = [
  'found',
  'phone_number',
  'phone_number_id',
  'status',
  'use_case',
  'submitted_at',
  'approved_at',
  'rejection_reason',
  'can_send_outbound',
  'is_toll_free',
].sort();

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;
type Status = {
  found: boolean;
  phone_number: string;
  phone_number_id: number;
  status: string;
  use_case: string | null;
  submitted_at: string | null;
  approved_at: string | null;
  rejection_reason: string | null;
  can_send_outbound: boolean;
  is_toll_free: boolean;
};

function status(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/status/${id}`, headers });
}
function submit(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: `${BASE}/submit`, headers, payload: payload as object });
}
function canSend(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/can-send/${id}`, headers });
}
function summary(headers: Headers) {
  return t.app.inject({ method: 'GET', url: `${BASE}/summary`, headers });
}
function review(headers: Headers, id: number | string, query: Record<string, string>) {
  const search = new URLSearchParams(query).toString();
  return t.app.inject({
    method: 'PUT',
    url: `${BASE}/admin/status/${id}${search ? `?${search}` : ''}`,
    headers,
  });
}

/** Numbers are unique on the platform: every test takes fresh ones. */
let serial = 0;
function longCode(): string {
  serial += 1;
  return `+1415555${String(6000 + serial).padStart(4, '0')}`;
}
function tollFree(): string {
  serial += 1;
  return `+1888555${String(6000 + serial).padStart(4, '0')}`;
}

async function createNumber(
  user: TestUser,
  phoneNumber = longCode(),
): Promise<{ id: number; phone_number: string }> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: user.headers,
    payload: { phone_number: phoneNumber, provider: 'carrier_a' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

function submission(phoneNumberId: number, changes: Json = {}): Json {
  return {
    phone_number_id: phoneNumberId,
    use_case: 'appointment_reminders',
    business_name: 'Acme Dental',
    business_description: 'A dental practice reminding patients of their appointments.',
    sample_messages: [
      'Hi Sam, this is Acme Dental: your cleaning is tomorrow at 10:00. Reply STOP to opt out.',
      'Acme Dental: your appointment was moved to Friday 14:30. Reply C to confirm.',
    ],
    website_url: 'https://acme-dental.example',
    contact_email: 'compliance@acme-dental.example',
    ...changes,
  };
}

async function submitted(user: TestUser, phoneNumberId: number, changes: Json = {}): Promise<Status> {
  const response = await submit(user.headers, submission(phoneNumberId, changes));
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

async function reviewed(user: TestUser, id: number, query: Record<string, string>): Promise<Status> {
  const response = await review(user.headers, id, query);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

async function storedRecord(phoneNumberId: number) {
  const [row] = await t.database.db
    .select()
    .from(smsCompliance)
    .where(eq(smsCompliance.phoneNumberId, phoneNumberId));
  return row;
}

async function currentStatus(user: TestUser, id: number): Promise<Status> {
  const response = await status(user.headers, id);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

describe('GET /v1/sms-compliance/status/{phone_number_id}', () => {
  it('answers 200 found:false for a number never submitted, with every field', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const response = await status(user.headers, number.id);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(STATUS_FIELDS);
    expect(body).toEqual({
      found: false,
      phone_number: number.phone_number,
      phone_number_id: number.id,
      status: 'not_submitted',
      use_case: null,
      submitted_at: null,
      approved_at: null,
      rejection_reason: null,
      can_send_outbound: false,
      is_toll_free: false,
    });
  });

  it('reports is_toll_free for a toll-free number', async () => {
    const user = await f.user();
    const number = await createNumber(user, tollFree());
    expect((await currentStatus(user, number.id)).is_toll_free).toBe(true);
    await submitted(user, number.id);
    expect((await currentStatus(user, number.id)).is_toll_free).toBe(true);
  });

  it('after a submission: found, pending, the use case and submitted_at', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const answer = await submitted(user, number.id, { use_case: 'two_factor_auth' });
    const body = await currentStatus(user, number.id);
    expect(body).toEqual(answer);
    expect(Object.keys(body).sort()).toEqual(STATUS_FIELDS);
    expect(body).toMatchObject({
      found: true,
      phone_number: number.phone_number,
      phone_number_id: number.id,
      status: 'pending',
      use_case: 'two_factor_auth',
      approved_at: null,
      rejection_reason: null,
      can_send_outbound: false,
      is_toll_free: false,
    });
    expect(body.submitted_at).toMatch(ISO);
  });

  it('answers 404 for an id that does not exist, 422 for ids out of range or not numbers', async () => {
    const user = await f.user();
    expectError(await status(user.headers, 2_147_483_647), 404, /Phone number not found/);
    for (const id of ['0', '-1', '2147483648', 'abc', '1.5']) {
      expectValidation(await status(user.headers, id), ['path', 'phone_number_id']);
      expectValidation(await canSend(user.headers, id), ['path', 'phone_number_id']);
      expectValidation(await review(user.headers, id, { new_status: 'approved' }), [
        'path',
        'phone_number_id',
      ]);
    }
  });
});

describe('POST /v1/sms-compliance/submit', () => {
  it('answers 200 with the status response (pending) and stores the submission, text trimmed', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const response = await submit(
      user.headers,
      submission(number.id, {
        business_name: '  Acme Dental  ',
        sample_messages: ['  Your appointment is tomorrow at 10:00.  '],
      }),
    );
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(STATUS_FIELDS);
    expect(body).toMatchObject({ found: true, status: 'pending', use_case: 'appointment_reminders' });
    expect(await storedRecord(number.id)).toMatchObject({
      organizationId: user.organizationId,
      status: 'pending',
      useCase: 'appointment_reminders',
      businessName: 'Acme Dental',
      businessDescription: 'A dental practice reminding patients of their appointments.',
      sampleMessages: ['Your appointment is tomorrow at 10:00.'],
      websiteUrl: 'https://acme-dental.example',
      contactEmail: 'compliance@acme-dental.example',
      submittedByUserId: user.id,
      reviewedByUserId: null,
      approvedAt: null,
      rejectionReason: null,
    });
  });

  it('accepts every use case', async () => {
    const user = await f.user();
    expect(USE_CASES).toEqual([
      'customer_support',
      'appointment_reminders',
      'order_notifications',
      'two_factor_auth',
      'marketing',
      'other',
    ]);
    for (const useCase of USE_CASES) {
      const number = await createNumber(user);
      expect((await submitted(user, number.id, { use_case: useCase })).use_case).toBe(useCase);
    }
  });

  it('takes website_url and contact_email as optional (absent or null: stored as null)', async () => {
    const user = await f.user();
    const absent = await createNumber(user);
    const payload = submission(absent.id);
    delete payload.website_url;
    delete payload.contact_email;
    expect((await submit(user.headers, payload)).statusCode).toBe(200);
    expect(await storedRecord(absent.id)).toMatchObject({ websiteUrl: null, contactEmail: null });
    const nulls = await createNumber(user);
    await submitted(user, nulls.id, { website_url: null, contact_email: null });
    expect(await storedRecord(nulls.id)).toMatchObject({ websiteUrl: null, contactEmail: null });
    const http = await createNumber(user);
    await submitted(user, http.id, { website_url: 'http://acme.example/sms-policy' });
    expect((await storedRecord(http.id))?.websiteUrl).toBe('http://acme.example/sms-policy');
  });

  it('accepts 1 to 3 sample messages of exactly 10 and 320 characters', async () => {
    const user = await f.user();
    for (const messages of [['x'.repeat(10)], ['a'.repeat(320), 'b'.repeat(10), 'c'.repeat(100)]]) {
      const number = await createNumber(user);
      await submitted(user, number.id, { sample_messages: messages });
      expect((await storedRecord(number.id))?.sampleMessages).toEqual(messages);
    }
  });

  it('refuses each missing required field (422 at the field), and stores nothing', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const field of [
      'phone_number_id',
      'use_case',
      'business_name',
      'business_description',
      'sample_messages',
    ]) {
      const payload = submission(number.id);
      delete payload[field];
      expectValidation(await submit(user.headers, payload), ['body', field], 'missing');
    }
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('refuses a use_case outside the enum (422 at use_case)', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const useCase of ['spam', '', 'Marketing', 7, null]) {
      expectValidation(await submit(user.headers, submission(number.id, { use_case: useCase })), [
        'body',
        'use_case',
      ]);
    }
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('refuses an empty or blank business_name, and one over 200 characters', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const name of ['', '   ', 'x'.repeat(201), 5]) {
      expectValidation(await submit(user.headers, submission(number.id, { business_name: name })), [
        'body',
        'business_name',
      ]);
    }
    await submitted(user, number.id, { business_name: 'x'.repeat(200) });
  });

  it('refuses an empty or blank business_description, and one over 2000 characters', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const description of ['', '\n\t ', 'x'.repeat(2001), null]) {
      expectValidation(
        await submit(user.headers, submission(number.id, { business_description: description })),
        ['body', 'business_description'],
      );
    }
    await submitted(user, number.id, { business_description: 'x'.repeat(2000) });
  });

  it('refuses no sample message and more than 3 (422 at sample_messages)', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const ok = 'A sample message.';
    expectValidation(await submit(user.headers, submission(number.id, { sample_messages: [] })), [
      'body',
      'sample_messages',
    ]);
    expectValidation(
      await submit(user.headers, submission(number.id, { sample_messages: [ok, ok, ok, ok] })),
      ['body', 'sample_messages'],
    );
    expectValidation(
      await submit(user.headers, submission(number.id, { sample_messages: 'A sample message.' })),
      ['body', 'sample_messages'],
    );
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('refuses a sample message under 10 or over 320 characters (422 at its index)', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const ok = 'A sample message.';
    for (const [messages, index] of [
      [['x'.repeat(9)], 0],
      [[ok, 'x'.repeat(321)], 1],
      [[ok, ok, ''], 2],
      // Ten characters only with the spaces around them.
      [['   short    '], 0],
      [[ok, 42], 1],
    ] as const) {
      expectValidation(await submit(user.headers, submission(number.id, { sample_messages: messages })), [
        'body',
        'sample_messages',
        index,
      ]);
    }
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('refuses a website_url that is not an http(s) URL', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const url of ['acme.example', 'ftp://acme.example', 'javascript:alert(1)', '', 'https://', 3]) {
      expectValidation(await submit(user.headers, submission(number.id, { website_url: url })), [
        'body',
        'website_url',
      ]);
    }
    expectValidation(
      await submit(
        user.headers,
        submission(number.id, { website_url: `https://acme.example/${'x'.repeat(2040)}` }),
      ),
      ['body', 'website_url'],
    );
  });

  it('refuses a contact_email that is not an email address', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const email of ['not-an-email', 'a@', '@acme.example', '', `${'x'.repeat(250)}@a.example`, true]) {
      expectValidation(await submit(user.headers, submission(number.id, { contact_email: email })), [
        'body',
        'contact_email',
      ]);
    }
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('refuses a bad phone_number_id (422), an unknown field and a body that is not an object', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    for (const id of [0, -1, 2_147_483_648, '1', 1.5, null]) {
      expectValidation(await submit(user.headers, submission(number.id, { phone_number_id: id })), [
        'body',
        'phone_number_id',
      ]);
    }
    expectValidation(await submit(user.headers, submission(number.id, { status: 'approved' })), [
      'body',
      'status',
    ]);
    expect((await submit(user.headers, ['x'])).statusCode).toBe(422);
    expect(await storedRecord(number.id)).toBeUndefined();
  });

  it('answers 404 for a number that does not exist', async () => {
    const user = await f.user();
    expectError(await submit(user.headers, submission(2_147_483_647)), 404, /Phone number not found/);
  });

  it('two submissions of one number at the same time leave one record', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const responses = await Promise.all([
      submit(user.headers, submission(number.id, { use_case: 'marketing' })),
      submit(user.headers, submission(number.id, { use_case: 'other' })),
    ]);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
    const rows = await t.database.db
      .select()
      .from(smsCompliance)
      .where(eq(smsCompliance.phoneNumberId, number.id));
    expect(rows).toHaveLength(1);
    expect(['marketing', 'other']).toContain(rows[0]?.useCase);
  });
});

describe('resubmission', () => {
  it('a pending submission is replaced and stays pending, submitted_at moves on', async () => {
    const user = await f.user();
    const number = await createNumber(user);
    const first = await submitted(user, number.id, { use_case: 'marketing' });
    const second = await submitted(user, number.id, {
      use_case: 'customer_support',
      business_name: 'Acme Support',
      sample_messages: ['We received your ticket #123 and will answer within a day.'],
      website_url: null,
    });
    expect(second).toMatchObject({ status: 'pending', use_case: 'customer_support', found: true });
    expect(Date.parse(second.submitted_at as string)).toBeGreaterThanOrEqual(
      Date.parse(first.submitted_at as string),
    );
    expect(await storedRecord(number.id)).toMatchObject({
      businessName: 'Acme Support',
      sampleMessages: ['We received your ticket #123 and will answer within a day.'],
      websiteUrl: null,
    });
  });

  it('a rejected number resubmitted returns to pending; the rejection and its reviewer are cleared', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    await reviewed(admin, number.id, { new_status: 'rejected', rejection_reason: 'Opt-out missing' });
    expect((await storedRecord(number.id))?.reviewedByUserId).toBe(admin.id);
    const again = await submitted(admin, number.id, {
      business_description: 'Now with opt-out in every message.',
    });
    expect(again).toMatchObject({
      status: 'pending',
      rejection_reason: null,
      approved_at: null,
      can_send_outbound: false,
    });
    expect((await storedRecord(number.id))?.reviewedByUserId).toBeNull();
  });

  it('an approved number cannot be resubmitted (409) and stays approved; set back to pending it can', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id, { use_case: 'order_notifications' });
    const approved = await reviewed(admin, number.id, { new_status: 'approved' });
    expectError(
      await submit(admin.headers, submission(number.id, { use_case: 'marketing' })),
      409,
      /approved/,
    );
    expect(await currentStatus(admin, number.id)).toEqual(approved);
    expect((await storedRecord(number.id))?.useCase).toBe('order_notifications');

    await reviewed(admin, number.id, { new_status: 'pending' });
    expect((await submitted(admin, number.id, { use_case: 'marketing' })).use_case).toBe('marketing');
  });
});

describe('PUT /v1/sms-compliance/admin/status/{phone_number_id}', () => {
  it('approved sets approved_at and can_send_outbound, and records the reviewer; approving again keeps approved_at', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    const body = await reviewed(admin, number.id, { new_status: 'approved' });
    expect(Object.keys(body).sort()).toEqual(STATUS_FIELDS);
    expect(body).toMatchObject({
      found: true,
      status: 'approved',
      can_send_outbound: true,
      rejection_reason: null,
    });
    expect(body.approved_at).toMatch(ISO);
    expect(await currentStatus(admin, number.id)).toEqual(body);
    expect((await storedRecord(number.id))?.reviewedByUserId).toBe(admin.id);

    const again = await reviewed(admin, number.id, { new_status: 'approved' });
    expect(again.approved_at).toBe(body.approved_at);
  });

  it('rejected needs a rejection_reason (422 without, or blank), and then stores it', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    expectValidation(await review(admin.headers, number.id, { new_status: 'rejected' }), [
      'query',
      'rejection_reason',
    ]);
    expectValidation(
      await review(admin.headers, number.id, { new_status: 'rejected', rejection_reason: '  ' }),
      ['query', 'rejection_reason'],
    );
    expect((await currentStatus(admin, number.id)).status).toBe('pending');

    const body = await reviewed(admin, number.id, {
      new_status: 'rejected',
      rejection_reason: 'Sample messages lack opt-out language',
    });
    expect(body).toMatchObject({
      status: 'rejected',
      rejection_reason: 'Sample messages lack opt-out language',
      approved_at: null,
      can_send_outbound: false,
    });
  });

  it('moves between every status; leaving approved clears approved_at, leaving rejected clears the reason', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    expect((await reviewed(admin, number.id, { new_status: 'approved' })).approved_at).toMatch(ISO);
    const rejected = await reviewed(admin, number.id, {
      new_status: 'rejected',
      rejection_reason: 'Changed our mind',
    });
    expect(rejected).toMatchObject({ approved_at: null, rejection_reason: 'Changed our mind' });
    const pending = await reviewed(admin, number.id, { new_status: 'pending' });
    expect(pending).toMatchObject({ status: 'pending', approved_at: null, rejection_reason: null });
    const approved = await reviewed(admin, number.id, { new_status: 'approved' });
    expect(approved).toMatchObject({ status: 'approved', rejection_reason: null, can_send_outbound: true });
    expect((await reviewed(admin, number.id, { new_status: 'pending' })).can_send_outbound).toBe(false);
  });

  it('refuses a missing or unknown new_status, a rejection_reason with another status or over 1000 characters', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    expectValidation(await review(admin.headers, number.id, {}), ['query', 'new_status'], 'missing');
    for (const value of ['not_submitted', 'APPROVED', 'deleted', '']) {
      expectValidation(await review(admin.headers, number.id, { new_status: value }), [
        'query',
        'new_status',
      ]);
    }
    expectValidation(
      await review(admin.headers, number.id, {
        new_status: 'approved',
        rejection_reason: 'Not for approvals',
      }),
      ['query', 'rejection_reason'],
    );
    expectValidation(
      await review(admin.headers, number.id, { new_status: 'rejected', rejection_reason: 'x'.repeat(1001) }),
      ['query', 'rejection_reason'],
    );
    expect((await currentStatus(admin, number.id)).status).toBe('pending');
  });

  it('answers 404 with a clear message for a number without a submission, and for an unknown number', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    expectError(
      await review(admin.headers, number.id, { new_status: 'approved' }),
      404,
      /has no SMS compliance submission/,
    );
    expect(await storedRecord(number.id)).toBeUndefined();
    expectError(
      await review(admin.headers, 2_147_483_647, { new_status: 'approved' }),
      404,
      /Phone number not found/,
    );
  });
});

describe('GET /v1/sms-compliance/can-send/{phone_number_id}', () => {
  it('is true only when approved, with the status and a reason', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    const check = async () => {
      const response = await canSend(admin.headers, number.id);
      expect(response.statusCode, response.body).toBe(200);
      expect(Object.keys(response.json()).sort()).toEqual(['can_send', 'reason', 'status']);
      return response.json();
    };
    expect(await check()).toEqual({
      can_send: false,
      status: 'not_submitted',
      reason: expect.stringMatching(/No SMS compliance submission/),
    });
    await submitted(admin, number.id);
    expect(await check()).toEqual({
      can_send: false,
      status: 'pending',
      reason: expect.stringMatching(/pending/),
    });
    await reviewed(admin, number.id, { new_status: 'rejected', rejection_reason: 'No opt-out' });
    expect(await check()).toEqual({
      can_send: false,
      status: 'rejected',
      reason: expect.stringMatching(/rejected: No opt-out/),
    });
    await reviewed(admin, number.id, { new_status: 'approved' });
    expect(await check()).toEqual({ can_send: true, status: 'approved', reason: expect.any(String) });
    await reviewed(admin, number.id, { new_status: 'pending' });
    expect((await check()).can_send).toBe(false);
  });

  it('answers 404 for a number that does not exist', async () => {
    const user = await f.user();
    expectError(await canSend(user.headers, 2_147_483_647), 404, /Phone number not found/);
  });

  it('canSendOutbound (for other services) answers the same, and 404 outside the tenant', async () => {
    const admin = await f.user();
    const stranger = await f.user();
    const number = await createNumber(admin);
    const tenant = new Tenant(admin.organizationId);
    expect(await canSendOutbound(t.database.db, tenant, number.id)).toMatchObject({
      can_send: false,
      status: 'not_submitted',
    });
    await submitted(admin, number.id);
    await reviewed(admin, number.id, { new_status: 'approved' });
    expect(await canSendOutbound(t.database.db, tenant, number.id)).toEqual(
      (await canSend(admin.headers, number.id)).json(),
    );
    const refused = await canSendOutbound(
      t.database.db,
      new Tenant(stranger.organizationId),
      number.id,
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect(statusOf(refused as DomainError)).toBe(404);
  });
});

describe('GET /v1/sms-compliance/summary', () => {
  it('counts every number of the organization; never submitted ones as not_submitted', async () => {
    const admin = await f.user();
    const other = await f.user();
    const [approved, pending, rejected, never, resubmitted] = [
      await createNumber(admin),
      await createNumber(admin),
      await createNumber(admin),
      await createNumber(admin, tollFree()),
      await createNumber(admin),
    ];
    await submitted(admin, approved.id, { use_case: 'two_factor_auth' });
    await reviewed(admin, approved.id, { new_status: 'approved' });
    await submitted(admin, pending.id, { use_case: 'marketing' });
    await submitted(admin, rejected.id, { use_case: 'other' });
    await reviewed(admin, rejected.id, { new_status: 'rejected', rejection_reason: 'Unclear use' });
    await submitted(admin, resubmitted.id, { use_case: 'customer_support' });
    await reviewed(admin, resubmitted.id, { new_status: 'rejected', rejection_reason: 'Unclear use' });
    await submitted(admin, resubmitted.id, { use_case: 'customer_support' });
    // Another organization's numbers and records are not counted.
    const theirs = await createNumber(other);
    await submitted(other, theirs.id);

    const response = await summary(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      total_numbers: 5,
      approved: 1,
      pending: 2,
      rejected: 1,
      not_submitted: 1,
      numbers: [
        {
          phone_number_id: approved.id,
          phone_number: approved.phone_number,
          status: 'approved',
          use_case: 'two_factor_auth',
        },
        {
          phone_number_id: pending.id,
          phone_number: pending.phone_number,
          status: 'pending',
          use_case: 'marketing',
        },
        {
          phone_number_id: rejected.id,
          phone_number: rejected.phone_number,
          status: 'rejected',
          use_case: 'other',
        },
        {
          phone_number_id: never.id,
          phone_number: never.phone_number,
          status: 'not_submitted',
          use_case: null,
        },
        {
          phone_number_id: resubmitted.id,
          phone_number: resubmitted.phone_number,
          status: 'pending',
          use_case: 'customer_support',
        },
      ],
    });
  });

  it('is all zeros for an organization without numbers; a deleted number leaves it, its record with it', async () => {
    const user = await f.user();
    const empty = await summary(user.headers);
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({
      total_numbers: 0,
      approved: 0,
      pending: 0,
      rejected: 0,
      not_submitted: 0,
      numbers: [],
    });
    const number = await createNumber(user);
    await submitted(user, number.id);
    expect((await summary(user.headers)).json()).toMatchObject({ total_numbers: 1, pending: 1 });
    const deleted = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/phone-numbers/${number.id}`,
      headers: user.headers,
    });
    expect(deleted.statusCode).toBe(204);
    expect((await summary(user.headers)).json()).toMatchObject({ total_numbers: 0, pending: 0, numbers: [] });
    expect(await storedRecord(number.id)).toBeUndefined();
  });
});

describe('security', () => {
  /** One call of every route, for the number `id`. */
  function everyRoute(headers: Headers, id: number, extra: { cookies?: Record<string, string> } = {}) {
    const base = { headers, ...extra };
    return Promise.all([
      t.app.inject({ method: 'GET', url: `${BASE}/status/${id}`, ...base }),
      t.app.inject({ method: 'POST', url: `${BASE}/submit`, payload: submission(id), ...base }),
      t.app.inject({ method: 'GET', url: `${BASE}/can-send/${id}`, ...base }),
      t.app.inject({ method: 'GET', url: `${BASE}/summary`, ...base }),
      t.app.inject({ method: 'PUT', url: `${BASE}/admin/status/${id}?new_status=approved`, ...base }),
    ]);
  }

  it('answers 401 without credentials, or with a bad token, on every route, and changes nothing', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    await submitted(admin, number.id);
    for (const headers of [{}, { authorization: 'Bearer not-a-real-token' }] as Headers[]) {
      for (const response of await everyRoute(headers, number.id)) expectError(response, 401);
    }
    expect((await currentStatus(admin, number.id)).status).toBe('pending');
  });

  it('refuses an API key with every area read_write (403: JWT only) on every route, and changes nothing', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    const key = await f.apiKey(admin, {
      permissions: {
        assistants: 'read_write',
        calls: 'read_write',
        campaigns: 'read_write',
        graphs: 'read_write',
        sms: 'read_write',
        phone_numbers: 'read_write',
        organization: 'read_write',
      },
    });
    for (const response of await everyRoute(key.headers, number.id)) {
      expectError(response, 403, /JWT bearer access token/);
    }
    expect(await storedRecord(number.id)).toBeUndefined();
    // The key itself works elsewhere.
    const own = await t.app.inject({
      method: 'GET',
      url: `/api/v1/phone-numbers/${number.id}`,
      headers: key.headers,
    });
    expect(own.statusCode, own.body).toBe(200);
  });

  it('refuses a cookie-only dashboard session (403), even with its CSRF token, and changes nothing', async () => {
    const admin = await f.user();
    const number = await createNumber(admin);
    const cookies = { [SESSION_COOKIE]: admin.sessionCookie };
    for (const response of await everyRoute({ 'x-csrf-token': admin.csrfToken }, number.id, { cookies })) {
      expectError(response, 403, /JWT bearer access token/);
    }
    expect(await storedRecord(number.id)).toBeUndefined();
    // The same session is good where cookies are accepted.
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', cookies });
    expect(me.statusCode, me.body).toBe(200);
  });

  it('a member (role user) submits and reads, but the review is admin only (403)', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    expect(member.role).toBe('user');
    const number = await createNumber(admin);
    const body = await submitted(member, number.id);
    expect(body.status).toBe('pending');
    expect((await storedRecord(number.id))?.submittedByUserId).toBe(member.id);
    expect((await canSend(member.headers, number.id)).statusCode).toBe(200);
    expect((await summary(member.headers)).json().total_numbers).toBe(1);
    const queries: Array<Record<string, string>> = [
      { new_status: 'approved' },
      { new_status: 'rejected', rejection_reason: 'x' },
      { new_status: 'pending' },
    ];
    for (const query of queries) {
      expectError(await review(member.headers, number.id, query), 403, /Admin role required/);
    }
    expect((await currentStatus(admin, number.id)).status).toBe('pending');
  });

  it("answers 404 for another organization's number on every route, which stays unchanged", async () => {
    const owner = await f.user();
    const stranger = await f.user();
    const submittedNumber = await createNumber(owner);
    await submitted(owner, submittedNumber.id);
    const plain = await createNumber(owner);
    const before = await currentStatus(owner, submittedNumber.id);
    for (const id of [submittedNumber.id, plain.id]) {
      expectError(await status(stranger.headers, id), 404, /Phone number not found/);
      expectError(await submit(stranger.headers, submission(id)), 404, /Phone number not found/);
      expectError(await canSend(stranger.headers, id), 404, /Phone number not found/);
      const queries: Array<Record<string, string>> = [
        { new_status: 'approved' },
        { new_status: 'rejected', rejection_reason: 'hostile' },
        { new_status: 'pending' },
      ];
      for (const query of queries) {
        expectError(await review(stranger.headers, id, query), 404, /Phone number not found/);
      }
    }
    expect((await summary(stranger.headers)).json()).toMatchObject({ total_numbers: 0, numbers: [] });
    expect(await currentStatus(owner, submittedNumber.id)).toEqual(before);
    expect(await storedRecord(submittedNumber.id)).toMatchObject({
      organizationId: owner.organizationId,
      status: 'pending',
      reviewedByUserId: null,
      submittedByUserId: owner.id,
    });
    expect(await storedRecord(plain.id)).toBeUndefined();
  });

  it('the OpenAPI document says every route takes a JWT only, and the review the admin role', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { security: unknown[]; description?: string }>>;
    };
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith(BASE))
      .flatMap(([path, item]) =>
        Object.entries(item).map(([method, op]) => ({ name: `${method} ${path}`, op })),
      );
    expect(operations.map((o) => o.name).sort()).toEqual([
      'get /v1/sms-compliance/can-send/{phone_number_id}',
      'get /v1/sms-compliance/status/{phone_number_id}',
      'get /v1/sms-compliance/summary',
      'post /v1/sms-compliance/submit',
      'put /v1/sms-compliance/admin/status/{phone_number_id}',
    ]);
    for (const { name, op } of operations) {
      expect(op.security, name).toEqual([{ bearerAuth: [] }]);
      expect(op.description, name).toContain('Accepts: JWT.');
    }
    expect(doc.paths[`${BASE}/admin/status/{phone_number_id}`]?.put?.description).toContain(
      'Requires the admin role.',
    );
  });
});

/**
 * `/sms/send` reads its sender (the number, its carrier credentials, SMS compliance) from memory
 * (domains/sms/senders.ts). Every change to what it reads takes effect on the very next send — made
 * through this platform, or through a second platform instance on the same database (on a server,
 * with its own connections, as another process would), or by a statement no platform made (an
 * operator's SQL, the CLI) — and a send still writes its message, its number's drain wake-up and
 * idempotent answer together. The workers do not run here: the sends' answers and rows are what is checked.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { expectError } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const sim = new CarrierASimulator();
let one: TestPlatform;
let two: TestPlatform;
let serial = 0;

beforeAll(async () => {
  await sim.start();
  const env = { CARRIER_A_BASE_URL: sim.baseUrl, ALLOW_PRIVATE_TARGETS: 'true' };
  one = await startTestPlatform(env, { workers: false });
  two = await startTestPlatform(env, { workers: false, shareDatabaseOf: one });
});
afterAll(async () => {
  await two?.close();
  await one?.close();
  await sim.stop();
});

interface Org {
  admin: TestUser;
  number: string;
  numberId: number;
  assistantId: number;
}

async function organization(): Promise<Org> {
  const admin = await new Factories(one).user();
  serial += 1;
  const account = { account_sid: `AC${String(serial).padStart(32, '5')}`, auth_token: `senders-${serial}` };
  sim.addAccount(account);
  const put = await one.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { carrier_a: account },
  });
  expect(put.statusCode, put.body).toBe(200);
  const assistant = await one.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name: 'Sender' },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
  const number = `+1415888${String(1000 + serial).padStart(4, '0')}`;
  const created = await one.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: number, provider: 'carrier_a', assistant_id: assistant.json().id },
  });
  expect(created.statusCode, created.body).toBe(201);
  return { admin, number, numberId: created.json().id, assistantId: assistant.json().id };
}

function send(t: TestPlatform, org: Org, extra: Record<string, unknown> = {}, headers = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/sms/send',
    headers: { ...org.admin.headers, ...headers },
    payload: { from_phone_number: org.number, to_phone_number: '+14155550123', message: 'Hi', ...extra },
  });
}

function change(t: TestPlatform, org: Org, method: 'PUT' | 'POST', url: string, payload?: object) {
  return t.app.inject({ method, url, headers: org.admin.headers, ...(payload ? { payload } : {}) });
}

async function enforceCompliance(t: TestPlatform, org: Org): Promise<void> {
  const put = await change(t, org, 'PUT', '/api/v1/organization', {
    settings: { enforce_sms_compliance: true },
  });
  expect(put.statusCode, put.body).toBe(200);
}

async function approve(t: TestPlatform, org: Org, status: 'approved' | 'pending'): Promise<void> {
  const response = await change(
    t,
    org,
    'PUT',
    `/v1/sms-compliance/admin/status/${org.numberId}?new_status=${status}`,
  );
  expect(response.statusCode, response.body).toBe(200);
}

async function submit(t: TestPlatform, org: Org): Promise<void> {
  const response = await change(t, org, 'POST', '/v1/sms-compliance/submit', {
    phone_number_id: org.numberId,
    use_case: 'appointment_reminders',
    business_name: 'Acme Dental',
    business_description: 'Appointment reminders for patients',
    sample_messages: ['Your appointment is tomorrow at 10:00.'],
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
}

/** Both platforms' caches hold the number: each has sent from it. */
async function warm(org: Org): Promise<void> {
  for (const t of [one, two]) {
    const response = await send(t, org);
    expect(response.statusCode, response.body).toBe(200);
  }
}

async function count(t: TestPlatform, query: ReturnType<typeof sql>): Promise<number> {
  const result = (await t.database.db.execute(query)) as unknown as { rows: Array<{ n: number }> };
  return Number(result.rows[0]!.n);
}

describe.each([
  ['this platform', () => one],
  ['a second platform on the same database', () => two],
])('a change made through %s takes effect on the next send of both', (_where, changer) => {
  it('SMS compliance: enforced → refused at once; approved → sends at once; back to pending → refused', async () => {
    const org = await organization();
    await warm(org);
    await enforceCompliance(changer(), org);
    for (const t of [one, two]) expectError(await send(t, org), 403, /compliance/i);
    await submit(changer(), org);
    await approve(changer(), org, 'approved');
    for (const t of [one, two]) expect((await send(t, org)).statusCode).toBe(200);
    await approve(changer(), org, 'pending');
    for (const t of [one, two]) expectError(await send(t, org), 403, /pending/i);
  });

  it("the number: moved off its assistant → 404 at once; the assistant's own carrier config wins at once", async () => {
    const org = await organization();
    await warm(org);
    const moved = await change(changer(), org, 'PUT', `/api/v1/phone-numbers/${org.numberId}`, {
      assistant_id: null,
    });
    expect(moved.statusCode, moved.body).toBe(200);
    for (const t of [one, two]) expectError(await send(t, org), 404, /No assistant/);
    const back = await change(changer(), org, 'PUT', `/api/v1/phone-numbers/${org.numberId}`, {
      assistant_id: org.assistantId,
    });
    expect(back.statusCode, back.body).toBe(200);
    for (const t of [one, two]) expect((await send(t, org)).statusCode).toBe(200);
  });

  it('the carrier credentials: removed → 400 at once', async () => {
    const org = await organization();
    await warm(org);
    const removed = await change(changer(), org, 'PUT', '/api/v1/organization', { carrier_a: null });
    expect(removed.statusCode, removed.body).toBe(200);
    for (const t of [one, two]) expectError(await send(t, org), 400, /credentials/);
  });
});

describe('changes no platform made', () => {
  it('an operator approving by SQL is seen by the next send of both platforms', async () => {
    const org = await organization();
    await enforceCompliance(one, org);
    await submit(one, org);
    for (const t of [one, two]) expectError(await send(t, org), 403, /pending/i);
    await one.database.db.execute(
      sql`update sms_compliance set status = 'approved' where phone_number_id = ${org.numberId}`,
    );
    for (const t of [one, two]) expect((await send(t, org)).statusCode).toBe(200);
  });

  it('a stale sender writes nothing: the send is resolved again and written once, with its wake-up', async () => {
    const org = await organization();
    await warm(org);
    // The warm-up's sends left the number's drain wake-up waiting: without it, only this send's
    // statement can write the one counted below.
    await one.database.db.execute(
      sql`delete from pgboss.job where name = 'sms.drain' and singleton_key = ${String(org.numberId)}`,
    );
    // A version bump with no notification (as if the NOTIFY were lost): only the check in the
    // send statement can notice it.
    await one.database.db.execute(
      sql`update sms_sending_versions set version = version + 1
          where organization_id = (select organization_id from phone_numbers where id = ${org.numberId})`,
    );
    const response = await send(one, org, { message: 'After a bump' });
    expect(response.statusCode, response.body).toBe(200);
    const id = response.json().message_id as string;
    expect(await count(one, sql`select count(*)::int as n from messages where body = 'After a bump'`)).toBe(
      1,
    );
    expect(await count(one, sql`select count(*)::int as n from messages where id = ${id}`)).toBe(1);
    expect(
      await count(
        one,
        sql`select count(*)::int as n from pgboss.job where name = 'sms.drain'
            and data->>'phone_number_id' = ${String(org.numberId)} and state = 'created'`,
      ),
    ).toBe(1);
  });
});

describe('one statement', () => {
  it('writes the message, its number’s drain wake-up and the idempotent answer together; a repeat gets the answer', async () => {
    const org = await organization();
    const key = `key-${serial}`;
    const first = await send(one, org, { message: 'Keyed' }, { 'idempotency-key': key });
    expect(first.statusCode, first.body).toBe(200);
    const again = await send(two, org, { message: 'Keyed' }, { 'idempotency-key': key });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(first.json());
    const other = await send(two, org, { message: 'Other' }, { 'idempotency-key': key });
    expect(other.statusCode, other.body).toBe(422);
    const id = first.json().message_id as string;
    expect(await count(one, sql`select count(*)::int as n from messages where body = 'Keyed'`)).toBe(1);
    expect(
      await count(
        one,
        sql`select count(*)::int as n from sms_idempotency_keys where key = ${key} and message_id = ${id}
            and response->'body'->>'message_id' = ${id}`,
      ),
    ).toBe(1);
    // The organization's first send: its statement wrote the number's one wake-up.
    const job = (await one.database.db.execute(
      sql`select j.state, j.data, j.singleton_key, j.retry_limit, j.retry_delay, j.retry_backoff,
            extract(epoch from j.expire_in)::int as expire, j.policy,
            j.keep_until > now() + interval '13 days' as kept, j.start_after <= now() as due
          from pgboss.job j where j.name = 'sms.drain'
            and j.data->>'organization_id' = (select organization_id::text from messages where id = ${id})`,
    )) as unknown as { rows: Array<Record<string, unknown>> };
    // The queue's policy (jobs.ts), as pg-boss's own send would have written it.
    expect(job.rows).toEqual([
      {
        state: 'created',
        data: { organization_id: expect.any(Number), phone_number_id: org.numberId },
        singleton_key: String(org.numberId),
        retry_limit: 10,
        retry_delay: 1,
        retry_backoff: true,
        expire: 30,
        policy: 'short',
        kept: true,
        due: true,
      },
    ]);
  });

  it('a key older than 24 hours is taken over by a new request', async () => {
    const org = await organization();
    const key = `old-${serial}`;
    const first = await send(one, org, { message: 'Old' }, { 'idempotency-key': key });
    expect(first.statusCode, first.body).toBe(200);
    await one.database.db.execute(
      sql`update sms_idempotency_keys set created_at = now() - interval '25 hours' where key = ${key}`,
    );
    const second = await send(two, org, { message: 'New' }, { 'idempotency-key': key });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().message_id).not.toBe(first.json().message_id);
  });
});

/**
 * Queued sends arriving together are written together (domains/sms/send-groups.ts): one statement
 * for the messages, drain wake-ups and idempotent answers of every send that waited while the previous one
 * was in flight. Each request still gets its own answer: concurrent sends all land once, a key sent
 * concurrently is held by one of them and the rest answer as repeats (or 422 for another body), and
 * one send that cannot be written (its sender stale, its key taken, a row breaking a constraint)
 * leaves the others of its statement written. The workers do not run here.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { configVersion } from '../src/domains/runtime/versioned-cache.js';
import { SendGroups } from '../src/domains/sms/send-groups.js';
import type { GroupedSend } from '../src/domains/sms/send-store.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import type { TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { smsNumber, smsOrganization } from './support/sms-drain.js';

const sim = new CarrierASimulator();
let t: TestPlatform;

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { workers: false });
});
afterAll(async () => {
  await t?.close();
  await sim.stop();
});

interface Org {
  admin: TestUser;
  organizationId: number;
  number: string;
  numberId: number;
  assistantId: number;
}

async function organization(): Promise<Org> {
  const org = await smsOrganization(t, sim);
  // The number's default rate: these tests count statements, not the pace of the drain.
  return { ...org, ...(await smsNumber(t, org, null)) };
}

function send(org: Org, extra: Record<string, unknown> = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/sms/send',
    headers: org.admin.headers,
    payload: { from_phone_number: org.number, to_phone_number: '+14155550123', message: 'Hi', ...extra },
  });
}

function queuedSend(org: Org, version: number, message: string): GroupedSend {
  return {
    version,
    row: {
      id: randomUUID(),
      phoneNumberId: org.numberId,
      assistantId: org.assistantId,
      provider: 'carrier_a',
      from: org.number,
      to: '+14155550123',
      body: message,
      mediaUrls: [],
      segments: 1,
      status: 'queued',
    },
  };
}

async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  return ((await t.database.db.execute(query)) as unknown as { rows: T[] }).rows;
}

describe('grouped queued sends', () => {
  it('concurrent requests are each written once, with their number’s one drain wake-up', async () => {
    const org = await organization();
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => send(org, { message: `g${i}` })));
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);
    const ids = answers.map((answer) => answer.json().message_id as string);
    expect(new Set(ids).size).toBe(60);
    // One wake-up waits per number (the queue's `short` policy): the first statement wrote it, the
    // later ones found it waiting.
    const [written] = await rows<{ messages: number; jobs: number; matched: number }>(sql`
      select count(*)::int as messages,
        count(*) filter (where m.id::text = any(${`{${ids.join(',')}}`}::text[]))::int as matched,
        (select count(*)::int from pgboss.job j where j.name = 'sms.drain' and j.state = 'created'
          and j.singleton_key = ${String(org.numberId)}
          and j.data = jsonb_build_object('organization_id', ${org.organizationId}::int,
            'phone_number_id', ${org.numberId}::int)) as jobs
      from messages m where m.organization_id = ${org.organizationId} and m.status = 'queued'`);
    expect(written).toEqual({ messages: 60, matched: 60, jobs: 1 });
  });

  it('sends waiting while a statement is in flight are written by the next one, together', async () => {
    const org = await organization();
    const tenant = new Tenant(org.organizationId);
    const version = await configVersion(t.database.db, tenant);
    let wakes = 0;
    const groups = new SendGroups(t.database.db, () => wakes++);
    // All 60 arrive at once: the first is written alone at once, the other 59 wait for it and
    // then share the next statement.
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => groups.write(tenant, queuedSend(org, version, `w${i}`))),
    );
    expect(new Set(outcomes)).toEqual(new Set(['written']));
    // A statement's rows share its transaction's now(): two distinct times, two statements. The
    // first wrote the number's drain wake-up (and woke a worker), the second found it waiting.
    const [written] = await rows<{ messages: number; statements: number; jobs: number }>(sql`
      select count(*)::int as messages, count(distinct m.created_at)::int as statements,
        (select count(*)::int from pgboss.job j where j.name = 'sms.drain'
          and j.data->>'organization_id' = ${String(org.organizationId)}) as jobs
      from messages m where m.organization_id = ${org.organizationId}`);
    expect(written).toEqual({ messages: 60, statements: 2, jobs: 1 });
    expect(wakes).toBe(1);
  });

  it('one key sent concurrently is held once; the same body gets its answer, another body 422', async () => {
    const org = await organization();
    const same = await Promise.all(
      Array.from({ length: 20 }, () => send(org, { message: 'Once', idempotency_key: 'together' })),
    );
    for (const answer of same) expect(answer.statusCode, answer.body).toBe(200);
    expect(new Set(same.map((answer) => answer.json().message_id)).size).toBe(1);
    const mixed = await Promise.all(
      Array.from({ length: 10 }, (_, i) => send(org, { message: `Body ${i}`, idempotency_key: 'mixed' })),
    );
    expect(mixed.filter((answer) => answer.statusCode === 200)).toHaveLength(1);
    expect(mixed.filter((answer) => answer.statusCode === 422)).toHaveLength(9);
    const [counted] = await rows<{ once: number; mixed: number }>(sql`
      select count(*) filter (where body = 'Once')::int as once,
        count(*) filter (where body like 'Body %')::int as mixed
      from messages where organization_id = ${org.organizationId}`);
    expect(counted).toEqual({ once: 1, mixed: 1 });
  });

  it('a send that cannot be written does not stop the others of its statement', async () => {
    const org = await organization();
    const tenant = new Tenant(org.organizationId);
    const version = await configVersion(t.database.db, tenant);
    const taken = await send(org, { message: 'First holder', idempotency_key: 'held' });
    expect(taken.statusCode, taken.body).toBe(200);
    const grouped = (message: string, extra: Partial<GroupedSend> = {}, numberId = org.numberId) => ({
      ...queuedSend({ ...org, numberId }, version, message),
      ...extra,
    });
    const groups = new SendGroups(t.database.db);
    const answer = { status: 200, body: {} };
    const [first, stale, keyTaken, good, broken, last] = await Promise.allSettled([
      groups.write(tenant, grouped('good 1')),
      groups.write(tenant, grouped('stale', { version: version + 1 })),
      groups.write(tenant, grouped('taken', { idempotency: { key: 'held', hash: 'other', answer } })),
      groups.write(tenant, grouped('good 2', { idempotency: { key: 'fresh', hash: 'h', answer } })),
      // No such number: the row breaks a foreign key and takes its statement down with it.
      groups.write(tenant, grouped('broken', {}, 2_000_000_000)),
      groups.write(tenant, grouped('good 3')),
    ]);
    expect(first).toEqual({ status: 'fulfilled', value: 'written' });
    expect(stale).toEqual({ status: 'fulfilled', value: 'stale' });
    expect(keyTaken).toEqual({ status: 'fulfilled', value: 'key-taken' });
    expect(good).toEqual({ status: 'fulfilled', value: 'written' });
    expect(broken.status).toBe('rejected');
    expect(last).toEqual({ status: 'fulfilled', value: 'written' });
    // The same without the broken row: the group's one statement sorts them out itself.
    const together = await Promise.all([
      groups.write(tenant, grouped('good 4')),
      groups.write(tenant, grouped('stale again', { version: version + 1 })),
      groups.write(tenant, grouped('taken again', { idempotency: { key: 'held', hash: 'other', answer } })),
      groups.write(tenant, grouped('good 5', { idempotency: { key: 'fresh 2', hash: 'h', answer } })),
    ]);
    expect(together).toEqual(['written', 'stale', 'key-taken', 'written']);
    const bodies = await rows<{ body: string }>(sql`
      select body from messages where organization_id = ${org.organizationId} order by body`);
    expect(bodies.map((row) => row.body)).toEqual([
      'First holder',
      'good 1',
      'good 2',
      'good 3',
      'good 4',
      'good 5',
    ]);
    // The one number's drain wake-up, written by the first statement and waiting still.
    const [jobs] = await rows<{ n: number }>(sql`
      select count(*)::int as n from pgboss.job where name = 'sms.drain' and state = 'created'
        and data->>'organization_id' = ${String(org.organizationId)}`);
    expect(jobs!.n).toBe(1);
  });
});

/**
 * The SMS drain (domains/sms/drain.ts) across what can go wrong: a process that claimed messages and
 * died before sending them (they are never sent, and fail as interrupted a minute later), retryable
 * carrier failures (back in the queue without holding the rest up, sent after their back-off, failed
 * after the last attempt), a batch whose answers differ (each recorded and charged as its own), a
 * cancelled message (skipped, taking no slot), a removed number (its queued messages fail), and
 * wake-ups lost (a process starting its workers wakes every queue).
 *
 * The API runs on a platform without workers, so each test queues what it needs first; the drain
 * runs on a second platform instance on the same database (a second process on a server), started
 * when the test wants the queue to move, listening so that the simulator's receipts reach it.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { configVersion } from '../src/domains/runtime/versioned-cache.js';
import { CLAIM_RULES, NUMBER_REMOVED_ERROR } from '../src/domains/sms/drain.js';
import { claimDue } from '../src/domains/sms/drain-store.js';
import { INTERRUPTED_ERROR } from '../src/domains/sms/settlement.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import {
  arrivedFrom,
  messageOf,
  queue,
  type SmsNumber,
  type SmsOrg,
  smsNumber,
  smsOrganization,
  waitStatus,
} from './support/sms-drain.js';

const sim = new CarrierASimulator();
let api: TestPlatform;

beforeAll(async () => {
  await sim.start();
  api = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { workers: false });
});
afterAll(async () => {
  await api?.close();
  await sim.stop();
});

/** A platform on the same database whose workers drain (a second process on a server). */
async function drainer(): Promise<TestPlatform> {
  return startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true, shareDatabaseOf: api });
}

/** Runs `body` with a draining platform, closed after the simulator's receipts have reached it. */
async function draining(body: (workers: TestPlatform) => Promise<void>): Promise<void> {
  const workers = await drainer();
  try {
    await body(workers);
    await sim.settle();
  } finally {
    await workers.close();
  }
}

async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  return ((await api.database.db.execute(query)) as unknown as { rows: T[] }).rows;
}

async function setup(rate: number): Promise<{ org: SmsOrg; from: SmsNumber }> {
  const org = await smsOrganization(api, sim);
  return { org, from: await smsNumber(api, org, rate) };
}

describe('a process that claimed messages and died before sending them', () => {
  it('never sends them; a minute after the claim the number’s next claim fails them as interrupted', async () => {
    const { org, from } = await setup(50);
    const claimedId = await queue(api, org, from, 'Claimed, then the process died');
    // A process runs the drain's claim, exactly as its job does, and dies before the carrier hears.
    const tenant = new Tenant(org.organizationId);
    const claim = await claimDue(api.database.db, tenant, from.numberId, {
      ...CLAIM_RULES,
      version: await configVersion(api.database.db, tenant),
      defaultRate: 1,
      notBeforeSeconds: 0,
    });
    expect(claim.kind === 'claimed' && claim.messages.map((m) => m.id)).toEqual([claimedId]);
    expect(await messageOf(api, org, claimedId)).toMatchObject({ status: 'sending', attempts: 1 });

    await draining(async (workers) => {
      // Another process drains the number: later messages go; the claimed one may be at the
      // carrier, so it is left alone.
      const after = await queue(api, org, from, 'After the crash');
      await waitStatus(api, org, after, 'delivered');
      expect(await messageOf(api, org, claimedId)).toMatchObject({
        status: 'sending',
        attempts: 1,
        error: null,
      });

      // A minute after its claim, the number's next claim fails it as interrupted.
      await api.database.db.execute(
        sql`update messages set updated_at = now() - interval '61 seconds' where id = ${claimedId}`,
      );
      const later = await queue(api, org, from, 'A minute later');
      await waitStatus(api, org, later, 'delivered');
      expect(await messageOf(api, org, claimedId)).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: INTERRUPTED_ERROR,
        sent_at: null,
        cost: null,
      });
      expect(workers.logs.filter((line) => /"level":50/.test(line))).toEqual([]);
    });
    expect(arrivedFrom(sim, from).map((m) => m.body)).toEqual(['After the crash', 'A minute later']);
  });
});

describe('retryable carrier failures', () => {
  it('put the message back in the queue without holding the rest up; it goes after its back-off', async () => {
    const { org, from } = await setup(20);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await queue(api, org, from, `In line ${i}`));
    // The carrier's next request fails (the drain's first, once its workers start).
    sim.failNext(1, 503, { code: 20500, message: 'Service Unavailable', status: 503 });
    await draining(async () => {
      // The first is refused for now; the three behind it go meanwhile, in their order.
      for (const id of ids.slice(1)) await waitStatus(api, org, id, 'delivered');
      // The batch's answers are recorded together, after the last of them: a receipt of a later
      // message may arrive before the refusal of the first is on its record.
      const waiting = await waitFor(async () => {
        const message = await messageOf(api, org, ids[0]!);
        return message.attempts === 1 ? message : undefined;
      });
      expect(waiting).toMatchObject({ status: 'queued', attempts: 1 });
      expect(waiting.error).toMatch(/503/);
      expect(arrivedFrom(sim, from).map((m) => m.body)).toEqual(['In line 1', 'In line 2', 'In line 3']);
      // Ten seconds after the failure it is claimed again and sent.
      const delivered = await waitStatus(api, org, ids[0]!, 'delivered', 30_000);
      expect(delivered).toMatchObject({ attempts: 2, error: null, cost: 0.0075 });
      const failedAt = Date.parse(String(waiting.updated_at));
      expect(Date.parse(String(delivered.sent_at)) - failedAt).toBeGreaterThanOrEqual(10_000 - 50);
    });
    expect(arrivedFrom(sim, from).map((m) => m.body)).toEqual([
      'In line 1',
      'In line 2',
      'In line 3',
      'In line 0',
    ]);
  }, 60_000);

  it('fail the message with the carrier’s words at its sixth attempt', async () => {
    const { org, from } = await setup(20);
    const id = await queue(api, org, from, 'Last chance');
    // Five attempts failed already (their back-off long over).
    await api.database.db.execute(
      sql`update messages set attempts = 5, updated_at = now() - interval '1 hour' where id = ${id}`,
    );
    sim.failNext(1, 503, { code: 20500, message: 'Service Unavailable', status: 503 });
    await draining(async () => {
      const failed = await waitStatus(api, org, id, 'failed');
      expect(failed).toMatchObject({ attempts: 6, sent_at: null, cost: null });
      expect(failed.error).toMatch(/503: Service Unavailable/);
    });
    expect(arrivedFrom(sim, from)).toHaveLength(0);
  });
});

describe('a batch whose answers differ', () => {
  it('records each message as its own: refused ones failed and not charged, accepted ones charged in order', async () => {
    const { org, from } = await setup(50);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await queue(api, org, from, `Batch ${i}`));
    const [before] = await rows<{ balance: number }>(
      sql`select coalesce((select balance::float8 from wallets where organization_id = ${org.organizationId}), 0) as balance`,
    );
    // At 50/s the five fit one claim's horizon: one batch. The carrier refuses its first.
    sim.failNext(1, 400, { code: 21211, message: "Invalid 'To' Phone Number", status: 400 });
    await draining(async () => {
      for (const id of ids.slice(1)) await waitStatus(api, org, id, 'delivered');
      const refused = await waitStatus(api, org, ids[0]!, 'failed');
      expect(refused).toMatchObject({ attempts: 1, sent_at: null, cost: null });
      expect(refused.error).toMatch(/Invalid 'To' Phone Number/);
    });
    // One ledger entry per accepted message, in the queue's order, each with the balance after it.
    const entries = await rows<{ reference: string; amount: number; balance_after: number }>(sql`
      select reference, amount::float8 as amount, balance_after::float8 as balance_after from ledger_entries
      where organization_id = ${org.organizationId} and kind = 'sms' order by id`);
    expect(entries.map((entry) => entry.reference)).toEqual(ids.slice(1).map((id) => `sms:${id}`));
    entries.forEach((entry, i) => {
      expect(entry.amount).toBe(-0.0075);
      expect(entry.balance_after).toBeCloseTo(Number(before!.balance) - 0.0075 * (i + 1), 6);
    });
    const [wallet] = await rows<{ balance: number }>(
      sql`select balance::float8 as balance from wallets where organization_id = ${org.organizationId}`,
    );
    expect(wallet!.balance).toBeCloseTo(entries.at(-1)!.balance_after, 6);
  });
});

describe('cancelling before the claim', () => {
  it('skips the message, which takes no slot: the next one goes a gap after the one before it', async () => {
    const { org, from } = await setup(2);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await queue(api, org, from, `Cancel test ${i}`));
    const cancelled = await api.app.inject({
      method: 'DELETE',
      url: `/sms/${ids[1]}`,
      headers: org.admin.headers,
    });
    expect(cancelled.statusCode, cancelled.body).toBe(204);
    await draining(async () => {
      for (const id of [ids[0]!, ids[2]!, ids[3]!]) await waitStatus(api, org, id, 'delivered');
    });
    const arrived = arrivedFrom(sim, from);
    expect(arrived.map((m) => m.body)).toEqual(['Cancel test 0', 'Cancel test 2', 'Cancel test 3']);
    expect(await messageOf(api, org, ids[1]!)).toMatchObject({ status: 'cancelled', attempts: 0 });
    // A slot is about 0.51 s at 2/s; a cancelled message holding one would leave a second's hole.
    expect(arrived[1]!.at - arrived[0]!.at).toBeLessThan(950);
  });
});

describe('a removed number', () => {
  it('fails its queued messages when its drain next runs', async () => {
    const { org, from } = await setup(5);
    const ids = [await queue(api, org, from, 'Orphan 0'), await queue(api, org, from, 'Orphan 1')];
    const removed = await api.app.inject({
      method: 'DELETE',
      url: `/api/v1/phone-numbers/${from.numberId}`,
      headers: org.admin.headers,
    });
    expect(removed.statusCode, removed.body).toBe(204);
    await draining(async () => {
      for (const id of ids) {
        const failed = await waitStatus(api, org, id, 'failed');
        expect(failed).toMatchObject({ error: NUMBER_REMOVED_ERROR, attempts: 0, sent_at: null });
      }
    });
    expect(arrivedFrom(sim, from)).toHaveLength(0);
  });
});

describe('wake-ups lost', () => {
  it('a process starting its workers wakes the drain of every number with queued messages', async () => {
    const { org, from } = await setup(20);
    const other = await smsNumber(api, org, 20);
    const ids = [await queue(api, org, from, 'Lost 0'), await queue(api, org, other, 'Lost 1')];
    // As if the wake-ups were lost (a run that failed for good, or the jobs of an older version).
    await api.database.db.execute(
      sql`delete from pgboss.job where name = 'sms.drain'
          and data->>'organization_id' = ${String(org.organizationId)}`,
    );
    await draining(async () => {
      for (const id of ids) await waitStatus(api, org, id, 'delivered');
    });
    expect(arrivedFrom(sim, from)).toHaveLength(1);
    expect(arrivedFrom(sim, other)).toHaveLength(1);
  });
});

describe('one statement per send', () => {
  it('wakes each number it wrote to once, and writes no wake-up for a number that has one waiting', async () => {
    const { org, from } = await setup(20);
    const other = await smsNumber(api, org, 20);
    await Promise.all([
      queue(api, org, from, 'Both 0'),
      queue(api, org, other, 'Both 1'),
      queue(api, org, from, 'Both 2'),
    ]);
    await queue(api, org, from, 'Both 3');
    const jobs = await rows<{ key: string; n: number }>(sql`
      select singleton_key as key, count(*)::int as n from pgboss.job
      where name = 'sms.drain' and data->>'organization_id' = ${String(org.organizationId)}
      group by singleton_key order by singleton_key`);
    expect(new Map(jobs.map((job) => [job.key, job.n]))).toEqual(
      new Map([
        [String(from.numberId), 1],
        [String(other.numberId), 1],
      ]),
    );
  });
});

/**
 * Campaign moves racing the executor (issue 14, item 9). Fifty rounds: a campaign is started, and
 * while the real job-queue workers dispatch its contacts, place calls and finish attempts from the
 * carrier simulator's callbacks, pause, resume (start) and stop arrive at once. Every move must
 * answer 200 or a 409 (never a 500 such as PostgreSQL's "deadlock detected"); no job and no carrier
 * callback may fail on a lock conflict; and once everything has settled each campaign is consistent:
 * no attempt left hanging, every contact finished, counters equal to the contacts' statuses, no
 * attempt number dialled twice. The tests share one platform and run in order: the second checks
 * what the rounds of the first left behind.
 *
 * PGlite has a single session, so nothing can deadlock there; the rounds still run and must pass.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDeadlock, isUniqueViolation } from '../src/db/errors.js';
import { CONFLICT_RETRY } from '../src/db/retry.js';
import { campaignContacts, campaignExecutions, campaigns } from '../src/db/schema/index.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const ROUNDS = 50;
/** Contacts per campaign: enough that dispatches and attempt finishes keep coming during the race. */
const CONTACTS = 8;

const sim = new CarrierASimulator();
let t: TestPlatform;
let f: Factories;
let org: CarrierOrganization;
let serial = 0;
const raced: number[] = [];

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform(
    { CARRIER_A_BASE_URL: sim.baseUrl, CAMPAIGN_ORGANIZATION_CONCURRENCY: '100' },
    { listen: true },
  );
  f = new Factories(t);
  org = await f.carrierOrganization({ sim, assistantName: 'Racer' });
  // Busy lines: every contact is tried twice, so attempts finish and dispatches follow throughout.
  sim.setCallOutcome('*', { status: 'busy' });
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

function nextNumber(): string {
  serial += 1;
  return `+1415666${String(1000 + serial).padStart(4, '0')}`;
}

async function campaign(): Promise<number> {
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: org.admin.headers,
    payload: {
      name: `Race ${serial}`,
      campaign_type: 'call',
      assistant_id: org.assistantId,
      max_attempts: 2,
      retry_delay_minutes: 0,
      concurrency_limit: 4,
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as number;
  const added = await t.app.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${id}/contacts`,
    headers: org.admin.headers,
    payload: { contacts: Array.from({ length: CONTACTS }, () => ({ phone_number: nextNumber() })) },
  });
  expect(added.statusCode, added.body).toBe(200);
  return id;
}

function move(id: number, verb: 'start' | 'pause' | 'stop') {
  return t.app.inject({ method: 'POST', url: `/api/v1/campaigns/${id}/${verb}`, headers: org.admin.headers });
}

async function executionCount(id: number): Promise<number> {
  const [row] = await t.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(campaignExecutions)
    .where(eq(campaignExecutions.campaignId, id));
  return Number(row?.n ?? 0);
}

describe('moves racing the executor', () => {
  it(`stop, pause and resume racing dispatch ${ROUNDS} times answer 200 or 409, never 500`, async () => {
    const answers: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const id = await campaign();
      raced.push(id);
      expect((await move(id, 'start')).statusCode).toBe(200);
      // The executor is at work: the first dispatch has claimed contacts into attempts.
      await waitFor(async () => (await executionCount(id)) > 0, 10_000);
      // Each round a different interleaving: the moves leave in a rotated order, a few ms apart.
      const verbs = ['pause', 'start', 'stop', 'pause', 'start', 'stop'] as const;
      const order = verbs.map((_, i) => verbs[(i + round) % verbs.length]!);
      const responses = await Promise.all(
        order.map(async (verb, i) => {
          if (i % 2 === 1) await new Promise((resolve) => setTimeout(resolve, round % 7));
          return { verb, response: await move(id, verb) };
        }),
      );
      for (const { verb, response } of responses) {
        answers.push(`${verb} ${response.statusCode}`);
        expect([200, 409], `round ${round}: ${verb} answered ${response.body}`).toContain(
          response.statusCode,
        );
      }
      // The campaign ends cancelled whatever order the moves took (unless it completed first).
      const last = await move(id, 'stop');
      expect([200, 409], last.body).toContain(last.statusCode);
    }
    // The moves did race: some were refused because another had already moved the campaign.
    expect(answers.some((a) => a.endsWith('409'))).toBe(true);
    expect(answers.some((a) => a.endsWith('200'))).toBe(true);
  }, 120_000);

  it('leaves every raced campaign consistent, and no transaction deadlocked (not even one run again)', async () => {
    expect(raced).toHaveLength(ROUNDS);
    // Attempts under way when the campaign stopped finish from their callbacks.
    await waitFor(async () => {
      await sim.settle();
      const [row] = await t.database.db
        .select({ n: sql<number>`count(*)::int` })
        .from(campaignExecutions)
        .where(
          and(
            inArray(campaignExecutions.campaignId, raced),
            inArray(campaignExecutions.status, ['pending', 'in_progress']),
          ),
        );
      return Number(row?.n) === 0;
    }, 30_000);

    const rows = await t.database.db.select().from(campaigns).where(inArray(campaigns.id, raced));
    for (const row of rows) expect(['cancelled', 'completed'], `campaign ${row.id}`).toContain(row.status);

    const contacts = await t.database.db
      .select()
      .from(campaignContacts)
      .where(inArray(campaignContacts.campaignId, raced));
    for (const contact of contacts)
      expect(['completed', 'failed', 'skipped'], `contact ${contact.id}`).toContain(contact.status);
    for (const row of rows) {
      const mine = contacts.filter((c) => c.campaignId === row.id);
      expect(row.completedContacts, `campaign ${row.id}`).toBe(
        mine.filter((c) => c.status === 'completed').length,
      );
      expect(row.failedContacts, `campaign ${row.id}`).toBe(mine.filter((c) => c.status === 'failed').length);
    }

    // One dial per call attempt: no attempt was made twice by a transaction run again.
    const dialled = await t.database.db
      .select({ callId: campaignExecutions.callId })
      .from(campaignExecutions)
      .where(
        and(inArray(campaignExecutions.campaignId, raced), sql`${campaignExecutions.callId} is not null`),
      );
    const numbers = new Set(contacts.map((c) => c.phoneNumber));
    const dials = [...sim.calls.values()].filter((call) => numbers.has(call.to));
    expect(dials).toHaveLength(dialled.length);

    const { rows: failedJobs } = await t.database.executeSql(
      `select name, output::text as output from pgboss.job
       where name like 'campaign.%' and output::text ~* 'deadlock|could not serialize'`,
    );
    expect(failedJobs).toEqual([]);
    const refusedCallbacks = sim.callbacks.filter((c) => typeof c.status === 'number' && c.status >= 500);
    expect(refusedCallbacks).toEqual([]);
    // A deadlock run again by retryingTransaction is logged: the lock order must make none happen.
    const conflicts = t.logs.filter((line) => /deadlock detected|could not serialize/.test(line));
    expect(conflicts, 'transactions aborted by a lock conflict').toEqual([]);
  }, 60_000);
});

/**
 * `queue.retryingTransaction` on a real database error: PL/pgSQL raises the SQLSTATE PostgreSQL
 * gives a transaction it aborts for a deadlock (40P01) or a serialization failure (40001) — the
 * same error object, on either database, without having to lose a race on purpose.
 */
describe('a transaction aborted by a lock conflict runs again', () => {
  const raise = (state: string) =>
    sql.raw(`do $$ begin raise exception 'simulated conflict' using errcode = '${state}'; end $$`);

  /** A campaign to write in the body, and the wakeup jobs the body enqueues for it. */
  async function target(): Promise<{ id: number; wakeups: () => Promise<number> }> {
    const id = await campaign();
    const wakeups = async () => {
      const { rows } = await t.database.executeSql(
        `select count(*)::int as n from pgboss.job where name = 'campaign.wakeup' and (data->>'campaign_id')::int = $1`,
        [id],
      );
      return Number(rows[0]!.n);
    };
    return { id, wakeups };
  }

  async function nameOf(id: number): Promise<string> {
    const [row] = await t.database.db.select().from(campaigns).where(eq(campaigns.id, id));
    return row!.name;
  }

  for (const [state, what] of [
    ['40P01', 'a deadlock'],
    ['40001', 'a serialization failure'],
  ] as const) {
    it(`after ${what} (${state}): only the run that commits leaves its writes and jobs`, async () => {
      const { id, wakeups } = await target();
      let runs = 0;
      const result = await t.platform.queue.retryingTransaction(async (tx, jobs) => {
        runs += 1;
        await tx
          .update(campaigns)
          .set({ name: `Run ${runs}` })
          .where(eq(campaigns.id, id));
        await jobs.enqueue('campaign.wakeup', { campaign_id: id, organization_id: org.admin.organizationId });
        if (runs < 3) await tx.execute(raise(state));
        return runs;
      });
      expect(result).toBe(3);
      expect(await nameOf(id)).toBe('Run 3');
      expect(await wakeups()).toBe(1);
    });
  }

  it('gives up after its bounded number of runs, with the conflict', async () => {
    const { id, wakeups } = await target();
    let runs = 0;
    const error = await t.platform.queue
      .retryingTransaction(async (tx, jobs) => {
        runs += 1;
        await jobs.enqueue('campaign.wakeup', { campaign_id: id, organization_id: org.admin.organizationId });
        await tx.execute(raise('40P01'));
      })
      .catch((caught: unknown) => caught);
    expect(isDeadlock(error)).toBe(true);
    expect(runs).toBe(CONFLICT_RETRY.attempts);
    expect(await wakeups()).toBe(0);
  });

  it('does not run again after any other failure', async () => {
    const { id } = await target();
    let runs = 0;
    const error = await t.platform.queue
      .retryingTransaction(async (tx) => {
        runs += 1;
        await tx.update(campaigns).set({ name: 'Changed' }).where(eq(campaigns.id, id));
        await tx.execute(raise('23505'));
      })
      .catch((caught: unknown) => caught);
    expect(isUniqueViolation(error)).toBe(true);
    expect(runs).toBe(1);
    expect(await nameOf(id)).not.toBe('Changed');
  });
});

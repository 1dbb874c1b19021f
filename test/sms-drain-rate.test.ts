/**
 * The SMS drain's pace, read from the times messages reach the carrier_a simulator: several numbers
 * drained at once each keep their order and their rate and do not wait for each other, and two
 * platform instances on one database (two processes on a server) draining the same number together
 * never exceed its rate. Wall-clock sensitive: in vitest.config.ts's `alone` project.
 *
 * The messages are queued through a platform without workers before the drain starts on another
 * instance of the same database: the order is the queue's at the start of each send, and the
 * carrier sees that order only while the way there takes less than a gap — which the test's own
 * requests, sharing this process (and the embedded database's one session), would not leave it.
 */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import {
  arrivedFrom,
  expectPaced,
  queue,
  type SmsNumber,
  smsNumber,
  smsOrganization,
} from './support/sms-drain.js';

const sim = new CarrierASimulator();
let api: TestPlatform;
/** The test's draining platforms, closed after it (and after the receipts they are owed). */
const drainers: TestPlatform[] = [];

beforeAll(async () => {
  await sim.start();
  api = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { workers: false });
});
afterEach(async () => {
  await sim.settle();
  for (const drainer of drainers.splice(0).reverse()) await drainer.close();
});
afterAll(async () => {
  await api?.close();
  await sim.stop();
});

/** A platform instance on the same database whose workers drain, listening for the receipts. */
async function drainer(): Promise<TestPlatform> {
  const started = await startTestPlatform(
    { CARRIER_A_BASE_URL: sim.baseUrl },
    { listen: true, shareDatabaseOf: api },
  );
  drainers.push(started);
  return started;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('several numbers at once', () => {
  it('each keeps its order and its rate, and none waits for another', async () => {
    const org = await smsOrganization(api, sim);
    // Half a second apart: the way to the carrier (a new connection on a loaded machine) takes
    // less, so the carrier sees the order the sends left in.
    const rate = 2;
    const count = 8;
    const numbers: SmsNumber[] = [];
    for (let i = 0; i < 3; i++) numbers.push(await smsNumber(api, org, rate));
    for (let i = 0; i < count; i++)
      for (const [n, from] of numbers.entries()) await queue(api, org, from, `Number ${n} message ${i}`);
    await drainer();
    await waitFor(() => numbers.every((from) => arrivedFrom(sim, from).length === count), 30_000);
    for (const [n, from] of numbers.entries()) {
      const arrived = arrivedFrom(sim, from);
      expect(arrived.map((m) => m.body)).toEqual(
        Array.from({ length: count }, (_, i) => `Number ${n} message ${i}`),
      );
      expectPaced(
        arrived.map((m) => m.at),
        rate,
      );
    }
    // Side by side: the three took about the time one takes at its rate, not three times it.
    const first = Math.min(...numbers.map((from) => arrivedFrom(sim, from)[0]!.at));
    const last = Math.max(...numbers.map((from) => arrivedFrom(sim, from).at(-1)!.at));
    expect(last - first).toBeLessThan(((count - 1) / rate) * 1000 * 2);
  }, 60_000);
});

describe('two platforms on one database', () => {
  it('draining one number together, never exceed its rate and send each message once', async () => {
    const org = await smsOrganization(api, sim);
    // Slower than a claim's horizon: every message is a claim of its own, raced for by the two.
    const rate = 4;
    const count = 16;
    const from = await smsNumber(api, org, rate);
    const both = [await drainer(), await drainer()];
    // The number's first turn a moment from now: the platforms have started, and the messages are
    // all queued, when its drain begins.
    await api.database.db.execute(
      sql`update phone_numbers set sms_next_send_at = now() + interval '1.5 seconds' where id = ${from.numberId}`,
    );
    for (let i = 0; i < count; i++) await queue(api, org, from, `Shared ${i}`);
    // Besides their workers, each platform's drain job is called over and over, as two processes'
    // workers racing for the number would.
    const payload = { organization_id: org.organizationId, phone_number_id: from.numberId };
    let racing = true;
    const race = both.map(async (platform) => {
      while (racing) {
        await platform.platform.services.sms.runDrain(payload);
        await sleep(5);
      }
    });
    try {
      await waitFor(() => arrivedFrom(sim, from).length >= count, 30_000);
    } finally {
      racing = false;
      await Promise.all(race);
    }
    await sleep(500);
    const arrived = arrivedFrom(sim, from);
    expect(arrived).toHaveLength(count);
    expect(new Set(arrived.map((m) => m.body)).size).toBe(count);
    expectPaced(
      arrived.map((m) => m.at),
      rate,
    );
    // Both took part: each message names the platform that sent it in its receipt address.
    const senders = new Set(
      sim.requests
        .filter((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))
        .map((r) => r.body as Record<string, string>)
        .filter((form) => form.From === from.number)
        .map((form) => new URL(form.StatusCallback!).origin),
    );
    expect(senders).toEqual(new Set(both.map((platform) => platform.baseUrl)));
  }, 60_000);
});

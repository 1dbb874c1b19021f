/**
 * Campaign dispatch: a call campaign of `contacts` contacts run to completion against the carrier_a
 * simulator answering every call at once (a 1-second call, its callbacks posted straight away), with
 * concurrency_limit and CAMPAIGN_ORGANIZATION_CONCURRENCY of IN_FLIGHT (20). Measures executions per second
 * from the start move until the campaign is `completed` (every contact finished: dialled, answered,
 * status callbacks applied, contact and counters updated), and the queue's share of the time.
 *
 * Baseline in the same run: the same number of calls placed directly with `POST /calls/initiate`
 * (IN_FLIGHT at a time over real HTTP) until the simulator's final callbacks are applied — the telephony
 * path alone, without the executor's dispatching, claiming and finishing.
 */
import { eq, sql } from 'drizzle-orm';
import { calls } from '../src/db/schema/index.js';
import { startCarrierA } from './fixtures/carrier-a-process.js';
import { benchUser, startBenchPlatform, table } from './support.js';

const FROM = '+14155550100';
/** Attempts (and baseline requests) in flight at once. */
const IN_FLIGHT = 20;
const contactNumber = (i: number) => `+1415${String(2_000_000 + i).padStart(7, '0')}`;

export async function benchDispatch(contacts: number): Promise<void> {
  // In its own process: this process's CPU time is then the platform's (and the baseline's client).
  const sim = await startCarrierA(1);
  const bench = await startBenchPlatform({
    CARRIER_A_BASE_URL: sim.baseUrl,
    CAMPAIGN_ORGANIZATION_CONCURRENCY: String(IN_FLIGHT),
  });
  const { app, database } = bench.platform;
  try {
    const account = { account_sid: `AC${'d'.repeat(32)}`, auth_token: 'dispatch-bench-token' };
    await sim.addAccount(account);
    const { headers, organizationId } = await benchUser(bench.platform, 'dispatch');
    // Enough credit for every call of both runs.
    await bench.platform.services.billing.apply({
      organizationId,
      amount: 100_000,
      kind: 'adjustment',
      description: 'bench credit',
    });
    await app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers,
      payload: { carrier_a: account },
    });
    const assistant = await app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers,
      payload: { name: 'Dispatch bench' },
    });
    await app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers,
      payload: { phone_number: FROM, provider: 'carrier_a', assistant_id: assistant.json().id },
    });

    // Baseline: the same number of calls through /calls/initiate, IN_FLIGHT at a time.
    const finalCalls = async () => {
      const [row] = await database.db
        .select({ n: sql<number>`count(*)::int` })
        .from(calls)
        .where(sql`${calls.status} = 'completed'`);
      return Number(row?.n ?? 0);
    };
    const baselineCpu = process.cpuUsage();
    const baselineStarted = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < contacts) {
          const i = next++;
          const response = await fetch(`${bench.baseUrl}/calls/initiate`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ from_phone_number: FROM, to_phone_number: contactNumber(i) }),
          });
          if (response.status !== 200)
            throw new Error(`initiate: ${response.status} ${await response.text()}`);
        }
      }),
    );
    while ((await finalCalls()) < contacts) await new Promise((resolve) => setTimeout(resolve, 50));
    const baselineSeconds = (performance.now() - baselineStarted) / 1000;
    const baselineCpuMs = cpuMs(process.cpuUsage(baselineCpu)) / contacts;

    // The campaign.
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/campaigns',
      headers,
      payload: {
        name: 'Dispatch',
        campaign_type: 'call',
        assistant_id: assistant.json().id,
        concurrency_limit: IN_FLIGHT,
        welcome_message_template: 'Hello {{ name | title_case }}',
      },
    });
    const id = created.json().id as number;
    for (let start = 0; start < contacts; start += 5000) {
      const batch = Array.from({ length: Math.min(5000, contacts - start) }, (_, k) => ({
        phone_number: contactNumber(contacts + start + k),
        name: `contact ${start + k}`,
      }));
      const added = await app.inject({
        method: 'POST',
        url: `/api/v1/campaigns/${id}/contacts`,
        headers,
        payload: { contacts: batch },
      });
      if (added.statusCode !== 200) throw new Error(`contacts: ${added.body}`);
    }
    await sim.settle();
    const campaignCpu = process.cpuUsage();
    const started = performance.now();
    const response = await app.inject({ method: 'POST', url: `/api/v1/campaigns/${id}/start`, headers });
    if (response.statusCode !== 200) throw new Error(`start: ${response.body}`);
    for (;;) {
      const [row] = await database.db
        .select({ status: sql<string>`status` })
        .from(sql`campaigns`)
        .where(eq(sql`id`, id));
      if (row?.status === 'completed') break;
      if (row?.status !== 'running') throw new Error(`campaign ${row?.status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    const campaignCpuMs = cpuMs(process.cpuUsage(campaignCpu)) / contacts;
    const [executions] = (
      (await database.db.execute(
        sql`select count(*)::int as n, count(*) filter (where status = 'completed')::int as completed from campaign_executions where campaign_id = ${id}`,
      )) as unknown as { rows: Array<{ n: number; completed: number }> }
    ).rows;
    if (Number(executions?.completed) !== contacts)
      throw new Error(`executions: ${JSON.stringify(executions)}`);
    await sim.settle();

    const campaignRate = contacts / seconds;
    const baselineRate = contacts / baselineSeconds;
    console.log(
      `\nCampaign dispatch: ${contacts} contacts, instant answers, concurrency ${IN_FLIGHT} (${
        process.env.BENCH_DATABASE_URL ? 'PostgreSQL server' : 'PGlite'
      })`,
    );
    table([
      {
        run: 'campaign (start → completed)',
        seconds: seconds.toFixed(1),
        'executions/s': campaignRate.toFixed(1),
        'platform CPU ms per attempt': campaignCpuMs.toFixed(2),
      },
      {
        run: `baseline: /calls/initiate ×${IN_FLIGHT} in flight`,
        seconds: baselineSeconds.toFixed(1),
        'executions/s': baselineRate.toFixed(1),
        'platform CPU ms per attempt': baselineCpuMs.toFixed(2),
      },
    ]);
    console.log(
      `campaign dispatch: ${campaignRate.toFixed(1)} executions/s = ${(campaignRate / baselineRate).toFixed(2)}× /calls/initiate; platform CPU ${campaignCpuMs.toFixed(2)} ms per attempt = ${(campaignCpuMs / baselineCpuMs).toFixed(2)}× the baseline's`,
    );
  } finally {
    await bench.close();
    await sim.stop();
  }
}

/** CPU milliseconds (user + system) of a `process.cpuUsage` difference. */
const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

/** `npm run bench -- campaign-dispatch [contacts=10000]` runs this part alone. */
export async function run(args: string[]): Promise<void> {
  await benchDispatch(Number(args[0] ?? 10_000));
}

/**
 * Campaign progress. A campaign of 40,000 contacts (every contact status) with 100,000 executions
 * (2–3 attempts each: calls and SMS, every outcome, 30,000 linked to call records with durations and
 * costs) is seeded with `generate_series`, beside a second campaign of 20,000 executions in the
 * same organization (so the per-campaign indexes matter). Then, over real HTTP, ~30 sequential
 * requests each of GET /progress, GET /executions (first page, and a page 50,000 rows deep), and the
 * baselines run in the same process: GET /api/v1/campaigns/{id} (authenticated, one row and its
 * metrics) and a bare `select count(*)` of the campaign's executions. p50/p95 in ms.
 *
 * `npm run bench -- campaign-progress`; BENCH_DATABASE_URL=postgres://… runs it on a server.
 * bench/campaigns.ts calls `benchProgress()`.
 */
import { benchUser, latencies, startBenchPlatform, table } from './support.js';

const EXECUTIONS = 100_000;
const CONTACTS = 40_000;
const LINKED_CALLS = 30_000;
const REQUESTS = 30;

/**
 * Contacts 1..n of a campaign (status by i % 10: 5 completed, 2 failed, pending, in_progress,
 * skipped), then attempts 1..(2 + i % 2) per contact — the third by SMS — until `executions`.
 */
function seedSql(organizationId: number, campaignId: number, contacts: number, executions: number): string {
  return `
    insert into campaign_contacts (organization_id, campaign_id, phone_number, name, status, attempts)
    select ${organizationId}, ${campaignId}, '+1415' || lpad(i::text, 7, '0'), 'Contact ' || i,
      (array['completed','completed','completed','completed','completed','failed','failed','pending','in_progress','skipped'])[1 + i % 10],
      2 + i % 2
    from generate_series(1, ${contacts}) i;

    insert into campaign_executions (organization_id, campaign_id, contact_id, attempt_number, channel,
      status, cost, executed_at, finished_at, execution_data, created_at, updated_at)
    select ${organizationId}, ${campaignId}, c.id, a, case when a = 3 then 'sms' else 'call' end,
      (array['completed','no_answer','busy','voicemail','failed','completed','in_progress'])[1 + (c.id + a) % 7],
      case when a = 3 then 0.0075 else null end,
      now() - make_interval(secs => ${executions} - (c.id * 3 + a)),
      now() - make_interval(secs => ${executions} - (c.id * 3 + a) - 30),
      jsonb_build_object('from_number', '+14155550100', 'to_number', c.phone_number,
        'personalized_welcome_message', 'Hi ' || c.name, 'duration_seconds', (c.id * 7 + a) % 180,
        'template_variables_used', jsonb_build_object('name', c.name)),
      now() - make_interval(secs => ${executions} - (c.id * 3 + a)),
      now() - make_interval(secs => ${executions} - (c.id * 3 + a) - 30)
    from campaign_contacts c cross join generate_series(1, 3) a
    where c.campaign_id = ${campaignId} and a <= 2 + c.id % 2
    order by c.id, a
    limit ${executions};
  `;
}

function linkCallsSql(organizationId: number, campaignId: number, calls: number): string {
  return `
    with made as (
      insert into calls (organization_id, provider, direction, from_phone_number, to_phone_number,
        customer_phone_number, status, duration, cost)
      select ${organizationId}, 'carrier_a', 'outbound', '+14155550100', '+14150000000', '+14150000000',
        'completed', i % 240, round((i % 240) * 0.0002, 4)
      from generate_series(1, ${calls}) i
      returning id
    ),
    numbered_calls as (select id, row_number() over (order by id) as n from made),
    numbered_executions as (
      select id, row_number() over (order by id) as n from campaign_executions
      where campaign_id = ${campaignId} and channel = 'call' and status <> 'in_progress'
      order by id limit ${calls}
    )
    update campaign_executions e set call_id = nc.id
    from numbered_executions ne join numbered_calls nc using (n)
    where e.id = ne.id;
    analyze campaign_contacts; analyze campaign_executions; analyze calls;
  `;
}

export async function benchProgress(): Promise<void> {
  const bench = await startBenchPlatform();
  try {
    const { app, database } = bench.platform;
    const { headers, organizationId } = await benchUser(bench.platform, 'progress');
    const assistant = await app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers,
      payload: { name: 'Progress bench' },
    });
    const campaign = async (name: string): Promise<number> => {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/campaigns',
        headers,
        payload: { name, campaign_type: 'mixed', assistant_id: assistant.json().id },
      });
      if (created.statusCode !== 201) throw new Error(`campaign: ${created.body}`);
      return created.json().id;
    };
    const measured = await campaign('Measured');
    const neighbour = await campaign('Neighbour');

    const seedStarted = performance.now();
    await database.executeSql(seedSql(organizationId, measured, CONTACTS, EXECUTIONS));
    await database.executeSql(seedSql(organizationId, neighbour, 8_000, 20_000));
    await database.executeSql(linkCallsSql(organizationId, measured, LINKED_CALLS));
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const [seeded] = (
      await database.executeSql(
        'select count(*)::int as n, count(call_id)::int as linked from campaign_executions where campaign_id = $1',
        [measured],
      )
    ).rows;
    if (seeded?.n !== EXECUTIONS) throw new Error(`seeded ${JSON.stringify(seeded)}`);

    const base = `${bench.baseUrl}/api/v1/campaigns/${measured}`;
    const getOk = (url: string) => async () => {
      const response = await fetch(url, { headers });
      if (response.status !== 200) throw new Error(`${url}: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    };
    const progress = await latencies(getOk(`${base}/progress`), REQUESTS);
    const firstPage = await latencies(getOk(`${base}/executions`), REQUESTS);
    const deepPage = await latencies(getOk(`${base}/executions?page=1000&per_page=50`), REQUESTS);
    const oneRow = await latencies(getOk(base), REQUESTS);
    const count = await latencies(async () => {
      await database.executeSql('select count(*) from campaign_executions where campaign_id = $1', [
        measured,
      ]);
    }, REQUESTS);

    const ratio = (x: number) => Number((x / oneRow.p50).toFixed(1));
    const row = (operation: string, m: { p50: number; p95: number }) => ({
      operation,
      'p50 ms': Number(m.p50.toFixed(1)),
      'p95 ms': Number(m.p95.toFixed(1)),
      'ratio (p50)': ratio(m.p50),
    });
    table([
      row(`GET /progress, ${EXECUTIONS} executions, ${CONTACTS} contacts (${database.kind})`, progress),
      row('GET /executions, first page of 50', firstPage),
      row('GET /executions, page 1000 of 50 (offset 49,950)', deepPage),
      row('baseline: GET /campaigns/{id} (one row and its metrics)', oneRow),
      row('baseline: bare select count(*) of the executions', count),
    ]);
    console.log(
      `campaign-progress: seeded ${EXECUTIONS} executions (${seeded.linked} with calls) in ${seedSeconds.toFixed(1)} s; ` +
        `GET /progress p50 ${progress.p50.toFixed(1)} ms, p95 ${progress.p95.toFixed(1)} ms ` +
        `(ratio ${ratio(progress.p50)} to GET /campaigns/{id} at ${oneRow.p50.toFixed(1)} ms; ` +
        `${(progress.p50 / count.p50).toFixed(1)} to a bare count(*) at ${count.p50.toFixed(1)} ms)`,
    );
  } finally {
    await bench.close();
  }
}

/** `npm run bench -- campaign-progress` */
export async function run(): Promise<void> {
  await benchProgress();
}

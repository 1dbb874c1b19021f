/**
 * SMS: how fast `POST /sms/send` queues messages (message, job and idempotent answer in one
 * statement, shared by the sends arriving together) beside an authenticated one-row read in the same run, and how fast the queue drains to
 * the carrier_a simulator beside the ceiling the numbers' rates allow. On a server it also counts
 * the statements each costs (every query the driver sends, BEGIN and COMMIT included).
 *
 *   npm run bench -- sms [messages=1000] [numbers=10] [rate per number=50]
 */
import pg from 'pg';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { startBenchPlatform, table, timed } from './support.js';

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 1000);
  const numberCount = Number(args[1] ?? 10);
  const rate = Number(args[2] ?? 50);
  const sim = new CarrierASimulator();
  await sim.start();
  const bench = await startBenchPlatform({ CARRIER_A_BASE_URL: sim.baseUrl });
  const { app, database } = bench.platform;
  const account = { account_sid: 'AC00000000000000000000000000000b01', auth_token: 'bench-token-0123456789' };
  sim.addAccount(account);

  const registered = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/register',
    payload: { email: 'sms@example.test', password: 'benchmark password', first_name: 'S', last_name: 'M' },
  });
  await markEmailVerified(database.db, registered.json().user.id);
  const login = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: 'sms@example.test', password: 'benchmark password' },
  });
  const headers = { authorization: `Bearer ${login.json().access_token}` };
  await app.inject({ method: 'PUT', url: '/api/v1/organization', headers, payload: { carrier_a: account } });
  const assistant = await app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers,
    payload: { name: 'SMS bench' },
  });
  const numbers: string[] = [];
  let numberId = 0;
  for (let i = 0; i < numberCount; i++) {
    const phone = `+1415777${String(1000 + i).padStart(4, '0')}`;
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers,
      payload: {
        phone_number: phone,
        provider: 'carrier_a',
        assistant_id: assistant.json().id,
        sms_rate_per_second: rate,
      },
    });
    numberId = created.json().id;
    numbers.push(phone);
  }

  // Each `query` of a node-postgres client is one round trip (the embedded database is not counted).
  // The workers drain while the sends run: the send phase's count includes their statements.
  let statements = 0;
  // The statements that write queued messages: how many sends each one carries (group commit).
  let messageWrites = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements += 1;
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : (first?.text ?? '');
    if (text.includes('insert into messages (')) messageWrites += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const server = Boolean(process.env.BENCH_DATABASE_URL);
  const perSend = (count: number) => (server ? (count / total).toFixed(1) : '—');

  const beforeReads = statements;
  const read = await timed(total, 20, () =>
    app.inject({ method: 'GET', url: `/api/v1/phone-numbers/${numberId}`, headers }),
  );
  const readStatements = statements - beforeReads;
  const started = performance.now();
  const beforeSends = statements;
  const queued = await timed(total, 20, (i) =>
    app.inject({
      method: 'POST',
      url: '/sms/send',
      headers,
      payload: {
        from_phone_number: numbers[i % numberCount],
        to_phone_number: '+14155550199',
        message: `bench ${i}`,
      },
    }),
  );
  const sendStatements = statements - beforeSends;
  const sendWrites = messageWrites;
  while (sim.messages.length < total) await new Promise((resolve) => setTimeout(resolve, 50));
  const drainStatements = statements - beforeSends;
  const drainSeconds = (performance.now() - started) / 1000;
  const drained = total / drainSeconds;
  const ceiling = numberCount * rate;
  const times = sim.messages.map((m) => m.at).sort((a, b) => a - b);

  table([
    { operation: 'GET one phone number (authenticated read, baseline)', 'req/s': Math.round(read), ratio: 1 },
    {
      operation: 'POST /sms/send, queued (grouped: one statement for the sends arriving together)',
      'req/s': Math.round(queued),
      ratio: Number((queued / read).toFixed(2)),
    },
    {
      operation: `drain to the simulator (${numberCount} numbers × ${rate}/s = ceiling ${ceiling}/s)`,
      'req/s': Math.round(drained),
      ratio: Number((drained / ceiling).toFixed(2)),
    },
  ]);
  console.log(
    `sms: queued ${Math.round(queued)} req/s (ratio ${(queued / read).toFixed(2)} to a one-row read); ` +
      `drained ${total} in ${drainSeconds.toFixed(1)} s = ${Math.round(drained)}/s, ${((drained / ceiling) * 100).toFixed(0)} % of the rate ceiling; ` +
      `first to last at the carrier ${((times.at(-1)! - times[0]!) / 1000).toFixed(1)} s; ` +
      `statements: ${perSend(readStatements)} per read, ${perSend(sendStatements)} per message during the send phase (workers included), ${server ? (total / sendWrites).toFixed(1) : '—'} sends per writing statement, ${perSend(drainStatements)} per message in all (send, drain, receipts)`,
  );
  await bench.close();
  await sim.stop();
}

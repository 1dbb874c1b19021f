/**
 * SMS: how fast `POST /sms/send` queues messages (message, drain wake-up and idempotent answer in
 * one statement, shared by the sends arriving together) beside an authenticated one-row read in the
 * same run — while the drain runs in the same process, and alone (the numbers held an hour away) —
 * and how fast the queue drains to the carrier_a simulator beside the ceiling the numbers'
 * rates allow — while the sends arrive, and as a standing backlog (with the carrier's delivery
 * receipts, two a message, coming back over HTTP as a carrier's would; and once more with the
 * carrier posting none, which times the sending alone). The simulator runs in a process of its own
 * (bench/fixtures/carrier-a-process.ts), as a carrier is another system: this process's CPU is the
 * platform's and the load generator's. On a server it also counts the statements each costs (every
 * query the driver sends, BEGIN and COMMIT included).
 *
 *   npm run bench -- sms [messages=1000] [numbers=10] [rate per number=50]
 */
import pg from 'pg';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { startCarrierA } from './fixtures/carrier-a-process.js';
import { startBenchPlatform, table, timed } from './support.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 1000);
  const numberCount = Number(args[1] ?? 10);
  const rate = Number(args[2] ?? 50);
  const sim = await startCarrierA(1);
  const bench = await startBenchPlatform({ CARRIER_A_BASE_URL: sim.baseUrl });
  const { app, database } = bench.platform;
  const account = { account_sid: 'AC00000000000000000000000000000b01', auth_token: 'bench-token-0123456789' };
  await sim.addAccount(account);
  const atCarrier = async () => (await sim.state()).messages;
  /** Waits until the carrier has `count` messages; says where the others are if that takes minutes. */
  const untilAtCarrier = async (count: number) => {
    const deadline = Date.now() + 180_000;
    while ((await atCarrier()) < count) {
      if (Date.now() > deadline) {
        const { rows } = await database.executeSql(
          'select status, count(*)::int as n from messages group by status order by status',
          [],
        );
        throw new Error(`The carrier has ${await atCarrier()} of ${count} messages: ${JSON.stringify(rows)}`);
      }
      await sleep(20);
    }
  };

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
  /** Queues message `i`; a send the platform refuses stops the benchmark (its figures would lie). */
  const send = async (i: number, prefix: string) => {
    const answer = await app.inject({
      method: 'POST',
      url: '/sms/send',
      headers,
      payload: {
        from_phone_number: numbers[i % numberCount],
        to_phone_number: '+14155550199',
        message: `${prefix} ${i}`,
      },
    });
    if (answer.statusCode !== 200) throw new Error(`A send was refused: ${answer.statusCode} ${answer.body}`);
    return answer;
  };

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
  const ceiling = numberCount * rate;

  const beforeReads = statements;
  const read = await timed(total, 20, () =>
    app.inject({ method: 'GET', url: `/api/v1/phone-numbers/${numberId}`, headers }),
  );
  const readStatements = statements - beforeReads;

  // Sends while the workers drain.
  const started = performance.now();
  const beforeSends = statements;
  const queued = await timed(total, 20, (i) => send(i, 'bench'));
  const sendStatements = statements - beforeSends;
  const sendWrites = messageWrites;
  await untilAtCarrier(total);
  const drainStatements = statements - beforeSends;
  const drainSeconds = (performance.now() - started) / 1000;
  const drained = total / drainSeconds;
  await sim.settle();

  // A standing backlog: as many messages queued while the numbers' turns are an hour away (a drain
  // claims nothing, and its next wake-up waits for the turn), then released — turns cleared, the
  // waiting wake-ups made due and the workers woken — and timed from the release to the last
  // arrival at the carrier: the drain, beside the ceiling. Once with the carrier's receipts (two
  // callbacks a message, applied by this process meanwhile), once without them: the sending alone.
  const numbersOfBench = `phone_number like '+1415777%'`;
  const backlog = async (label: string) => {
    await database.executeSql(
      `update phone_numbers set sms_next_send_at = now() + interval '1 hour' where ${numbersOfBench}`,
    );
    // The sends alone: no drain runs beside them (the numbers' turns are an hour away).
    const queuedAlone = await timed(total, 20, (i) => send(i, label));
    const before = await atCarrier();
    const beforeStatements = statements;
    const cpuBefore = process.cpuUsage();
    const released = performance.now();
    await database.executeSql(`update phone_numbers set sms_next_send_at = null where ${numbersOfBench}`);
    await database.executeSql(
      `update pgboss.job set start_after = now() where name like 'sms.%' and state = 'created'`,
    );
    bench.platform.queue.wake('sms.drain');
    await untilAtCarrier(before + total);
    const seconds = (performance.now() - released) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const arrivals = (await sim.messageTimes()).slice(before).sort((a, b) => a - b);
    await sim.settle();
    return {
      queuedAlone,
      perSecond: total / seconds,
      seconds,
      spreadSeconds: (arrivals.at(-1)! - arrivals[0]!) / 1000,
      statements: statements - beforeStatements,
      cores: (cpu.user + cpu.system) / 1e6 / seconds,
    };
  };
  const withReceipts = await backlog('backlog');
  await sim.messageReceipts(false);
  const sendingAlone = await backlog('no receipts');
  const describe = (round: Awaited<ReturnType<typeof backlog>>) =>
    `${round.seconds.toFixed(2)} s = ${Math.round(round.perSecond)}/s, ${((round.perSecond / ceiling) * 100).toFixed(0)} % of the rate ceiling ` +
    `(first to last arrival ${round.spreadSeconds.toFixed(2)} s), ${perSend(round.statements)} statements per message, ` +
    `platform process CPU ${round.cores.toFixed(2)} cores`;

  table([
    { operation: 'GET one phone number (authenticated read, baseline)', 'req/s': Math.round(read), ratio: 1 },
    {
      operation: 'POST /sms/send, queued (grouped: one statement for the sends arriving together)',
      'req/s': Math.round(queued),
      ratio: Number((queued / read).toFixed(2)),
    },
    {
      operation: 'POST /sms/send, queued while no drain runs beside it (numbers held an hour)',
      'req/s': Math.round(withReceipts.queuedAlone),
      ratio: Number((withReceipts.queuedAlone / read).toFixed(2)),
    },
    {
      operation: `drain while the sends arrive, from the first send (${numberCount} numbers × ${rate}/s = ceiling ${ceiling}/s)`,
      'req/s': Math.round(drained),
      ratio: Number((drained / ceiling).toFixed(2)),
    },
    {
      operation: `drain of a standing backlog of ${total}, with the carrier's receipts, beside the ceiling`,
      'req/s': Math.round(withReceipts.perSecond),
      ratio: Number((withReceipts.perSecond / ceiling).toFixed(2)),
    },
    {
      operation: `drain of a standing backlog of ${total}, the carrier posting no receipts, beside the ceiling`,
      'req/s': Math.round(sendingAlone.perSecond),
      ratio: Number((sendingAlone.perSecond / ceiling).toFixed(2)),
    },
  ]);
  console.log(
    `sms: queued ${Math.round(queued)} req/s (ratio ${(queued / read).toFixed(2)} to a one-row read); ` +
      `drained ${total} in ${drainSeconds.toFixed(1)} s = ${Math.round(drained)}/s, ${((drained / ceiling) * 100).toFixed(0)} % of the rate ceiling; ` +
      `statements: ${perSend(readStatements)} per read, ${perSend(sendStatements)} per message during the send phase (workers included), ${server ? (total / sendWrites).toFixed(1) : '—'} sends per writing statement, ${perSend(drainStatements)} per message in all (send, drain, receipts); ` +
      `backlog with receipts ${describe(withReceipts)}; without receipts ${describe(sendingAlone)}`,
  );
  await bench.close();
  await sim.stop();
}

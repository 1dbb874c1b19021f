import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { CrashRig } from './support/crash-rig.js';
import { waitFor } from './support/harness.js';
import { freePort, serverRequest } from './support/server-process.js';

const sim = new CarrierASimulator();
const rig = new CrashRig('sms-durability');

beforeAll(async () => {
  await sim.start();
  await rig.setUp();
});
afterAll(async () => {
  await rig.tearDown();
  await sim.stop();
});

const start = (port: string) =>
  rig.start(port, { CARRIER_A_BASE_URL: sim.baseUrl, ALLOW_PRIVATE_TARGETS: 'true' });

const call = serverRequest;

const NUMBER = '+14156660001';
const COUNT = 15;

/** Every request the carrier got to send a message from our number (recorded as it arrives). */
function carrierRequests() {
  return sim.requests
    .filter((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))
    .map((r) => r.body as Record<string, string>)
    .filter((form) => form.From === NUMBER);
}

describe('SMS queue across kill -9', () => {
  it('never sends a message twice, leaves the one mid-send as sending, and carries on after a restart', async () => {
    const port = String(await freePort());
    const first = await start(port);

    const registered = await call(first, 'POST', '/api/v1/auth/register', {
      body: {
        email: 'sms.durability@example.test',
        password: 'crash-and-restart',
        first_name: 'S',
        last_name: 'D',
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const token = registered.body.access_token as string;
    const account = { account_sid: `AC${'7'.repeat(32)}`, auth_token: 'durable-token' };
    sim.addAccount(account);
    const put = await call(first, 'PUT', '/api/v1/organization', { token, body: { carrier_a: account } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const assistant = await call(first, 'POST', '/api/v1/assistants', { token, body: { name: 'Durable' } });
    expect(assistant.status, JSON.stringify(assistant.body)).toBe(201);
    const number = await call(first, 'POST', '/api/v1/phone-numbers', {
      token,
      body: {
        phone_number: NUMBER,
        provider: 'carrier_a',
        assistant_id: assistant.body.id,
        sms_rate_per_second: 2,
      },
    });
    expect(number.status, JSON.stringify(number.body)).toBe(201);

    const idOf = new Map<string, string>(); // recipient → message id
    for (let i = 0; i < COUNT; i++) {
      const to = `+1415777${2000 + i}`;
      const sent = await call(first, 'POST', '/sms/send', {
        token,
        body: { from_phone_number: NUMBER, to_phone_number: to, message: `Durable ${i}` },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      expect(sent.body.status).toBe('queued');
      idOf.set(to, sent.body.message_id as string);
    }

    // Three reach the carrier; the carrier then holds the fourth while the server is killed.
    await waitFor(() => sim.messages.filter((m) => m.from === NUMBER).length >= 3, 15_000);
    sim.delayMs = 2500;
    const before = carrierRequests().length;
    await waitFor(() => carrierRequests().length > before, 5_000);
    first.child.kill('SIGKILL');
    await first.exited;
    sim.delayMs = 0;
    const atKill = carrierRequests().map((form) => form.To!);
    const midSend = atKill.at(-1)!;
    // The carrier accepts the held message after the server died; its receipts find nobody.
    await waitFor(() => sim.messages.some((m) => m.to === midSend), 5_000);
    await sim.settle();

    const second = await start(port);
    const statuses = async () => {
      const out = new Map<string, Record<string, unknown>>();
      for (const [to, id] of idOf) {
        const response = await call(second, 'GET', `/sms/${id}`, { token });
        expect(response.status).toBe(200);
        out.set(to, response.body);
      }
      return out;
    };
    // Let the restarted server send what it can: until nothing has changed for 4 s.
    let last = '';
    let since = Date.now();
    await waitFor(async () => {
      const now = JSON.stringify([
        carrierRequests().length,
        [...(await statuses()).values()].map((m) => m.status),
      ]);
      if (now !== last) {
        last = now;
        since = Date.now();
      }
      return Date.now() - since >= 4000;
    }, 30_000);
    await sim.settle();
    const after = await statuses();
    const stats = await call(second, 'GET', '/sms/queue/stats', { token });
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // No message reached the carrier twice.
    const sentTo = carrierRequests().map((form) => form.To!);
    expect(new Set(sentTo).size).toBe(sentTo.length);
    expect(sim.messages.filter((m) => m.from === NUMBER)).toHaveLength(sentTo.length);
    // The restarted server carried on.
    expect(sentTo.length).toBeGreaterThan(atKill.length);

    // The message mid-send at the kill reached the carrier once and was not resent: it stays sending.
    expect(sentTo.filter((to) => to === midSend)).toHaveLength(1);
    expect(after.get(midSend)).toMatchObject({ status: 'sending', attempts: 1, error: null, sent_at: null });

    // Every other message reached the carrier once and says so, or is still queued (never failed,
    // cancelled or lost).
    const queued: string[] = [];
    for (const [to, message] of after) {
      if (to === midSend) continue;
      if (sentTo.includes(to)) {
        expect(['sent', 'delivered'], to).toContain(message.status);
        expect(message.attempts).toBe(1);
      } else {
        expect(message, to).toMatchObject({ status: 'queued', error: null, sent_at: null });
        queued.push(idOf.get(to)!);
      }
    }
    expect(stats.body).toMatchObject({
      total: COUNT,
      queued: queued.length,
      by_status: expect.objectContaining({ sending: 1 }),
    });

    // While messages are still queued, the number's drain has a wake-up waiting for it: one the
    // killed process's last claim left, one of its runs still marked active (the queue expires it
    // and hands it on), or one the restarted process wrote. One run drains whatever is due, so one
    // live job is what matters.
    const database = await rig.openDatabase();
    try {
      const { rows: jobs } = await database.executeSql(
        `select state, retry_count, retry_limit from pgboss.job
          where name = 'sms.drain' and data->>'phone_number_id' = $1`,
        [String(number.body.id)],
      );
      const live = jobs.filter((row) => ['created', 'retry', 'active'].includes(String(row.state)));
      if (queued.length > 0) expect(live.length, JSON.stringify(jobs)).toBeGreaterThanOrEqual(1);
      for (const job of live) expect(Number(job.retry_count)).toBeLessThan(Number(job.retry_limit));
      const { rows } = await database.executeSql(
        `select status, count(*)::int as n from messages where from_phone_number = $1 group by status`,
        [NUMBER],
      );
      const counts = Object.fromEntries(rows.map((row) => [String(row.status), Number(row.n)]));
      expect(counts.sending).toBe(1);
      expect((counts.sent ?? 0) + (counts.delivered ?? 0)).toBe(sentTo.length - 1);
      expect(counts.failed ?? 0).toBe(0);
    } finally {
      await database.close();
    }
  }, 90_000);
});

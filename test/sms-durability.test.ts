/**
 * The SMS queue across a crash: the real server (`src/server.ts`, as `npm start` runs it, on PGlite
 * under DATA_DIR or on the PostgreSQL server of TEST_DATABASE_URL) sends queued messages to a
 * carrier_a simulator in this process at 2 a second. It is killed with SIGKILL while the carrier
 * holds one message (so that message is mid-send), then started again on the same data.
 *
 * What src/domains/sms/service.ts documents, checked precisely: the queue is rows plus jobs, so the
 * restarted server carries on sending; the job claims its row (queued → sending) before calling the
 * carrier, so no message reaches the carrier twice; and a message found in `sending` after a crash
 * is not resent (the carrier may have accepted it) — it stays `sending`. A message whose job was
 * running in the killed process (waiting for its slot) stays `queued` until pg-boss expires that
 * job (sms.send expireInSeconds 120, then the next maintenance run); the test checks such a message
 * still has its job, and does not wait minutes for it (see the report of this run).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { TEST_SECRET_KEY, waitFor } from './support/harness.js';
import {
  freePort,
  type ServerProcess,
  serverRequest,
  spawnServer,
  waitHealthy,
} from './support/server-process.js';
import { adminQuery, databaseUrl, uniqueName } from './support/template.js';

const sim = new CarrierASimulator();
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-sms-durability-'));
/** DATABASE_URL of the server run (empty on PGlite: the server opens DATA_DIR). */
let databaseEnv: Record<string, string> = {};
let dropDatabase: () => Promise<void> = async () => {};
const started: ServerProcess[] = [];

beforeAll(async () => {
  await sim.start();
  const template = inject('template');
  if (template.kind === 'server') {
    const name = uniqueName('sb_sms_durability');
    await adminQuery(template.adminUrl, `create database "${name}" template "${template.templateName}"`);
    databaseEnv = { DATABASE_URL: databaseUrl(template.adminUrl, name) };
    dropDatabase = () => adminQuery(template.adminUrl, `drop database if exists "${name}" with (force)`);
  }
});
afterAll(async () => {
  for (const server of started) {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
  }
  await sim.stop();
  await dropDatabase();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(port: string): Promise<ServerProcess> {
  const server = spawnServer({
    DATA_DIR: dataDir,
    PORT: port,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    SECRET_KEY: TEST_SECRET_KEY,
    CARRIER_A_BASE_URL: sim.baseUrl,
    ALLOW_PRIVATE_TARGETS: 'true',
    ...databaseEnv,
  });
  started.push(server);
  await waitHealthy(server, 60_000);
  return server;
}

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

    // Every message still queued has a send job waiting for it: a job of the killed process still
    // marked active (the queue expires it and hands it on), or one waiting to run. A job sends its
    // number's oldest queued message, so the count is what matters, not which message it names.
    const database = await openDatabase(
      databaseEnv.DATABASE_URL
        ? { kind: 'server', url: databaseEnv.DATABASE_URL, poolSize: 1 }
        : { kind: 'embedded', dataDir },
    );
    try {
      const { rows: jobs } = await database.executeSql(
        `select state, retry_count, retry_limit from pgboss.job
          where name = 'sms.send' and data->>'message_id' = any($1::text[])`,
        [[...idOf.values()]],
      );
      const live = jobs.filter((row) => ['created', 'retry', 'active'].includes(String(row.state)));
      expect(live.length, JSON.stringify(jobs)).toBeGreaterThanOrEqual(queued.length);
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

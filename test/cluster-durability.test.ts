/**
 * A campaign and the SMS queue running at once when a process is killed (kill -9) mid-work, behind
 * one public address (support/balancer.ts) as a deployment runs them. On the PostgreSQL server pass,
 * two processes share the database and the survivor finishes the dead one's work without a restart;
 * the embedded database is opened by one process at a time, so there the one process is restarted.
 * Either way nothing is lost or done twice: every contact dialled exactly as often as its execution
 * rows say, every message at the carrier at most once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { type Balancer, startBalancer } from './support/balancer.js';
import { CrashRig } from './support/crash-rig.js';
import { waitFor } from './support/harness.js';
import { freePort, type ServerProcess, serverRequest } from './support/server-process.js';

const sim = new CarrierASimulator();
const rig = new CrashRig('cluster-durability');
let balancer: Balancer | undefined;

beforeAll(async () => {
  await sim.start();
  await rig.setUp();
});
afterAll(async () => {
  await rig.tearDown();
  await balancer?.close();
  await sim.stop();
});

const NUMBER = '+14156662001';
const contactNumber = (i: number) => `+1415779${String(1000 + i).padStart(4, '0')}`;
const recipient = (i: number) => `+1415780${String(1000 + i).padStart(4, '0')}`;

/** Every request the carrier got to send a message from our number, as it arrived. */
const messageRequests = () =>
  sim.requests
    .filter((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))
    .map((r) => r.body as Record<string, string>)
    .filter((form) => form.From === NUMBER);
const dials = () => [...sim.calls.values()].filter((c) => c.from === NUMBER);

describe('a campaign and the SMS queue when a process is killed mid-work', () => {
  it('finish with every contact dialled as its executions say and no message sent twice', async () => {
    const contacts = 48;
    const messages = 40;
    const ports = await Promise.all((rig.onServer ? [0, 1] : [0]).map(() => freePort()));
    balancer = await startBalancer(ports.map((port) => `http://127.0.0.1:${port}`));
    const start = (port: number): Promise<ServerProcess> =>
      rig.start(String(port), {
        CARRIER_A_BASE_URL: sim.baseUrl,
        PUBLIC_URL: balancer!.url,
        CAMPAIGN_SWEEP_INTERVAL_SECONDS: '1',
        CAMPAIGN_RECOVER_AFTER_SECONDS: '2',
      });
    const servers: ServerProcess[] = [];
    for (const port of ports) servers.push(await start(port)); // the first migrates
    const victim = servers[0]!;
    // Requests go to whichever process the balancer picks; the process itself does not matter.
    const api = (method: string, url: string, options: { token?: string; body?: unknown } = {}) =>
      serverRequest({ baseUrl: balancer!.url }, method, url, options);

    const registered = await api('POST', '/api/v1/auth/register', {
      body: { email: 'cluster@example.test', password: 'kill-one-of-two', first_name: 'K', last_name: 'T' },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const token = registered.body.access_token as string;
    const account = { account_sid: `AC${'6'.repeat(32)}`, auth_token: 'cluster-durable' };
    sim.addAccount(account);
    expect((await api('PUT', '/api/v1/organization', { token, body: { carrier_a: account } })).status).toBe(
      200,
    );
    const assistant = await api('POST', '/api/v1/assistants', { token, body: { name: 'Cluster' } });
    const number = await api('POST', '/api/v1/phone-numbers', {
      token,
      body: {
        phone_number: NUMBER,
        provider: 'carrier_a',
        assistant_id: assistant.body.id,
        sms_rate_per_second: 4,
      },
    });
    expect(number.status, JSON.stringify(number.body)).toBe(201);
    sim.setCallOutcome('*', { status: 'completed', durationSeconds: 3 });
    // A slow carrier: a process killed mid-send has requests in flight.
    sim.delayMs = 150;

    const created = await api('POST', '/api/v1/campaigns', {
      token,
      body: {
        name: 'Across a kill',
        campaign_type: 'call',
        assistant_id: assistant.body.id,
        max_attempts: 2,
        retry_delay_minutes: 0,
        // Four calls of 3 s at a time: a kill a quarter of the way in leaves most contacts to go.
        concurrency_limit: 4,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as number;
    const added = await api('POST', `/api/v1/campaigns/${id}/contacts`, {
      token,
      body: { contacts: Array.from({ length: contacts }, (_, i) => ({ phone_number: contactNumber(i) })) },
    });
    expect(added.body.imported).toBe(contacts);
    expect((await api('POST', `/api/v1/campaigns/${id}/start`, { token })).status).toBe(200);
    const idOf = new Map<string, string>();
    for (let i = 0; i < messages; i++) {
      const sent = await api('POST', '/sms/send', {
        token,
        body: { from_phone_number: NUMBER, to_phone_number: recipient(i), message: `Cluster ${i}` },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      idOf.set(recipient(i), sent.body.message_id as string);
    }

    // Mid-work: a quarter of the contacts dialled and some messages sent, most of both not yet.
    await waitFor(() => dials().length >= contacts / 4 && messageRequests().length >= 8, 60_000);
    if (rig.onServer) {
      // Both processes have been answering (the API's requests and the carrier's callbacks).
      expect(
        [...balancer.answered.values()].every((n) => n > 0),
        JSON.stringify([...balancer.answered]),
      ).toBe(true);
    }
    victim.child.kill('SIGKILL');
    await victim.exited;
    expect(dials().length).toBeLessThan(contacts);
    expect(messageRequests().length).toBeLessThan(messages);
    sim.delayMs = 0;
    // The embedded database has one process: it is restarted; on the server the other carries on.
    const survivor = rig.onServer ? servers[1]! : await start(ports[0]!);

    const done = await waitFor(async () => {
      const response = await api('GET', `/api/v1/campaigns/${id}`, { token });
      return response.body.status === 'completed' ? response.body : undefined;
    }, 150_000);
    const statuses = new Map<string, string>();
    await waitFor(async () => {
      for (const [to, messageId] of idOf) {
        const response = await api('GET', `/sms/${messageId}`, { token });
        expect(response.status).toBe(200);
        statuses.set(to, response.body.status as string);
      }
      return [...statuses.values()].every((status) => status !== 'queued');
    }, 150_000);
    await sim.settle();
    survivor.child.kill('SIGTERM');
    expect(await survivor.exited).toBe(0);

    // The campaign: every contact dialled exactly as often as its execution rows say, none open,
    // and every contact reached (the calls all answer; a lost attempt is tried again).
    const rows = await rig.contactAttempts(
      id,
      dials().map((d) => d.to),
    );
    expect(rows).toHaveLength(contacts);
    for (const row of rows) {
      expect(row.open, row.phone).toBe(0);
      expect(row.dials, row.phone).toBe(row.executions);
      expect(row.status, row.phone).toBe('completed');
    }
    expect(done).toMatchObject({ completed_contacts: contacts, failed_contacts: 0 });

    // The messages: none reached the carrier twice; each one is sent, or — its process killed while it
    // was being handed over, so nobody can know whether the carrier took it — left `sending`, never
    // sent again. None is still queued, failed or lost.
    const sentTo = messageRequests().map((form) => form.To!);
    expect(new Set(sentTo).size).toBe(sentTo.length);
    for (const [to, status] of statuses) {
      if (sentTo.includes(to)) expect(['sent', 'delivered', 'sending'], to).toContain(status);
      else expect(status, to).toBe('sending');
    }
    const leftSending = [...statuses.values()].filter((status) => status === 'sending').length;
    expect(leftSending).toBeLessThanOrEqual(8);
    expect(sentTo.length).toBeGreaterThanOrEqual(messages - leftSending);
  }, 360_000);
});

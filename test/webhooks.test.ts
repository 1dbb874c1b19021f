/**
 * Outgoing webhooks: events posted to a real local receiver (127.0.0.1, port 0) by the real
 * `webhook.deliver` worker, signed with the organization's secret; retries with back-off (the
 * production policy, its waits cut short by moving the retry jobs' start time), the last attempt and
 * permanent failures, private targets refused (the whole outbound-target policy is in
 * outbound-targets.test.ts), the secret routes, the delivery log, redelivery, and
 * who may do what. The tests share one platform (ALLOW_PRIVATE_TARGETS=true); the private-target
 * tests start a second one with it false.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { DeliveryAttemptFailed, WebhookService } from '../src/domains/webhooks/service.js';
import { computeSignature, verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
import * as store from '../src/domains/webhooks/store.js';
import { OutboundTargets } from '../src/lib/outbound-target.js';
import { jobPolicies } from '../src/queue/jobs.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestApiKey, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const SECRET = '/api/v1/organization/webhook-secret';
const ROTATE = '/api/v1/organization/webhook-secret/rotate';
const DELIVERIES = '/api/v1/organization/webhook-deliveries';
const TEST = '/api/v1/organization/webhook-deliveries/test';
const redeliverUrl = (id: number) => `/api/v1/organization/webhook-deliveries/${id}/redeliver`;
const DELIVERY_FIELDS = [
  'attempts',
  'created_at',
  'delivered_at',
  'event_id',
  'event_type',
  'id',
  'last_error',
  'last_status_code',
  'payload',
  'status',
  'updated_at',
  'url',
].sort();
const SECRET_FORMAT = /^whsec_[A-Za-z0-9_-]{43}$/;

/** A request the receiver got. */
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A local webhook receiver. Each path answers the statuses queued for it in order (the last one
 * again once the queue is down to it), 200 by default; `/hang` never answers.
 */
class Receiver {
  readonly received: Received[] = [];
  readonly #plans = new Map<string, number[]>();
  #server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        this.received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (path === '/hang') return;
        const plan = this.#plans.get(path) ?? [200];
        const status = plan.length > 1 ? (plan.shift() as number) : (plan[0] as number);
        response.writeHead(status, { 'content-type': 'text/plain' }).end(`answered ${status}`);
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  /** A fresh path answering `statuses` in order, as a full URL. */
  url(statuses: number[] = [200], label = 'hook'): string {
    const path = `/${label}-${randomBytes(4).toString('hex')}`;
    this.#plans.set(path, [...statuses]);
    return `http://127.0.0.1:${this.port}${path}`;
  }

  at(url: string): Received[] {
    const path = new URL(url).pathname;
    return this.received.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

let t: TestPlatform;
let f: Factories;
let receiver: Receiver;
let admin: TestUser;
let member: TestUser;
let otherAdmin: TestUser;
/** API keys of the admin: one with organization read_write, one without the area. */
let orgKey: TestApiKey;
let noAreaKey: TestApiKey;
/** Every webhook secret seen in this file, for the leak checks. */
const seenSecrets = new Set<string>();

beforeAll(async () => {
  receiver = new Receiver();
  await receiver.start();
  t = await startTestPlatform({ ALLOW_PRIVATE_TARGETS: 'true' });
  f = new Factories(t);
  admin = await f.user({ organizationName: 'Hook Senders' });
  member = await f.member(admin.organizationId, 'user');
  otherAdmin = await f.user({ organizationName: 'Other Hooks' });
  orgKey = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
  noAreaKey = await f.apiKey(admin, { permissions: { assistants: 'read_write' } });
});
afterAll(async () => {
  // Let the verification mails and running deliveries finish before the database closes.
  await waitFor(async () => {
    const mail = await t.platform.queue.counts('mail.send');
    const hooks = await t.platform.queue.counts('webhook.deliver');
    return !mail.created && !mail.retry && !mail.active && !hooks.created && !hooks.active;
  });
  await t.close();
  await receiver.stop();
});

type Headers = Record<string, string>;

async function webhookSecret(user: TestUser, platform: TestPlatform = t): Promise<string> {
  const response = await platform.app.inject({ method: 'GET', url: SECRET, headers: user.headers });
  expect(response.statusCode, response.body).toBe(200);
  const secret = response.json().webhook_secret as string;
  seenSecrets.add(secret);
  return secret;
}

async function sendTest(user: TestUser, url: string, platform: TestPlatform = t) {
  const response = await platform.app.inject({
    method: 'POST',
    url: TEST,
    headers: user.headers,
    payload: { url },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { id: number; event_id: string; status: string };
}

const deliveryRow = (id: number, platform: TestPlatform = t) =>
  store.findDeliveryForWorker(platform.database.db, id);

/** Waits until the delivery satisfies `done`. */
function waitForDelivery(
  id: number,
  done: (row: store.DeliveryRow) => boolean,
  platform: TestPlatform = t,
): Promise<store.DeliveryRow> {
  return waitFor(async () => {
    const row = await deliveryRow(id, platform);
    return row && done(row) ? row : undefined;
  });
}

/**
 * Makes every webhook job waiting for a retry due now (back-off of minutes → no wait) and wakes the
 * worker; on a server database an update sends no notification, so there the next poll (half a
 * second in tests) finds them.
 */
async function hurryRetries(platform: TestPlatform = t): Promise<void> {
  await platform.database.executeSql(
    "update pgboss.job set start_after = now() where name = 'webhook.deliver' and state = 'retry'",
  );
  platform.platform.queue.wake('webhook.deliver');
}

async function retryJobOf(deliveryId: number): Promise<Record<string, unknown> | undefined> {
  const { rows } = await t.database.executeSql(
    "select state, retry_count, retry_limit, start_after > now() + interval '20 seconds' as later from pgboss.job where name = 'webhook.deliver' and (data->>'delivery_id')::int = $1 order by created_on desc limit 1",
    [deliveryId],
  );
  return rows[0];
}

describe('the signature', () => {
  const secret = 'whsec_reference-secret';
  const body = '{"id":"e1","type":"webhook.test"}';
  const now = 1_750_000_000_000;
  const timestamp = now / 1000;

  it('is v1=hex(HMAC-SHA256(secret, "<timestamp>.<body>"))', async () => {
    const { createHmac } = await import('node:crypto');
    const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
    expect(computeSignature(secret, timestamp, body)).toBe(expected);
    expect(verifyWebhookSignature(secret, timestamp, body, `v1=${expected}`, 300, now)).toBe(true);
    expect(
      verifyWebhookSignature(secret, String(timestamp), Buffer.from(body), `v1=${expected}`, 300, now),
    ).toBe(true);
  });

  it('fails with another secret, another body, another timestamp or a stale timestamp', () => {
    const header = `v1=${computeSignature(secret, timestamp, body)}`;
    expect(verifyWebhookSignature('whsec_other', timestamp, body, header, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, timestamp, `${body} `, header, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, timestamp + 1, body, header, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, timestamp, body, header, 300, now + 301_000)).toBe(false);
    expect(verifyWebhookSignature(secret, timestamp, body, header, 300, now - 301_000)).toBe(false);
    expect(verifyWebhookSignature(secret, timestamp, body, header, 300, now + 299_000)).toBe(true);
  });

  it('reads several signatures in one header and refuses malformed ones', () => {
    const good = computeSignature(secret, timestamp, body);
    const other = computeSignature('whsec_other', timestamp, body);
    expect(verifyWebhookSignature(secret, timestamp, body, `v1=${other}, v1=${good}`, 300, now)).toBe(true);
    for (const header of [undefined, '', good, `v0=${good}`, `v1=${good.slice(2)}`, 'v1=zz', `v1=${other}`]) {
      expect(verifyWebhookSignature(secret, timestamp, body, header, 300, now), String(header)).toBe(false);
    }
    expect(verifyWebhookSignature(secret, 'abc', body, `v1=${good}`, 300, now)).toBe(false);
    expect(verifyWebhookSignature('', timestamp, body, `v1=${good}`, 300, now)).toBe(false);
  });
});

describe('delivery', () => {
  it('posts the event with its headers, signed with the organization secret, and records it', async () => {
    const url = receiver.url([200]);
    const before = Math.floor(Date.now() / 1000);
    const sent = await sendTest(admin, url);
    expect(sent.status).toBe('pending');
    const row = await waitForDelivery(sent.id, (r) => r.status === 'delivered');
    expect(row.attempts).toBe(1);
    expect(row.lastStatusCode).toBe(200);
    expect(row.lastError).toBeNull();
    expect(row.deliveredAt).toBeInstanceOf(Date);

    const [request] = receiver.at(url);
    expect(request).toBeDefined();
    const headers = request!.headers;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-switchboard-event-id']).toBe(sent.event_id);
    expect(headers['x-switchboard-event-type']).toBe('webhook.test');
    const timestamp = Number(headers['x-switchboard-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    const signature = headers['x-switchboard-signature'] as string;
    expect(signature).toMatch(/^v1=[0-9a-f]{64}$/);

    const body = JSON.parse(request!.body);
    expect(Object.keys(body).sort()).toEqual(['created_at', 'data', 'id', 'organization_id', 'type']);
    expect(body).toMatchObject({
      id: sent.event_id,
      type: 'webhook.test',
      organization_id: admin.organizationId,
    });
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);

    const secret = await webhookSecret(admin);
    expect(verifyWebhookSignature(secret, String(timestamp), request!.body, signature)).toBe(true);
    expect(
      verifyWebhookSignature(
        `whsec_${randomBytes(32).toString('base64url')}`,
        timestamp,
        request!.body,
        signature,
      ),
    ).toBe(false);
    const otherSecret = await webhookSecret(otherAdmin);
    expect(otherSecret).not.toBe(secret);
    expect(verifyWebhookSignature(otherSecret, timestamp, request!.body, signature)).toBe(false);
  });

  it('retries a 500 with back-off from the job queue, then succeeds with the same event id', async () => {
    const url = receiver.url([500, 200]);
    const sent = await sendTest(admin, url);
    const failed = await waitForDelivery(sent.id, (r) => r.attempts === 1);
    expect(failed.status).toBe('pending');
    expect(failed.lastStatusCode).toBe(500);
    expect(failed.lastError).toMatch(/500/);
    // pg-boss holds it for a retry, later than now (30 s doubled, with jitter).
    const job = await waitFor(async () => {
      const found = await retryJobOf(sent.id);
      return found?.state === 'retry' ? found : undefined;
    });
    expect(job.later).toBe(true);
    expect(Number(job.retry_limit)).toBe(jobPolicies['webhook.deliver'].retryLimit);

    await hurryRetries();
    const delivered = await waitForDelivery(sent.id, (r) => r.status === 'delivered');
    expect(delivered.attempts).toBe(2);
    expect(delivered.lastStatusCode).toBe(200);
    expect(delivered.lastError).toBeNull();
    const requests = receiver.at(url);
    expect(requests).toHaveLength(2);
    const secret = await webhookSecret(admin);
    for (const request of requests) {
      expect(request.headers['x-switchboard-event-id']).toBe(sent.event_id);
      expect(request.body).toBe(requests[0]!.body);
      expect(
        verifyWebhookSignature(
          secret,
          request.headers['x-switchboard-timestamp'] as string,
          request.body,
          request.headers['x-switchboard-signature'] as string,
        ),
      ).toBe(true);
    }
  });

  it('retries 408 and 429 like server errors', async () => {
    for (const status of [408, 429]) {
      const url = receiver.url([status, 204]);
      const sent = await sendTest(admin, url);
      await waitForDelivery(sent.id, (r) => r.attempts === 1 && r.lastStatusCode === status);
      await waitFor(async () => {
        await hurryRetries();
        const row = await deliveryRow(sent.id);
        return row?.status === 'delivered' ? row : undefined;
      });
      expect((await deliveryRow(sent.id))?.attempts).toBe(2);
    }
  });

  it('ends failed after the last attempt the policy allows', async () => {
    const url = receiver.url([503]);
    const sent = await sendTest(admin, url);
    const row = await waitFor(async () => {
      await hurryRetries();
      const current = await deliveryRow(sent.id);
      return current?.status === 'failed' ? current : undefined;
    });
    const attempts = jobPolicies['webhook.deliver'].retryLimit + 1;
    expect(row.attempts).toBe(attempts);
    expect(row.lastStatusCode).toBe(503);
    expect(row.lastError).toMatch(/503/);
    expect(row.deliveredAt).toBeNull();
    expect(receiver.at(url)).toHaveLength(attempts);
    // Nothing more is tried.
    await hurryRetries();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.at(url)).toHaveLength(attempts);
  });

  it('treats other 4xx answers (and redirects) as permanent: failed after one attempt', async () => {
    for (const status of [400, 404, 410, 301]) {
      const url = receiver.url([status, 200]);
      const sent = await sendTest(admin, url);
      const row = await waitForDelivery(sent.id, (r) => r.status !== 'pending');
      expect(row.status, String(status)).toBe('failed');
      expect(row.attempts).toBe(1);
      expect(row.lastStatusCode).toBe(status);
      expect(row.lastError).toContain(String(status));
      await hurryRetries();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.at(url)).toHaveLength(1);
    }
  });

  it('counts a refused connection as a failed attempt to retry', async () => {
    const sent = await sendTest(admin, `http://127.0.0.1:${await unusedPort()}/nobody-listens`);
    const row = await waitForDelivery(sent.id, (r) => r.attempts === 1);
    expect(row.status).toBe('pending');
    expect(row.lastStatusCode).toBeNull();
    expect(row.lastError).toMatch(/ECONNREFUSED/);
    await waitFor(async () => (await retryJobOf(sent.id))?.state === 'retry');
  });

  it('gives up an attempt after the time limit, and ends failed when it was the last', async () => {
    // A service of its own with a short limit, run directly on rows that have no job.
    const webhooks = new WebhookService({
      db: t.database.db,
      queue: t.platform.queue,
      secrets: t.platform.secrets,
      log: { info() {}, warn() {} },
      targets: new OutboundTargets({ allowPrivate: true }),
      organizations: t.platform.services.organizations,
      timeoutMs: 300,
    });
    const tenant = new Tenant(admin.organizationId);
    const url = `http://127.0.0.1:${receiver.port}/hang`;
    const eventId = randomUUID();
    const payload = {
      id: eventId,
      type: 'webhook.test',
      created_at: new Date().toISOString(),
      organization_id: admin.organizationId,
      data: {},
    };
    const first = await store.insertDelivery(t.database.db, tenant, {
      eventId,
      eventType: 'webhook.test',
      url,
      payload,
    });
    const started = Date.now();
    await expect(webhooks.deliver({ delivery_id: first.id }, { retryCount: 0 })).rejects.toBeInstanceOf(
      DeliveryAttemptFailed,
    );
    expect(Date.now() - started).toBeLessThan(3000);
    const afterFirst = await deliveryRow(first.id);
    expect(afterFirst).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(afterFirst?.lastError).toMatch(/No answer within/);

    await expect(
      webhooks.deliver({ delivery_id: first.id }, { retryCount: jobPolicies['webhook.deliver'].retryLimit }),
    ).resolves.toBeUndefined();
    expect(await deliveryRow(first.id)).toMatchObject({ status: 'failed', attempts: 2 });
  });

  it('emits inside the caller transaction: nothing is sent when it rolls back', async () => {
    const webhooks = t.platform.services.webhooks;
    const tenant = new Tenant(admin.organizationId);
    const rolledBack = receiver.url([200]);
    await expect(
      t.platform.queue.transaction(async (tx, jobs) => {
        await webhooks.emit({ tx, jobs }, tenant, {
          url: rolledBack,
          type: 'call.completed',
          data: { n: 1 },
        });
        throw new Error('the caller changes its mind');
      }),
    ).rejects.toThrow('the caller changes its mind');
    const committed = receiver.url([200]);
    const row = await t.platform.queue.transaction((tx, jobs) =>
      webhooks.emit({ tx, jobs }, tenant, { url: committed, type: 'call.completed', data: { n: 2 } }),
    );
    await waitForDelivery(row.id, (r) => r.status === 'delivered');
    expect(receiver.at(rolledBack)).toHaveLength(0);
    expect(JSON.parse(receiver.at(committed)[0]!.body)).toMatchObject({
      id: row.eventId,
      type: 'call.completed',
      data: { n: 2 },
    });
    const { rows } = await t.database.executeSql(
      'select count(*)::int as n from webhook_deliveries where url = $1',
      [rolledBack],
    );
    expect(rows[0]?.n).toBe(0);
  });
});

describe('private targets', () => {
  let strict: TestPlatform;
  let strictAdmin: TestUser;
  beforeAll(async () => {
    strict = await startTestPlatform({ ALLOW_PRIVATE_TARGETS: 'false' });
    strictAdmin = await new Factories(strict).user();
  });
  afterAll(async () => {
    await waitFor(async () => {
      const mail = await strict.platform.queue.counts('mail.send');
      const hooks = await strict.platform.queue.counts('webhook.deliver');
      return !mail.created && !mail.retry && !mail.active && !hooks.created && !hooks.active;
    });
    await strict.close();
  });

  it('are refused at delivery when ALLOW_PRIVATE_TARGETS is false, without a request', async () => {
    // Emitted by the service, as a call or SMS event is: the test route would refuse them up front
    // (test/outbound-targets.test.ts), but a stored URL is judged again at every attempt.
    const tenant = new Tenant(strictAdmin.organizationId);
    const urls = [
      receiver.url([200]),
      `http://localhost:${receiver.port}/by-name`,
      `http://[::1]:${receiver.port}/v6`,
      'http://10.1.2.3/internal',
      'http://[::ffff:127.0.0.1]/mapped',
    ];
    for (const url of urls) {
      const sent = await strict.platform.services.webhooks.send(tenant, {
        url,
        type: 'call.completed',
        data: {},
      });
      const row = await waitForDelivery(sent.id, (r) => r.status !== 'pending', strict);
      expect(row.status, url).toBe('failed');
      expect(row.attempts, url).toBe(0);
      expect(row.lastStatusCode).toBeNull();
      expect(row.lastError, url).toMatch(/^Refused: .*loopback.*ALLOW_PRIVATE_TARGETS is false/);
    }
    expect(receiver.at(urls[0]!)).toHaveLength(0);
    expect(receiver.received.filter((r) => r.path === '/by-name' || r.path === '/v6')).toHaveLength(0);
  });

  it('refuses the test event up front: 422 on the URL, and no delivery', async () => {
    const url = receiver.url([200]);
    const response = await strict.app.inject({
      method: 'POST',
      url: TEST,
      headers: strictAdmin.headers,
      payload: { url },
    });
    expectValidation(response, ['body', 'url']);
    const { rows } = await strict.database.executeSql(
      'select count(*)::int as n from webhook_deliveries where url = $1',
      [url],
    );
    expect(rows[0]?.n).toBe(0);
    expect(receiver.at(url)).toHaveLength(0);
  });
});

describe('the webhook secret', () => {
  it('is made on first use, shown to admins, and stored only sealed', async () => {
    const fresh = await f.user();
    const { rows: before } = await t.database.executeSql(
      'select webhook_secret_sealed from organizations where id = $1',
      [fresh.organizationId],
    );
    expect(before[0]?.webhook_secret_sealed).toBeNull();
    const secret = await webhookSecret(fresh);
    expect(secret).toMatch(SECRET_FORMAT);
    expect(await webhookSecret(fresh)).toBe(secret);
    const { rows } = await t.database.executeSql(
      'select webhook_secret_sealed from organizations where id = $1',
      [fresh.organizationId],
    );
    const sealed = rows[0]?.webhook_secret_sealed as string;
    expect(sealed).not.toContain(secret.slice(6));
    expect(t.platform.secrets.open(sealed)).toBe(secret);
  });

  it('is made once even when asked for concurrently', async () => {
    const fresh = await f.user();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => t.app.inject({ method: 'GET', url: SECRET, headers: fresh.headers })),
    );
    const values = new Set(answers.map((a) => a.json().webhook_secret as string));
    for (const value of values) seenSecrets.add(value);
    expect(values.size).toBe(1);
  });

  it('rotates: a new secret signs from then on, the old one no longer verifies', async () => {
    const old = await webhookSecret(admin);
    const rotated = await t.app.inject({ method: 'POST', url: ROTATE, headers: admin.headers });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const fresh = rotated.json().webhook_secret as string;
    seenSecrets.add(fresh);
    expect(fresh).toMatch(SECRET_FORMAT);
    expect(fresh).not.toBe(old);
    expect(await webhookSecret(admin)).toBe(fresh);

    const url = receiver.url([200]);
    const sent = await sendTest(admin, url);
    await waitForDelivery(sent.id, (r) => r.status === 'delivered');
    const [request] = receiver.at(url);
    const args = [request!.headers['x-switchboard-timestamp'] as string, request!.body] as const;
    const signature = request!.headers['x-switchboard-signature'] as string;
    expect(verifyWebhookSignature(fresh, ...args, signature)).toBe(true);
    expect(verifyWebhookSignature(old, ...args, signature)).toBe(false);
  });

  it('with the session cookie: readable; rotation needs the CSRF token', async () => {
    const cookies = { sb_session: admin.sessionCookie };
    const read = await t.app.inject({ method: 'GET', url: SECRET, cookies });
    expect(read.statusCode, read.body).toBe(200);
    seenSecrets.add(read.json().webhook_secret);
    expectError(await t.app.inject({ method: 'POST', url: ROTATE, cookies }), 403, /CSRF/);
    const rotated = await t.app.inject({
      method: 'POST',
      url: ROTATE,
      cookies,
      headers: { 'x-csrf-token': admin.csrfToken },
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    seenSecrets.add(rotated.json().webhook_secret);
    expect(rotated.json().webhook_secret).not.toBe(read.json().webhook_secret);
  });

  it('is refused to members, to API keys, and without credentials', async () => {
    for (const [method, url] of [
      ['GET', SECRET],
      ['POST', ROTATE],
    ] as const) {
      expectError(await t.app.inject({ method, url, headers: member.headers }), 403, /Admin/);
      expectError(await t.app.inject({ method, url, headers: orgKey.headers }), 403, /not an API key/);
      expectError(await t.app.inject({ method, url }), 401);
    }
  });
});

describe('the delivery log', () => {
  let owner: TestUser;
  let ownerMember: TestUser;
  let readKey: TestApiKey;
  let writeKey: TestApiKey;
  const ids: Record<string, number[]> = { delivered: [], failed: [], call: [] };
  beforeAll(async () => {
    owner = await f.user({ organizationName: 'Log Keepers' });
    ownerMember = await f.member(owner.organizationId, 'user');
    readKey = await f.apiKey(owner, { permissions: { organization: 'read' } });
    writeKey = await f.apiKey(owner, { permissions: { organization: 'read_write' } });
    for (let i = 0; i < 3; i++) ids.delivered!.push((await sendTest(owner, receiver.url([200]))).id);
    for (let i = 0; i < 2; i++) ids.failed!.push((await sendTest(owner, receiver.url([404]))).id);
    const tenant = new Tenant(owner.organizationId);
    for (let i = 0; i < 2; i++) {
      const row = await t.platform.services.webhooks.send(tenant, {
        url: receiver.url([200]),
        type: 'call.completed',
        data: { call_id: i },
      });
      ids.call!.push(row.id);
    }
    const all = Object.values(ids).flat();
    await waitFor(async () => {
      const rows = await Promise.all(all.map((id) => deliveryRow(id)));
      return rows.every((r) => r && r.status !== 'pending');
    });
  });

  const list = (headers: Headers, query = '') =>
    t.app.inject({ method: 'GET', url: `${DELIVERIES}${query}`, headers });

  it('lists every delivery newest first, with pagination', async () => {
    const response = await list(owner.headers, '?per_page=3');
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['items', 'pagination']);
    expect(body.pagination).toEqual({
      page: 1,
      per_page: 3,
      total_items: 7,
      total_pages: 3,
      has_next: true,
      has_prev: false,
    });
    expect(body.items).toHaveLength(3);
    for (const item of body.items) expect(Object.keys(item).sort()).toEqual(DELIVERY_FIELDS);
    const all = Object.values(ids)
      .flat()
      .sort((a, b) => b - a);
    expect(body.items.map((i: { id: number }) => i.id)).toEqual(all.slice(0, 3));
    const last = (await list(owner.headers, '?per_page=3&page=3')).json();
    expect(last.items.map((i: { id: number }) => i.id)).toEqual(all.slice(6));
    expect(last.pagination).toMatchObject({ page: 3, has_next: false, has_prev: true });
    const beyond = (await list(owner.headers, '?per_page=3&page=4')).json();
    expect(beyond.items).toEqual([]);

    const call = body.items[0];
    expect(call).toMatchObject({
      id: ids.call![1],
      event_type: 'call.completed',
      status: 'delivered',
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      payload: { type: 'call.completed', organization_id: owner.organizationId, data: { call_id: 1 } },
    });
    expect(call.payload.id).toBe(call.event_id);
    expect(Date.parse(call.delivered_at)).toBeGreaterThan(0);
  });

  it('filters by status and event type', async () => {
    const failed = (await list(owner.headers, '?status=failed')).json();
    expect(failed.items.map((i: { id: number }) => i.id).sort()).toEqual([...ids.failed!].sort());
    expect(failed.items[0]).toMatchObject({ status: 'failed', last_status_code: 404, delivered_at: null });
    const calls = (await list(owner.headers, '?event_type=call.completed')).json();
    expect(calls.pagination.total_items).toBe(2);
    const tests = (await list(owner.headers, '?event_type=webhook.test&status=delivered')).json();
    expect(tests.items.map((i: { id: number }) => i.id).sort()).toEqual([...ids.delivered!].sort());
    expect((await list(owner.headers, '?status=pending')).json().items).toEqual([]);
    expect((await list(owner.headers, '?event_type=nothing.like.this')).json().pagination.total_items).toBe(
      0,
    );
  });

  it('validates its query', async () => {
    expectValidation(await list(owner.headers, '?status=lost'), ['query', 'status']);
    expectValidation(await list(owner.headers, `?event_type=${'x'.repeat(101)}`), ['query', 'event_type']);
  });

  it('shows only the organization own deliveries', async () => {
    const theirs = (await list(otherAdmin.headers, '?per_page=1000')).json();
    const mine = new Set(Object.values(ids).flat());
    expect(theirs.items.some((i: { id: number }) => mine.has(i.id))).toBe(false);
    const adminOwn = (await list(admin.headers, '?per_page=1000')).json();
    expect(adminOwn.items.some((i: { id: number }) => mine.has(i.id))).toBe(false);
    expect(
      adminOwn.items.every(
        (i: { payload: { organization_id: number } }) => i.payload.organization_id === admin.organizationId,
      ),
    ).toBe(true);
  });

  it('is readable by members and API keys with organization read; not without the area or credentials', async () => {
    expect((await list(ownerMember.headers)).statusCode).toBe(200);
    const byKey = await list(readKey.headers);
    expect(byKey.statusCode, byKey.body).toBe(200);
    expect(byKey.json().pagination.total_items).toBe(7);
    expectError(await list(noAreaKey.headers), 403, /organization/);
    expectError(await list({}), 401);
  });

  describe('redelivery', () => {
    it('sends a delivered event again with the same event id and a fresh signature', async () => {
      const url = receiver.url([200]);
      const sent = await sendTest(owner, url);
      await waitForDelivery(sent.id, (r) => r.status === 'delivered');
      const response = await t.app.inject({
        method: 'POST',
        url: redeliverUrl(sent.id),
        headers: owner.headers,
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ id: sent.id, event_id: sent.event_id, status: 'pending' });
      const row = await waitForDelivery(sent.id, (r) => r.status === 'delivered' && r.attempts === 2);
      expect(row.eventId).toBe(sent.event_id);
      const requests = receiver.at(url);
      expect(requests).toHaveLength(2);
      expect(requests.map((r) => r.headers['x-switchboard-event-id'])).toEqual([
        sent.event_id,
        sent.event_id,
      ]);
      expect(requests[1]!.body).toBe(requests[0]!.body);
    });

    it('gives a failed delivery another round of attempts', async () => {
      const url = receiver.url([404, 200]);
      const sent = await sendTest(owner, url);
      await waitForDelivery(sent.id, (r) => r.status === 'failed');
      const response = await t.app.inject({
        method: 'POST',
        url: redeliverUrl(sent.id),
        headers: writeKey.headers,
      });
      expect(response.statusCode, response.body).toBe(200);
      const row = await waitForDelivery(sent.id, (r) => r.status === 'delivered');
      expect(row).toMatchObject({ attempts: 2, lastStatusCode: 200, lastError: null });
    });

    it('answers 409 while the delivery is still pending', async () => {
      const sent = await sendTest(owner, `http://127.0.0.1:${await unusedPort()}/later`);
      await waitForDelivery(sent.id, (r) => r.attempts === 1);
      expectError(
        await t.app.inject({ method: 'POST', url: redeliverUrl(sent.id), headers: owner.headers }),
        409,
        /pending/,
      );
    });

    it('answers 404 for another organization delivery or an unknown id; 403 for members; 401 without credentials', async () => {
      const id = ids.delivered![0]!;
      expectError(
        await t.app.inject({ method: 'POST', url: redeliverUrl(id), headers: otherAdmin.headers }),
        404,
      );
      expectError(
        await t.app.inject({ method: 'POST', url: redeliverUrl(2_000_000_000), headers: owner.headers }),
        404,
      );
      expectError(
        await t.app.inject({ method: 'POST', url: redeliverUrl(id), headers: ownerMember.headers }),
        403,
      );
      expectError(await t.app.inject({ method: 'POST', url: redeliverUrl(id) }), 401);
      expectValidation(await t.app.inject({ method: 'POST', url: redeliverUrl(0), headers: owner.headers }), [
        'path',
        'delivery_id',
      ]);
      expect((await deliveryRow(id))?.status).toBe('delivered');
    });
  });
});

describe('the test event route', () => {
  it('validates the URL', async () => {
    const post = (payload: object) =>
      t.app.inject({ method: 'POST', url: TEST, headers: admin.headers, payload });
    expectValidation(await post({}), ['body', 'url'], 'missing');
    expectValidation(await post({ url: 'ftp://example.test/hook' }), ['body', 'url']);
    expectValidation(await post({ url: 'not a url' }), ['body', 'url']);
    expectValidation(await post({ url: receiver.url(), extra: true }), ['body', 'extra'], 'extra_forbidden');
  });

  it('is for admins: members 403, keys without organization read_write 403, no credentials 401', async () => {
    const payload = { url: receiver.url() };
    expectError(await t.app.inject({ method: 'POST', url: TEST, headers: member.headers, payload }), 403);
    expectError(await t.app.inject({ method: 'POST', url: TEST, headers: noAreaKey.headers, payload }), 403);
    expectError(await t.app.inject({ method: 'POST', url: TEST, payload }), 401);
    const byKey = await t.app.inject({ method: 'POST', url: TEST, headers: orgKey.headers, payload });
    expect(byKey.statusCode, byKey.body).toBe(200);
    await waitForDelivery(byKey.json().id, (r) => r.status === 'delivered');
  });
});

describe('the secret stays secret', () => {
  it('never appears in logs, the organization, the delivery log or the deliveries table', async () => {
    seenSecrets.add(await webhookSecret(admin));
    expect(seenSecrets.size).toBeGreaterThanOrEqual(5);
    const organization = await t.app.inject({
      method: 'GET',
      url: '/api/v1/organization',
      headers: admin.headers,
    });
    expect(organization.statusCode).toBe(200);
    expect(organization.body).not.toMatch(/whsec_/);
    expect(Object.keys(organization.json())).not.toContain('webhook_secret');
    const log = await t.app.inject({
      method: 'GET',
      url: `${DELIVERIES}?per_page=1000`,
      headers: admin.headers,
    });
    const { rows } = await t.database.executeSql('select * from webhook_deliveries');
    const logs = t.logs.join('\n');
    expect(logs).toMatch(/webhook delivered/);
    for (const secret of seenSecrets) {
      const core = secret.slice('whsec_'.length);
      for (const [where, text] of [
        ['logs', logs],
        ['organization', organization.body],
        ['delivery log', log.body],
        ['webhook_deliveries', JSON.stringify(rows)],
        ['received requests', JSON.stringify(receiver.received)],
      ] as const) {
        expect(text.includes(core), `${where} holds a webhook secret`).toBe(false);
      }
    }
  });
});

async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

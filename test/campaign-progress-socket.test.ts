/**
 * WebSocket /ws/campaigns/{id}/progress over a real listening server and the `ws` client: the
 * ack and initial progress, an update after a committed change announced with `announceProgress`,
 * none for a rolled-back one or another campaign, a burst of 100 announcements coalesced into a
 * few computations shared by every socket, ping/pong, request_update, errors that keep the socket
 * open, refusals with close codes (no token, bad token, API key without campaigns, another
 * organization's campaign, a bad id), the console's session cookie (accepted only from a page of
 * PUBLIC_URL's origin: refused from another origin, without one, or without a cookie), a NOTIFY from another database connection, and subscriptions
 * freed on close. The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { campaignContacts } from '../src/db/schema/index.js';
import { announceProgress, PROGRESS_CHANNEL } from '../src/domains/campaigns/events.js';
import { SESSION_COOKIE } from '../src/domains/identity/principal.js';
import { addContacts, ownCampaign } from './support/campaign-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { databaseUrl } from './support/template.js';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false, listen: true });
  f = new Factories(t);
});
afterAll(() => t.close());

type Message = { type: string; data?: Progress; campaign_id?: number; detail?: string };
type Progress = { campaign_id: number; progress: Record<string, number>; metrics: Record<string, unknown> };

/** A connected client that records every message and its close. */
class Client {
  readonly messages: Message[] = [];
  #read = 0;
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => this.messages.push(JSON.parse(String(data))));
    this.closed = new Promise((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  static async open(path: string, headers: Record<string, string> = {}): Promise<Client> {
    const socket = new WebSocket(`${t.baseUrl!.replace('http', 'ws')}${path}`, { headers });
    const client = new Client(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  static watch(campaignId: number | string, token: string): Promise<Client> {
    return Client.open(`/ws/campaigns/${campaignId}/progress?token=${encodeURIComponent(token)}`);
  }

  /** The next message not read yet. */
  async next(timeoutMs = 5000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length <= this.#read) {
      if (Date.now() > deadline) throw new Error(`no message after ${timeoutMs} ms`);
      await sleep(10);
    }
    return this.messages[this.#read++]!;
  }

  /** Waits until nothing has arrived for `quietMs`, then answers the messages not read yet. */
  async drain(quietMs = 700): Promise<Message[]> {
    let seen = -1;
    while (seen !== this.messages.length) {
      seen = this.messages.length;
      await sleep(quietMs);
    }
    const rest = this.messages.slice(this.#read);
    this.#read = this.messages.length;
    return rest;
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  close(): Promise<unknown> {
    this.socket.close();
    return this.closed;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A watched campaign with three pending contacts, the ack and initial progress already read. */
async function watched(user?: TestUser) {
  const own = await ownCampaign(t, f, user);
  const contacts = await addContacts(t, own.user, own.campaignId, ['pending', 'pending', 'pending']);
  const client = await Client.watch(own.campaignId, own.user.accessToken);
  expect(await client.next()).toEqual({ type: 'connection_ack', campaign_id: own.campaignId });
  const initial = await client.next();
  expect(initial.type).toBe('initial_progress');
  return { ...own, contacts, client, initial: initial.data! };
}

/** Marks a contact completed and announces it, in one transaction (as the executor does). */
async function complete(user: TestUser, campaignId: number, contactId: number): Promise<void> {
  await t.database.db.transaction(async (tx) => {
    await tx.update(campaignContacts).set({ status: 'completed' }).where(eq(campaignContacts.id, contactId));
    await announceProgress(tx, user.organizationId, campaignId);
  });
}

describe('live progress', () => {
  it('sends connection_ack, then initial_progress equal to GET /progress', async () => {
    const { user, campaignId, client, initial } = await watched();
    const polled = await t.app.inject({
      method: 'GET',
      url: `/api/v1/campaigns/${campaignId}/progress`,
      headers: user.headers,
    });
    expect(initial).toEqual(polled.json());
    expect(initial.progress).toMatchObject({ total_contacts: 3, pending: 3, completed: 0 });
    await client.close();
  });

  it('sends progress_update with the new figures once an announcing transaction commits; nothing on rollback', async () => {
    const { user, campaignId, contacts, client } = await watched();
    await complete(user, campaignId, contacts[0]!.id);
    const update = await client.next();
    expect(update.type).toBe('progress_update');
    expect(update.data!.progress).toMatchObject({ completed: 1, pending: 2, progress_percentage: 33.33 });
    expect(update.data!.metrics).toMatchObject({ completion_rate: 33.33, success_rate: 100 });

    await t.database.db
      .transaction(async (tx) => {
        await tx
          .update(campaignContacts)
          .set({ status: 'failed' })
          .where(eq(campaignContacts.id, contacts[1]!.id));
        await announceProgress(tx, user.organizationId, campaignId);
        tx.rollback();
      })
      .catch(() => {});
    expect(await client.drain(500)).toEqual([]);
    await client.close();
  });

  it('sends a progress_update when contacts are imported, with the new total', async () => {
    const { user, campaignId, client } = await watched();
    const imported = await t.app.inject({
      method: 'POST',
      url: `/api/v1/campaigns/${campaignId}/contacts`,
      headers: user.headers,
      payload: { contacts: [{ phone_number: '+14155550181' }, { phone_number: '+14155550182' }] },
    });
    expect(imported.statusCode, imported.body).toBe(200);
    const update = await client.next();
    expect(update.type).toBe('progress_update');
    expect(update.data!.progress).toMatchObject({ total_contacts: 5, pending: 5 });
    await client.close();
  });

  it('coalesces a burst of 100 announcements into a few updates, one computation shared by both sockets', async () => {
    const { user, campaignId, contacts, client } = await watched();
    const second = await Client.watch(campaignId, user.accessToken);
    expect((await second.next()).type).toBe('connection_ack');
    expect((await second.next()).type).toBe('initial_progress');
    const feed = t.platform.services.campaignProgressFeed;
    const before = feed.computations;

    await complete(user, campaignId, contacts[0]!.id);
    await Promise.all(
      Array.from({ length: 100 }, () =>
        t.database.notify(PROGRESS_CHANNEL, `${user.organizationId}:${campaignId}`),
      ),
    );
    const updates = await client.drain();
    const computed = feed.computations - before;
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates.length).toBeLessThanOrEqual(4);
    expect(updates.every((u) => u.type === 'progress_update')).toBe(true);
    expect(updates.at(-1)!.data!.progress.completed).toBe(1);
    // One computation per update, not one per socket.
    expect(computed).toBe(updates.length);
    expect((await second.drain(100)).length).toBe(updates.length);
    await Promise.all([client.close(), second.close()]);
  });

  it('sends nothing for another campaign’s changes', async () => {
    const { user, client } = await watched();
    const other = await ownCampaign(t, f, user);
    const [contact] = await addContacts(t, user, other.campaignId, ['pending'], 2000);
    await complete(user, other.campaignId, contact!.id);
    expect(await client.drain(500)).toEqual([]);
    await client.close();
  });

  it('hears a NOTIFY sent from another database connection than the app’s', async () => {
    const { user, campaignId, contacts, client } = await watched();
    await t.database.db
      .update(campaignContacts)
      .set({ status: 'in_progress' })
      .where(eq(campaignContacts.id, contacts[2]!.id));
    const payload = `${user.organizationId}:${campaignId}`;
    const template = inject('template');
    if (template.kind === 'server') {
      // A separate connection, as a worker process would have.
      const [row] = (await t.database.executeSql('select current_database() as name')).rows;
      const other = new pg.Client({ connectionString: databaseUrl(template.adminUrl, String(row!.name)) });
      await other.connect();
      try {
        await other.query('begin');
        await other.query('select pg_notify($1, $2)', [PROGRESS_CHANNEL, payload]);
        await other.query('commit');
      } finally {
        await other.end();
      }
    } else {
      // Embedded PGlite has one connection: the raw driver, outside Drizzle and its transactions.
      await t.database.executeSql(`begin; select pg_notify('${PROGRESS_CHANNEL}', '${payload}'); commit;`);
    }
    const update = await client.next();
    expect(update.type).toBe('progress_update');
    expect(update.data!.progress).toMatchObject({ processing: 1, pending: 2 });
    await client.close();
  });

  it('answers ping with pong and request_update with a progress_update', async () => {
    const { client, initial } = await watched();
    client.send({ type: 'ping' });
    expect(await client.next()).toEqual({ type: 'pong' });
    client.send({ type: 'request_update' });
    expect(await client.next()).toEqual({ type: 'progress_update', data: initial });
    await client.close();
  });

  it('answers invalid and unknown messages with an error and stays open', async () => {
    const { client } = await watched();
    for (const bad of ['not json', '[1]', '"ping"', JSON.stringify({ type: 'subscribe' }), '{}']) {
      client.send(bad);
      const answer = await client.next();
      expect(answer.type, bad).toBe('error');
      expect(typeof answer.detail).toBe('string');
    }
    client.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    expect((await client.next()).type).toBe('error');
    client.send({ type: 'ping' });
    expect(await client.next()).toEqual({ type: 'pong' });
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    await client.close();
  });

  it('frees the subscription when the socket closes: later changes compute nothing', async () => {
    const { user, campaignId, contacts, client } = await watched();
    await client.close();
    await sleep(100);
    const feed = t.platform.services.campaignProgressFeed;
    const before = feed.computations;
    await complete(user, campaignId, contacts[0]!.id);
    await sleep(400);
    expect(feed.computations).toBe(before);
  });

  it('closes with 4404 when the watched campaign is deleted', async () => {
    const { user, campaignId, client } = await watched();
    const removed = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/campaigns/${campaignId}`,
      headers: user.headers,
    });
    expect(removed.statusCode).toBe(204);
    await t.database.notify(PROGRESS_CHANNEL, `${user.organizationId}:${campaignId}`);
    expect(await client.closed).toEqual({ code: 4404, reason: 'Campaign not found' });
  });
});

describe('refusals', () => {
  async function refused(path: string): Promise<{ code: number; reason: string; messages: Message[] }> {
    const client = await Client.open(path);
    const closed = await client.closed;
    return { ...closed, messages: client.messages };
  }
  const at = (id: number | string, token?: string) =>
    `/ws/campaigns/${id}/progress${token === undefined ? '' : `?token=${encodeURIComponent(token)}`}`;

  it('4401 without a token, with a bad JWT or an unknown API key; nothing is sent first', async () => {
    const { campaignId } = await ownCampaign(t, f);
    for (const token of [undefined, '', 'not-a-jwt', 'sk_unknownkey0123456789abcdefghijklmn']) {
      const result = await refused(at(campaignId, token));
      expect(result.code, String(token)).toBe(4401);
      expect(result.reason).toMatch(/authenticated|Invalid/);
      expect(result.messages).toEqual([]);
    }
  });

  it('4403 for an API key without campaigns read; a key with it is accepted', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const none = await f.apiKey(user, { permissions: { calls: 'read_write' } });
    expect(await refused(at(campaignId, none.key))).toMatchObject({
      code: 4403,
      reason: 'API key lacks read permission for campaigns',
      messages: [],
    });
    const reader = await f.apiKey(user, { permissions: { campaigns: 'read' } });
    const client = await Client.watch(campaignId, reader.key);
    expect((await client.next()).type).toBe('connection_ack');
    expect((await client.next()).type).toBe('initial_progress');
    await client.close();
  });

  it('4404 for another organization’s campaign and an unknown one; 4422 for an id that is not one', async () => {
    const { campaignId } = await ownCampaign(t, f);
    const stranger = await f.user();
    expect(await refused(at(campaignId, stranger.accessToken))).toMatchObject({
      code: 4404,
      reason: 'Campaign not found',
      messages: [],
    });
    expect((await refused(at(2_000_000_000, stranger.accessToken))).code).toBe(4404);
    for (const id of ['0', 'abc', '2147483648'])
      expect((await refused(at(id, stranger.accessToken))).code, id).toBe(4422);
  });

  it('a plain GET of the socket path (no upgrade) answers 404', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const response = await fetch(`${t.baseUrl}${at(campaignId, user.accessToken)}`);
    expect(response.status).toBe(404);
  });
});

describe('the session cookie (the console, no token)', () => {
  const at = (id: number) => `/ws/campaigns/${id}/progress`;
  const cookieOf = (user: TestUser) => `${SESSION_COOKIE}=${user.sessionCookie}`;
  async function outcome(path: string, headers: Record<string, string>) {
    const client = await Client.open(path, headers);
    const first = await Promise.race([client.next(3000).catch(() => undefined), client.closed]);
    if (first && 'type' in first) {
      await client.close();
      return { accepted: first.type };
    }
    return { ...(await client.closed), messages: client.messages };
  }

  it('accepted from a page of our own origin (PUBLIC_URL): ack and initial progress', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const client = await Client.open(at(campaignId), { cookie: cookieOf(user), origin: t.baseUrl! });
    expect(await client.next()).toEqual({ type: 'connection_ack', campaign_id: campaignId });
    const initial = await client.next();
    expect(initial).toMatchObject({ type: 'initial_progress', data: { campaign_id: campaignId } });
    await client.close();
  });

  it('4403 from another origin, from a look-alike origin and without an Origin header; nothing is sent', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const port = new URL(t.baseUrl!).port;
    for (const origin of [
      'https://evil.example',
      `http://localhost:${port}`,
      `${t.baseUrl}.evil.example`,
      undefined,
    ]) {
      const headers: Record<string, string> = { cookie: cookieOf(user) };
      if (origin) headers.origin = origin;
      const result = await outcome(at(campaignId), headers);
      expect(result, String(origin)).toMatchObject({ code: 4403, messages: [] });
      expect((result as { reason: string }).reason).toMatch(/session cookie is accepted only from/);
    }
  });

  it('4401 from our origin without a cookie or with a cookie that is no session', async () => {
    const { campaignId } = await ownCampaign(t, f);
    expect(await outcome(at(campaignId), { origin: t.baseUrl! })).toMatchObject({ code: 4401, messages: [] });
    expect(
      await outcome(at(campaignId), { origin: t.baseUrl!, cookie: `${SESSION_COOKIE}=forged-session` }),
    ).toMatchObject({ code: 4401, reason: 'Session expired or invalid', messages: [] });
  });

  it('4404 for another organization’s campaign with a valid cookie from our origin', async () => {
    const { campaignId } = await ownCampaign(t, f);
    const stranger = await f.user();
    expect(await outcome(at(campaignId), { origin: t.baseUrl!, cookie: cookieOf(stranger) })).toMatchObject({
      code: 4404,
      messages: [],
    });
  });

  it('a token wins over the cookie, and needs no Origin', async () => {
    const { user, campaignId } = await ownCampaign(t, f);
    const stranger = await f.user();
    // The stranger's cookie from another site is ignored: the owner's token is what identifies the caller.
    const client = await Client.open(`${at(campaignId)}?token=${encodeURIComponent(user.accessToken)}`, {
      cookie: cookieOf(stranger),
      origin: 'https://evil.example',
    });
    expect((await client.next()).type).toBe('connection_ack');
    await client.close();
  });
});

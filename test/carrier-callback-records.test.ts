/**
 * A carrier callback applies only to the call or message it names. The URL we give a carrier names
 * our record (`?call_id=`, `?message_id=`), but carrier_b and carrier_c sign the body only: a callback
 * correctly signed for call X can be posted to call Y's URL. For every carrier and every callback
 * that names a record in its URL (voice, status, sms-status), the record the callback itself names
 * must be that one: otherwise 403, and nothing changes — not the record, its events, nor the wallet.
 * And a callback that cannot be verified answers the same whether or not the call, message or number
 * it points at exists, so that unsigned requests cannot probe which ones do.
 *
 * The platform is driven with `inject`; callbacks are built and signed in each carrier's wire format
 * (support/carrier-callbacks.ts).
 */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls, ledgerEntries, messages } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { insertCall } from '../src/domains/calls/store.js';
import { insertMessage } from '../src/domains/sms/store.js';
import { expectError } from './support/assertions.js';
import {
  type Account,
  type Callback,
  carrierA,
  carrierB,
  carrierC,
  type CarrierKit as Kit,
  nextNumber,
} from './support/carrier-callbacks.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;

beforeAll(async () => {
  // Nothing here reaches a carrier's API: nothing listens at these addresses.
  t = await startTestPlatform({
    CARRIER_A_BASE_URL: 'http://127.0.0.1:9',
    CARRIER_B_BASE_URL: 'http://127.0.0.1:9',
    CARRIER_C_BASE_URL: 'http://127.0.0.1:9',
  });
  f = new Factories(t);
});
afterAll(async () => {
  await t.close();
});

interface Org extends Account {
  admin: TestUser;
}

/** A record's ids: ours, and the carrier's (null while the carrier has not answered our request). */
interface CallRef {
  id: number;
  sid: string | null;
  to: string;
}
interface MessageRef {
  id: string;
  providerId: string | null;
  to: string;
}

type Signing = 'good' | 'foreign' | 'none';

/** An organization holding `kit`'s credentials, with an assistant and a number routed to it. */
async function organization(kit: Kit): Promise<Org> {
  const admin = await f.user();
  const credentials = kit.credentials();
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { [kit.id]: credentials },
  });
  expect(put.statusCode, put.body).toBe(200);
  const assistantId = await f.assistant(admin, 'Caller');
  const number = nextNumber();
  const registered = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: number, provider: kit.id, assistant_id: assistantId },
  });
  expect(registered.statusCode, registered.body).toBe(201);
  return { admin, credentials, number };
}

/** An outbound call of `org` through `kit`, as the platform records it once placed. */
async function call(
  kit: Kit,
  org: Org,
  options: { status?: 'ringing' | 'in-progress'; sid?: string | null } = {},
): Promise<CallRef> {
  const to = nextNumber();
  const sid = options.sid === undefined ? `${kit.id}-call-${randomUUID()}` : options.sid;
  const status = options.status ?? 'in-progress';
  const row = await insertCall(t.database.db, new Tenant(org.admin.organizationId), {
    provider: kit.id,
    callSid: sid,
    direction: 'outbound',
    fromPhoneNumber: org.number,
    toPhoneNumber: to,
    customerPhoneNumber: to,
    status,
    ...(status === 'in-progress' ? { startedAt: new Date() } : {}),
  });
  return { id: row.id, sid, to };
}

/** An outbound message of `org` through `kit`, sent (the carrier's id stored unless `providerId: null`). */
async function message(
  kit: Kit,
  org: Org,
  options: { providerId?: string | null } = {},
): Promise<MessageRef> {
  const to = nextNumber();
  const providerId =
    options.providerId === undefined ? `${kit.id}-message-${randomUUID()}` : options.providerId;
  const row = await insertMessage(t.database.db, new Tenant(org.admin.organizationId), {
    provider: kit.id,
    direction: 'outbound',
    fromPhoneNumber: org.number,
    toPhoneNumber: to,
    body: 'See you at 10',
    status: 'sent',
    providerMessageId: providerId,
    sentAt: new Date(),
  });
  return { id: row.id, providerId, to };
}

async function post(kit: Kit, org: Org, path: string, callback: Callback, signing: Signing = 'good') {
  const url = `/webhooks/${kit.id}/${path}`;
  return t.app.inject({
    method: 'POST',
    url,
    headers: {
      'content-type': callback.contentType,
      ...(signing === 'none' ? {} : await kit.sign(org, `${t.config.publicUrl}${url}`, callback, signing)),
    },
    payload: callback.body,
  });
}

/** Everything a callback could change about a call: its row, its events, the organization's call charges. */
async function callState(org: Org, id: number) {
  const [row] = await t.database.db.select().from(calls).where(eq(calls.id, id));
  const events = await t.database.db.select().from(callEvents).where(eq(callEvents.callId, id));
  const charges = await t.database.db
    .select()
    .from(ledgerEntries)
    .where(eq(ledgerEntries.organizationId, org.admin.organizationId));
  return { row, events: events.length, charges: charges.filter((entry) => entry.kind === 'call').length };
}

async function messageRow(id: string) {
  const [row] = await t.database.db.select().from(messages).where(eq(messages.id, id));
  return row!;
}

const MISMATCH = /reports another call or message than the one it was sent for/;

describe.each([carrierA, carrierB, carrierC])('$id', (kit) => {
  it('a status callback signed for call X, posted to call Y’s URL: 403, Y unchanged and not charged', async () => {
    const org = await organization(kit);
    const x = await call(kit, org);
    const y = await call(kit, org);
    const before = { x: await callState(org, x.id), y: await callState(org, y.id) };
    const callback = kit.completed(org, { ...x, sid: x.sid! });

    expectError(await post(kit, org, `status?call_id=${y.id}`, callback), 403, MISMATCH);
    expect(await callState(org, y.id)).toEqual(before.y);
    expect(await callState(org, x.id)).toEqual(before.x);

    // The same callback at X's own URL is applied (it was signed correctly): X completes, charged once.
    const own = await post(kit, org, `status?call_id=${x.id}`, callback);
    expect(own.statusCode, own.body).toBe(204);
    const after = await callState(org, x.id);
    expect(after.row).toMatchObject({ status: 'completed', duration: 600, cost: 0.5 });
    expect(after.charges).toBe(1);
    expect(await callState(org, y.id)).toMatchObject({ row: before.y.row, events: before.y.events });
  });

  it('the connect request of call X at call Y’s voice URL: 403, no instructions, Y unchanged', async () => {
    const org = await organization(kit);
    const x = await call(kit, org, { status: 'ringing' });
    const y = await call(kit, org, { status: 'ringing' });
    const before = await callState(org, y.id);
    const callback = kit.answered(org, { ...x, sid: x.sid! });

    expectError(await post(kit, org, `voice?call_id=${y.id}`, callback), 403, MISMATCH);
    expect(await callState(org, y.id)).toEqual(before);

    // At X's own URL it passes: carrier_b streams from the dial and needs no instructions (204; only a
    // ringing inbound call is answered, by command), the others get the stream to connect.
    const own = await post(kit, org, `voice?call_id=${x.id}`, callback);
    expect(own.statusCode, own.body).toBe(kit.id === 'carrier_b' ? 204 : 200);
    // The stream URL ends at the id: the token travels as a <Parameter> (carrier_a) or an NCCO header (carrier_c).
    if (kit.id !== 'carrier_b') expect(own.body).toMatch(new RegExp(`/media-stream/${x.id}"`));
  });

  it('a delivery receipt for message X at message Y’s URL: 403, Y unchanged', async () => {
    const org = await organization(kit);
    const x = await message(kit, org);
    const y = await message(kit, org);
    const before = await messageRow(y.id);
    const callback = kit.delivered(org, { providerId: x.providerId!, to: x.to });

    expectError(await post(kit, org, `sms-status?message_id=${y.id}`, callback), 403, MISMATCH);
    expect(await messageRow(y.id)).toEqual(before);

    const own = await post(kit, org, `sms-status?message_id=${x.id}`, callback);
    expect(own.statusCode, own.body).toBe(204);
    expect((await messageRow(x.id)).status).toBe('delivered');
    expect(await messageRow(y.id)).toEqual(before);
  });

  it('a call’s callback at a message’s URL, and a receipt at a call’s URL: 403, both unchanged', async () => {
    const org = await organization(kit);
    const c = await call(kit, org);
    const m = await message(kit, org);
    const before = { call: await callState(org, c.id), message: await messageRow(m.id) };

    const completed = kit.completed(org, { ...c, sid: c.sid! });
    expectError(await post(kit, org, `sms-status?message_id=${m.id}`, completed), 403);
    const receipt = kit.delivered(org, { providerId: m.providerId!, to: m.to });
    expectError(await post(kit, org, `status?call_id=${c.id}`, receipt), 403, MISMATCH);

    expect(await callState(org, c.id)).toEqual(before.call);
    expect(await messageRow(m.id)).toEqual(before.message);
  });

  it('before the carrier’s id of Y is stored, a callback naming another call or message of ours is refused; one naming no other record applies', async () => {
    const org = await organization(kit);
    const x = await call(kit, org);
    // The carrier's answer to our dial (with Y's id) has not been stored yet; its callbacks may overtake it.
    const y = await call(kit, org, { sid: null });
    const before = await callState(org, y.id);
    expectError(
      await post(kit, org, `status?call_id=${y.id}`, kit.completed(org, { ...x, sid: x.sid! })),
      403,
      MISMATCH,
    );
    expect(await callState(org, y.id)).toEqual(before);
    const ownSid = `${kit.id}-call-${randomUUID()}`;
    const own = await post(kit, org, `status?call_id=${y.id}`, kit.completed(org, { ...y, sid: ownSid }));
    expect(own.statusCode, own.body).toBe(204);
    expect((await callState(org, y.id)).row).toMatchObject({ status: 'completed', callSid: ownSid });

    const mx = await message(kit, org);
    const my = await message(kit, org, { providerId: null });
    const messageBefore = await messageRow(my.id);
    const foreignReceipt = kit.delivered(org, { providerId: mx.providerId!, to: mx.to });
    expectError(await post(kit, org, `sms-status?message_id=${my.id}`, foreignReceipt), 403, MISMATCH);
    expect(await messageRow(my.id)).toEqual(messageBefore);
    const ownReceipt = kit.delivered(org, { providerId: `${kit.id}-message-${randomUUID()}`, to: my.to });
    expect((await post(kit, org, `sms-status?message_id=${my.id}`, ownReceipt)).statusCode).toBe(204);
    expect((await messageRow(my.id)).status).toBe('delivered');
  });

  it('an unsigned or badly signed callback answers the same whether its call, message or number exists or not', async () => {
    const org = await organization(kit);
    const c = await call(kit, org);
    const m = await message(kit, org);
    const nobody = nextNumber();
    const unknownSid = `${kit.id}-call-${randomUUID()}`;
    const completed = (sid: string) => kit.completed(org, { id: c.id, sid, to: c.to });
    const receipt = (providerId: string) => kit.delivered(org, { providerId, to: m.to });
    // Each pair: a callback for something that exists, and the same for something that does not.
    const pairs: Array<[string, [string, Callback], [string, Callback]]> = [
      [
        'status by call id',
        [`status?call_id=${c.id}`, completed(c.sid!)],
        ['status?call_id=2147483000', completed(c.sid!)],
      ],
      [
        'voice by call id',
        [`voice?call_id=${c.id}`, kit.answered(org, { ...c, sid: c.sid! })],
        ['voice?call_id=2147483000', kit.answered(org, { ...c, sid: c.sid! })],
      ],
      ['status by the carrier’s call id', ['status', completed(c.sid!)], ['status', completed(unknownSid)]],
      [
        'receipt by message id',
        [`sms-status?message_id=${m.id}`, receipt(m.providerId!)],
        [`sms-status?message_id=${randomUUID()}`, receipt(m.providerId!)],
      ],
      [
        'receipt by the carrier’s message id',
        ['sms-status', receipt(m.providerId!)],
        ['sms-status', receipt(`${kit.id}-message-${randomUUID()}`)],
      ],
      [
        'inbound message by number',
        ['sms', kit.inboundMessage(org, org.number)],
        ['sms', kit.inboundMessage(org, nobody)],
      ],
      [
        'inbound call by number',
        ['voice', kit.inboundCall(org, org.number)],
        ['voice', kit.inboundCall(org, nobody)],
      ],
    ];
    const before = { call: await callState(org, c.id), message: await messageRow(m.id) };
    for (const signing of ['none', 'foreign'] as const) {
      for (const [what, [existingPath, existing], [missingPath, missing]] of pairs) {
        const there = await post(kit, org, existingPath, existing, signing);
        const absent = await post(kit, org, missingPath, missing, signing);
        const answer = (r: typeof there) => ({
          status: r.statusCode,
          type: r.headers['content-type'],
          body: r.body,
        });
        expect(answer(absent), `${what}, signature ${signing}`).toEqual(answer(there));
        expectError(there, 403, /^Invalid webhook signature$/);
      }
    }
    expect(await callState(org, c.id)).toEqual(before.call);
    expect(await messageRow(m.id)).toEqual(before.message);
    const inbound = await t.database.db.select().from(calls).where(eq(calls.toPhoneNumber, org.number));
    expect(inbound).toHaveLength(0);
  });
});

describe('carrier_b', () => {
  it('a callback naming call Y’s carrier id but echoing another call’s id (client state) is refused', async () => {
    const org = await organization(carrierB);
    const x = await call(carrierB, org);
    const y = await call(carrierB, org);
    const before = await callState(org, y.id);
    const callback = carrierB.completed(org, { id: x.id, sid: y.sid!, to: y.to });
    expectError(await post(carrierB, org, `status?call_id=${y.id}`, callback), 403, MISMATCH);
    expect(await callState(org, y.id)).toEqual(before);
  });
});

/**
 * The call and SMS paths end to end through carrier_b and carrier_c, as calls-initiate.test.ts proves
 * them for carrier_a: the platform listens on loopback, each carrier's simulator places the call (or
 * sends the message) and posts its signed callbacks, and the call record, its events, the wallet and
 * the message record follow. Webhooks verify only with the organization's own key for the carrier
 * (carrier_b `public_key`, carrier_c `signature_secret`): a bad signature, no key configured, or
 * another organization's key answers 403 and changes nothing.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls, ledgerEntries, messages } from '../src/db/schema/index.js';
import { MediaTokens } from '../src/lib/media-token.js';
import { encodeClientState } from '../src/providers/carriers/carrier-b.js';
import { CarrierBSimulator } from '../src/sim/carrier-b.js';
import { CarrierCSimulator } from '../src/sim/carrier-c.js';
import { websocketOfNcco } from '../src/sim/carrier-c-phone.js';
import type { CallOutcome, CarrierSimulatorBase, SimulatedCall } from '../src/sim/carrier-sim.js';
import { expectError } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform, waitFor } from './support/harness.js';

type CarrierId = 'carrier_b' | 'carrier_c';
/** Whose webhook key an organization configures: the simulator's, another account's, or none. */
type Verifier = 'carrier' | 'foreign' | 'none';

const simB = new CarrierBSimulator();
const simC = new CarrierCSimulator();
/** Other carrier accounts, never started: only their webhook keys (another organization's) are used. */
const foreignB = new CarrierBSimulator();
const foreignC = new CarrierCSimulator();
/** carrier_c applications sign their API requests with an RSA key; one pair serves every application. */
const rsa = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const tokens = new MediaTokens(TEST_SECRET_KEY);

let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  await simB.start();
  await simC.start();
  t = await startTestPlatform(
    {
      // carrier_a is not used here; nothing listens there.
      CARRIER_A_BASE_URL: 'http://127.0.0.1:9',
      CARRIER_B_BASE_URL: simB.baseUrl,
      CARRIER_C_BASE_URL: simC.baseUrl,
    },
    { listen: true },
  );
  f = new Factories(t);
});
afterAll(async () => {
  await simB.stop();
  await simC.stop();
  await t.close();
});

interface Org {
  admin: TestUser;
  /** The account's API credentials (without the webhook key). */
  account: Record<string, string>;
  /** Which key signs this account's webhooks. */
  signer: 'carrier' | 'foreign';
  assistantId: number;
  number: string;
  numberId: number;
}

interface PlacedCallRef {
  id: number;
  sid: string;
  to: string;
}

/** What differs between the carriers: accounts, keys, wire formats, and what the simulator posts. */
interface Kit {
  id: CarrierId;
  sim: CarrierSimulatorBase;
  /** Registers a fresh account with the simulator; its API credentials. */
  account(): Record<string, string>;
  /** The credential field(s) that verify webhooks signed with `verifier`'s key. */
  key(verifier: Exclude<Verifier, 'none'>): Record<string, string>;
  /** Headers of a webhook body signed the way the carrier signs it for `as`'s account. */
  sign(body: string, as: Org): Promise<Record<string, string>>;
  /** Headers signing a different body for `as`'s account (a body changed in transit). */
  tampered(body: string, as: Org): Promise<Record<string, string>>;
  /** A final status: the call completed after `seconds`. */
  completed(org: Org, call: PlacedCallRef, seconds: number): string;
  /** An inbound message to `org.number`, as the carrier posts it. */
  inbound(org: Org, from: string, text: string): { body: string; messageId: string };
  /** The simulator texts `org.number`, posting to our `sms` webhook. */
  sendInbound(org: Org, from: string, text: string): Promise<{ messageId: string; status: unknown }>;
  /** Where the carrier connects the call's audio, from what it was given (or answered). */
  streamUrl(call: SimulatedCall): string;
  /** The single-call media token the carrier was given with it. */
  streamToken?(call: SimulatedCall): string;
  /** What it was asked on dial, for the call `id` from `org.number` to `to`. */
  expectDial(call: SimulatedCall, org: Org, ref: PlacedCallRef): void;
  /** Statuses of a completed call's callbacks, in order. */
  completedCallbacks: number[];
}

const wire = (number: string) => number.replace(/^\+/, '');
const iso = (ms: number) => new Date(ms).toISOString();

const carrierB: Kit = {
  id: 'carrier_b',
  sim: simB,
  account() {
    serial += 1;
    const account = { api_key: `KEY-b-${serial}-${randomUUID()}`, connection_id: String(7_000_000 + serial) };
    simB.addAccount(account);
    return account;
  },
  key: (verifier) => ({ public_key: (verifier === 'carrier' ? simB : foreignB).publicKey }),
  sign: async (body, as) => (as.signer === 'carrier' ? simB : foreignB).signatureHeaders(body),
  tampered: async (body, as) => (as.signer === 'carrier' ? simB : foreignB).signatureHeaders(`${body} `),
  completed(org, call, seconds) {
    const now = Date.now();
    return JSON.stringify({
      data: {
        record_type: 'event',
        event_type: 'call.hangup',
        id: randomUUID(),
        occurred_at: iso(now),
        payload: {
          call_control_id: call.sid,
          connection_id: org.account.connection_id,
          client_state: encodeClientState(call.id),
          from: org.number,
          to: call.to,
          state: 'hangup',
          hangup_cause: 'normal_clearing',
          hangup_source: 'callee',
          sip_hangup_cause: '200',
          start_time: iso(now - seconds * 1000),
          end_time: iso(now),
        },
      },
      meta: { attempt: 1 },
    });
  },
  inbound(org, from, text) {
    const messageId = randomUUID();
    const body = JSON.stringify({
      data: {
        record_type: 'event',
        event_type: 'message.received',
        id: randomUUID(),
        occurred_at: iso(Date.now()),
        payload: {
          record_type: 'message',
          direction: 'inbound',
          id: messageId,
          type: 'SMS',
          from: { phone_number: from, carrier: 'Simulated Mobile', line_type: 'Wireless' },
          to: [{ phone_number: org.number, status: 'delivered', carrier: 'Simulated', line_type: 'VoIP' }],
          cc: [],
          text,
          media: [],
          encoding: 'GSM-7',
          parts: 1,
          received_at: iso(Date.now()),
          errors: [],
        },
      },
      meta: { attempt: 1 },
    });
    return { body, messageId };
  },
  sendInbound: (org, from, text) =>
    simB.sendInboundMessage({
      webhookUrl: `${t.baseUrl}/webhooks/carrier_b/sms`,
      from,
      to: org.number,
      text,
    }),
  streamUrl: (call) => String(call.request.stream_url),
  streamToken: (call) => String(call.request.stream_auth_token),
  expectDial(call, org, ref) {
    expect(call.request).toMatchObject({
      connection_id: org.account.connection_id,
      from: org.number,
      to: ref.to,
      webhook_url: `${t.baseUrl}/webhooks/carrier_b/status?call_id=${ref.id}`,
      webhook_url_method: 'POST',
      stream_url: expect.any(String),
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      stream_auth_token: expect.any(String),
      client_state: encodeClientState(ref.id),
      // The assistant detects answering machines (voicemail_settings.detection, on by default).
      answering_machine_detection: 'detect_beep',
    });
    // Audio streams from the dial: there is no answer URL to fetch.
    expect(call.answer).toBeUndefined();
  },
  // call.initiated (ringing), call.answered (in-progress), call.machine.detection.ended (human),
  // call.hangup (completed)
  completedCallbacks: [204, 204, 204, 204],
};

const carrierC: Kit = {
  id: 'carrier_c',
  sim: simC,
  account() {
    const account = { application_id: randomUUID(), private_key: rsa.privateKey };
    simC.addAccount({ application_id: account.application_id, public_key_pem: rsa.publicKey });
    return account;
  },
  key: (verifier) => ({ signature_secret: (verifier === 'carrier' ? simC : foreignC).signatureSecret }),
  sign: async (body, as) => ({
    authorization: `Bearer ${await (as.signer === 'carrier' ? simC : foreignC).webhookToken(body, as.account.application_id)}`,
  }),
  tampered: async (body, as) => ({
    authorization: `Bearer ${await (as.signer === 'carrier' ? simC : foreignC).webhookToken(`${body} `, as.account.application_id)}`,
  }),
  completed(org, call, seconds) {
    const now = Date.now();
    return JSON.stringify({
      uuid: call.sid,
      conversation_uuid: `CON-${randomUUID()}`,
      status: 'completed',
      direction: 'outbound',
      from: wire(org.number),
      to: wire(call.to),
      timestamp: iso(now),
      start_time: iso(now - seconds * 1000),
      end_time: iso(now),
      duration: String(seconds),
      rate: '0.01000000',
      price: ((seconds / 60) * 0.01).toFixed(8),
      network: '23410',
    });
  },
  inbound(org, from, text) {
    const messageId = randomUUID();
    const body = JSON.stringify({
      channel: 'sms',
      message_uuid: messageId,
      to: wire(org.number),
      from: wire(from),
      timestamp: iso(Date.now()),
      message_type: 'text',
      text,
    });
    return { body, messageId };
  },
  sendInbound: (org, from, text) =>
    simC.sendInboundMessage({
      webhookUrl: `${t.baseUrl}/webhooks/carrier_c/sms`,
      from,
      to: org.number,
      text,
      applicationId: org.account.application_id,
    }),
  streamUrl: (call) => websocketOfNcco(call.answer!.body)!.uri,
  // The token rides in the websocket endpoint's headers, which come back in `websocket:connected`.
  streamToken: (call) => websocketOfNcco(call.answer!.body)!.headers.token ?? '',
  expectDial(call, org, ref) {
    expect(call.request).toMatchObject({
      to: [{ type: 'phone', number: wire(ref.to) }],
      from: { type: 'phone', number: wire(org.number) },
      answer_url: [`${t.baseUrl}/webhooks/carrier_c/voice?call_id=${ref.id}`],
      answer_method: 'POST',
      event_url: [`${t.baseUrl}/webhooks/carrier_c/status?call_id=${ref.id}`],
      event_method: 'POST',
      // The assistant detects answering machines (voicemail_settings.detection, on by default).
      advanced_machine_detection: { behavior: 'continue', mode: 'detect_beep' },
    });
    // The simulator fetched the answer URL; we answered the NCCO connecting the audio to our stream.
    expect(call.answer?.status).toBe(200);
    expect(call.answer?.contentType).toContain('application/json');
    expect(JSON.parse(call.answer!.body)).toEqual([
      {
        action: 'connect',
        endpoint: [
          {
            type: 'websocket',
            uri: expect.any(String),
            'content-type': 'audio/l16;rate=16000',
            headers: { token: expect.any(String), call_uuid: call.sid },
          },
        ],
      },
    ]);
  },
  // started (no change), ringing, the answer request, answered, human (the machine detection), completed
  completedCallbacks: [204, 204, 200, 204, 204, 204],
};

const KITS = [carrierB, carrierC];

function nextNumber(): string {
  serial += 1;
  return `+1415777${String(1000 + serial).padStart(4, '0')}`;
}

function putCarrier(admin: TestUser, carrier: CarrierId, credentials: Record<string, string>) {
  return t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { [carrier]: credentials },
  });
}

/** An organization with `kit`'s credentials (the webhook key of `verifier`), an assistant and a routed number. */
async function organization(kit: Kit, verifier: Verifier = 'carrier'): Promise<Org> {
  const admin = await f.user();
  const account = kit.account();
  const put = await putCarrier(admin, kit.id, {
    ...account,
    ...(verifier === 'none' ? {} : kit.key(verifier)),
  });
  expect(put.statusCode, put.body).toBe(200);
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name: 'Caller' },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
  const number = nextNumber();
  const registered = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: number, provider: kit.id, assistant_id: assistant.json().id },
  });
  expect(registered.statusCode, registered.body).toBe(201);
  return {
    admin,
    account,
    signer: verifier === 'foreign' ? 'foreign' : 'carrier',
    assistantId: assistant.json().id,
    number,
    numberId: registered.json().id,
  };
}

/** Places a call from `org.number` with the outcome given to the simulator, and waits for its callbacks. */
async function place(kit: Kit, org: Org, outcome: CallOutcome): Promise<PlacedCallRef> {
  const to = nextNumber();
  kit.sim.setCallOutcome(to, outcome);
  const response = await t.app.inject({
    method: 'POST',
    url: '/calls/initiate',
    headers: org.admin.headers,
    payload: { from_phone_number: org.number, to_phone_number: to },
  });
  expect(response.statusCode, response.body).toBe(200);
  await kit.sim.settle();
  return { id: response.json().call_id, sid: response.json().call_sid, to };
}

function postWebhook(kit: Kit, path: string, body: string, headers: Record<string, string>) {
  return t.app.inject({
    method: 'POST',
    url: `/webhooks/${kit.id}/${path}`,
    headers: { 'content-type': 'application/json', ...headers },
    payload: body,
  });
}

async function callRow(id: number) {
  const [row] = await t.database.db.select().from(calls).where(eq(calls.id, id));
  return row!;
}

async function eventTypes(callId: number) {
  const rows = await t.database.db
    .select()
    .from(callEvents)
    .where(eq(callEvents.callId, callId))
    .orderBy(callEvents.id);
  return rows.map((row) => row.type);
}

async function ledger(organizationId: number, kind: 'call' | 'sms') {
  return t.database.db
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.organizationId, organizationId), eq(ledgerEntries.kind, kind)));
}

/** The statuses the simulator got back for the callbacks of call `id` (voice and status URLs). */
function callCallbacks(kit: Kit, id: number): Array<number | 'error' | 'dropped'> {
  return kit.sim.callbacks
    .filter((c) => new URL(c.url).searchParams.get('call_id') === String(id))
    .map((c) => c.status);
}

function messageCallbacks(kit: Kit, messageId: string): Array<number | 'error' | 'dropped'> {
  return kit.sim.callbacks
    .filter((c) => new URL(c.url).searchParams.get('message_id') === messageId)
    .map((c) => c.status);
}

async function inboundRows(organizationId: number) {
  return t.database.db
    .select()
    .from(messages)
    .where(and(eq(messages.organizationId, organizationId), eq(messages.direction, 'inbound')));
}

async function getMessage(admin: TestUser, id: string) {
  const response = await t.app.inject({ method: 'GET', url: `/sms/${id}`, headers: admin.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

describe.each(KITS)('$id', (kit) => {
  describe('placing a call', () => {
    it('places the call with its media stream, and completes the record from signed callbacks', async () => {
      const org = await organization(kit);
      const to = nextNumber();
      kit.sim.setCallOutcome(to, { status: 'completed', durationSeconds: 73 });
      const response = await t.app.inject({
        method: 'POST',
        url: '/calls/initiate',
        headers: org.admin.headers,
        payload: { from_phone_number: org.number, to_phone_number: to },
      });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body).toEqual({
        message: 'Call initiated',
        call_sid: expect.any(String),
        call_id: expect.any(Number),
      });
      await kit.sim.settle();

      // The carrier's id of the call is the call_sid, and the carrier was given our numbers and URLs.
      const placed = kit.sim.calls.get(body.call_sid)!;
      expect(placed).toMatchObject({ sid: body.call_sid, from: org.number, to });
      const ref = { id: body.call_id, sid: body.call_sid, to };
      kit.expectDial(placed, org, ref);

      // The audio goes to this call's media stream, with a token for this call only.
      const stream = new URL(kit.streamUrl(placed));
      expect(stream.protocol).toBe('ws:');
      expect(stream.host).toBe(new URL(t.baseUrl!).host);
      expect(stream.pathname).toBe(`/media-stream/${body.call_id}`);
      const token = kit.streamToken?.(placed) ?? stream.searchParams.get('token')!;
      if (kit.streamToken) expect(stream.search).toBe('');
      await expect(tokens.verify(token, body.call_id)).resolves.toEqual({
        callId: body.call_id,
        organizationId: org.admin.organizationId,
      });
      await expect(tokens.verify(token, body.call_id + 1)).resolves.toBeUndefined();

      // Every signed callback was accepted, and the record says what happened.
      expect(callCallbacks(kit, body.call_id)).toEqual(kit.completedCallbacks);
      const row = await callRow(body.call_id);
      expect(row).toMatchObject({
        organizationId: org.admin.organizationId,
        assistantId: org.assistantId,
        phoneNumberId: org.numberId,
        provider: kit.id,
        callSid: body.call_sid,
        direction: 'outbound',
        fromPhoneNumber: org.number,
        toPhoneNumber: to,
        customerPhoneNumber: to,
        status: 'completed',
        duration: 73,
        cost: 0.0608, // 73 s at 0.05 per minute = 0.060833…, to 4 decimals
      });
      expect(row.startedAt).toBeInstanceOf(Date);
      expect(row.endedAt).toBeInstanceOf(Date);
      // The record agrees with itself: it spans the billed duration.
      expect(row.endedAt!.getTime() - row.startedAt!.getTime()).toBe(73_000);
      expect(await eventTypes(body.call_id)).toEqual([
        'call.queued',
        'call.placed',
        'call.ringing',
        'call.in-progress',
        // The answering-machine detection's verdict (a person), between the answer and the end.
        'call.machine_detection',
        'call.completed',
      ]);
      // Charged once, with a ledger entry naming the call.
      const entries = await ledger(org.admin.organizationId, 'call');
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ amount: -0.0608, reference: `call:${body.call_id}` });
    });

    it.each(['busy', 'no-answer', 'failed', 'canceled'] as const)(
      'records a %s call with no duration and no charge',
      async (outcome) => {
        const org = await organization(kit);
        const call = await place(kit, org, { status: outcome });
        const statuses = callCallbacks(kit, call.id);
        expect(statuses.length).toBeGreaterThan(0);
        expect(statuses.every((s) => s === 204)).toBe(true);
        const row = await callRow(call.id);
        expect(row).toMatchObject({ callSid: call.sid, status: outcome, duration: 0, cost: 0 });
        expect(row.endedAt).toBeInstanceOf(Date);
        expect((await eventTypes(call.id)).at(-1)).toBe(`call.${outcome}`);
        expect(await ledger(org.admin.organizationId, 'call')).toHaveLength(0);
      },
    );
  });

  describe('webhook signatures', () => {
    it('refuses every webhook while no key is configured, then only a good signature once it is', async () => {
      const org = await organization(kit, 'none');
      const call = await place(kit, org, { status: 'completed', durationSeconds: 30 });
      // The simulator's signed callbacks (carrier_c: the answer request too) were all refused.
      const refused = callCallbacks(kit, call.id);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((s) => s === 403)).toBe(true);
      const before = await callRow(call.id);
      expect(before).toMatchObject({ callSid: call.sid, status: 'queued', duration: null, cost: null });
      expect(await eventTypes(call.id)).toEqual(['call.queued', 'call.placed']);

      const path = `status?call_id=${call.id}`;
      const body = kit.completed(org, call, 600);
      expectError(await postWebhook(kit, path, body, await kit.sign(body, org)), 403, /signature/);
      expect(await callRow(call.id)).toEqual(before);

      // With the key configured: a missing, tampered or stale signature, or another account's key, still fail.
      const put = await putCarrier(org.admin, kit.id, { ...org.account, ...kit.key('carrier') });
      expect(put.statusCode, put.body).toBe(200);
      const foreign = { ...org, signer: 'foreign' as const };
      const forged: Array<Record<string, string>> = [
        {},
        await kit.tampered(body, org),
        await kit.sign(body, foreign),
        { authorization: 'Bearer not-a-token', 'telnyx-signature-ed25519': 'AAAA', 'telnyx-timestamp': '1' },
      ];
      if (kit.id === 'carrier_b') {
        // Signed ten minutes ago: outside the replay window.
        forged.push(simB.signatureHeaders(body, Date.now() - 10 * 60_000));
      }
      for (const headers of forged) {
        expectError(await postWebhook(kit, path, body, headers), 403, /signature/);
      }
      expect(await callRow(call.id)).toEqual(before);
      expect(await eventTypes(call.id)).toEqual(['call.queued', 'call.placed']);
      expect(await ledger(org.admin.organizationId, 'call')).toHaveLength(0);

      // The carrier's own signature is accepted, and a repeat of it changes nothing more.
      const good = await postWebhook(kit, path, body, await kit.sign(body, org));
      expect(good.statusCode, good.body).toBe(204);
      expect(await callRow(call.id)).toMatchObject({ status: 'completed', duration: 600, cost: 0.5 });
      const again = await postWebhook(kit, path, body, await kit.sign(body, org));
      expect(again.statusCode, again.body).toBe(204);
      expect(await eventTypes(call.id)).toEqual(['call.queued', 'call.placed', 'call.completed']);
      const entries = await ledger(org.admin.organizationId, 'call');
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ amount: -0.5, reference: `call:${call.id}` });
    });

    it('refuses receipts and inbound messages while no key is configured', async () => {
      const org = await organization(kit, 'none');
      const to = nextNumber();
      const sent = await t.app.inject({
        method: 'POST',
        url: '/sms/send',
        headers: org.admin.headers,
        payload: { from_phone_number: org.number, to_phone_number: to, message: 'Hello', queue: false },
      });
      expect(sent.statusCode, sent.body).toBe(200);
      await kit.sim.settle();
      const id = sent.json().message_id as string;
      const receipts = messageCallbacks(kit, id);
      expect(receipts.length).toBeGreaterThan(0);
      expect(receipts.every((s) => s === 403)).toBe(true);
      expect((await getMessage(org.admin, id)).status).toBe('sent');

      const inbound = await kit.sendInbound(org, nextNumber(), 'Hi there');
      expect(inbound.status).toBe(403);
      expect(await inboundRows(org.admin.organizationId)).toHaveLength(0);
    });
  });

  describe('SMS', () => {
    it.each([true, false])('sends with queue %s and follows the receipts to delivered', async (queue) => {
      const org = await organization(kit);
      const to = nextNumber();
      const response = await t.app.inject({
        method: 'POST',
        url: '/sms/send',
        headers: org.admin.headers,
        payload: { from_phone_number: org.number, to_phone_number: to, message: 'See you at 10:00', queue },
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({
        success: true,
        message_id: expect.any(String),
        message: queue ? 'Message queued for sending' : 'Message sent',
        provider: kit.id,
        status: queue ? 'queued' : 'sent',
      });
      const id = response.json().message_id as string;
      const delivered = await waitFor(async () => {
        const view = await getMessage(org.admin, id);
        return view.status === 'delivered' ? view : undefined;
      });
      await kit.sim.settle();
      expect(delivered).toMatchObject({
        direction: 'outbound',
        provider: kit.id,
        from_phone_number: org.number,
        to_phone_number: to,
        message: 'See you at 10:00',
        segments: 1,
        cost: 0.0075,
        error: null,
        attempts: 1,
        assistant_id: org.assistantId,
        phone_number_id: org.numberId,
      });
      expect(delivered.sent_at).not.toBeNull();
      expect(delivered.delivered_at).not.toBeNull();
      const carried = kit.sim.messages.filter((m) => m.to === to);
      expect(carried).toHaveLength(1);
      expect(carried[0]).toMatchObject({ from: org.number, body: 'See you at 10:00' });
      const [row] = await t.database.db.select().from(messages).where(eq(messages.id, id));
      expect(row!.providerMessageId).toBe(carried[0]!.id);
      const receipts = messageCallbacks(kit, id);
      expect(receipts).toHaveLength(2); // sent (carrier_c: submitted), then delivered
      expect(receipts.every((s) => s === 204)).toBe(true);
      const charges = await ledger(org.admin.organizationId, 'sms');
      expect(charges).toHaveLength(1);
      expect(charges[0]).toMatchObject({ amount: -0.0075, reference: `sms:${id}` });
    });

    it('records an undelivered message with the carrier’s reason', async () => {
      const org = await organization(kit);
      const to = nextNumber();
      kit.sim.setMessageOutcome(to, 'undelivered');
      const response = await t.app.inject({
        method: 'POST',
        url: '/sms/send',
        headers: org.admin.headers,
        payload: {
          from_phone_number: org.number,
          to_phone_number: to,
          message: 'Anyone there?',
          queue: false,
        },
      });
      expect(response.statusCode, response.body).toBe(200);
      const id = response.json().message_id as string;
      const view = await waitFor(async () => {
        const current = await getMessage(org.admin, id);
        return current.status === 'undelivered' ? current : undefined;
      });
      expect(view.error).toEqual(expect.any(String));
      expect(view.delivered_at).toBeNull();
    });

    it('stores an inbound message once', async () => {
      const org = await organization(kit);
      const customer = nextNumber();
      const inbound = await kit.sendInbound(org, customer, 'Can I move my appointment?');
      expect(inbound.status).toBe(204);
      const rows = await inboundRows(org.admin.organizationId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        provider: kit.id,
        providerMessageId: inbound.messageId,
        phoneNumberId: org.numberId,
        assistantId: org.assistantId,
        fromPhoneNumber: customer,
        toPhoneNumber: org.number,
        body: 'Can I move my appointment?',
        status: 'received',
      });

      // The carrier delivers the same message again: accepted, not stored twice.
      const { body, messageId } = kit.inbound(org, customer, 'Twice?');
      for (let i = 0; i < 2; i++) {
        const answer = await postWebhook(kit, 'sms', body, await kit.sign(body, org));
        expect(answer.statusCode, answer.body).toBe(204);
      }
      const after = await inboundRows(org.admin.organizationId);
      expect(after).toHaveLength(2);
      expect(after.filter((row) => row.providerMessageId === messageId)).toHaveLength(1);
    });
  });

  describe('other organizations', () => {
    it('another organization’s key never verifies this organization’s webhooks', async () => {
      // Theirs is configured with another account's key; ours with the carrier's.
      const ours = await organization(kit);
      const theirs = await organization(kit, 'foreign');
      const call = await place(kit, ours, { status: 'busy' });
      const before = await callRow(call.id);
      // The final status is already set, so a call still in progress is made by hand.
      await t.database.db
        .update(calls)
        .set({ status: 'in-progress', duration: null, cost: null, endedAt: null })
        .where(eq(calls.id, call.id));
      const live = await callRow(call.id);
      expect(before.status).toBe('busy');

      const path = `status?call_id=${call.id}`;
      const body = kit.completed(ours, call, 120);
      expectError(await postWebhook(kit, path, body, await kit.sign(body, theirs)), 403, /signature/);
      expect(await callRow(call.id)).toEqual(live);

      // An inbound message to our number, signed as their account: refused, not stored.
      const message = kit.inbound(ours, nextNumber(), 'From elsewhere');
      expectError(await postWebhook(kit, 'sms', message.body, await kit.sign(message.body, theirs)), 403);
      expect(await inboundRows(ours.admin.organizationId)).toHaveLength(0);

      // A receipt for our message, signed as their account: refused, the message unchanged.
      const sent = await t.app.inject({
        method: 'POST',
        url: '/sms/send',
        headers: ours.admin.headers,
        payload: {
          from_phone_number: ours.number,
          to_phone_number: nextNumber(),
          message: 'Hi',
          queue: false,
        },
      });
      expect(sent.statusCode, sent.body).toBe(200);
      const messageId = sent.json().message_id as string;
      await waitFor(async () => (await getMessage(ours.admin, messageId)).status === 'delivered');
      const [stored] = await t.database.db.select().from(messages).where(eq(messages.id, messageId));
      await t.database.db
        .update(messages)
        .set({ status: 'sent', deliveredAt: null })
        .where(eq(messages.id, messageId));
      const receipt =
        kit.id === 'carrier_b'
          ? JSON.stringify({
              data: {
                record_type: 'event',
                event_type: 'message.finalized',
                id: randomUUID(),
                occurred_at: iso(Date.now()),
                payload: {
                  record_type: 'message',
                  direction: 'outbound',
                  id: stored!.providerMessageId,
                  from: { phone_number: ours.number },
                  to: [{ phone_number: stored!.toPhoneNumber, status: 'delivered' }],
                  errors: [],
                },
              },
            })
          : JSON.stringify({
              message_uuid: stored!.providerMessageId,
              to: wire(stored!.toPhoneNumber),
              from: wire(ours.number),
              timestamp: iso(Date.now()),
              status: 'delivered',
              channel: 'sms',
            });
      const receiptPath = `sms-status?message_id=${messageId}`;
      expectError(await postWebhook(kit, receiptPath, receipt, await kit.sign(receipt, theirs)), 403);
      expect((await getMessage(ours.admin, messageId)).status).toBe('sent');

      // The same webhooks signed for our account are accepted.
      expect((await postWebhook(kit, path, body, await kit.sign(body, ours))).statusCode).toBe(204);
      expect(await callRow(call.id)).toMatchObject({ status: 'completed', duration: 120, cost: 0.1 });
      expect(
        (await postWebhook(kit, 'sms', message.body, await kit.sign(message.body, ours))).statusCode,
      ).toBe(204);
      expect(await inboundRows(ours.admin.organizationId)).toHaveLength(1);
      expect((await postWebhook(kit, receiptPath, receipt, await kit.sign(receipt, ours))).statusCode).toBe(
        204,
      );
      expect((await getMessage(ours.admin, messageId)).status).toBe('delivered');
      // Nothing reached the other organization.
      expect(await inboundRows(theirs.admin.organizationId)).toHaveLength(0);
    });

    it('an organization without a key is not verified by another organization that has one', async () => {
      // Theirs holds the carrier's key; ours none. The carrier signs ours with the same key.
      await organization(kit, 'carrier');
      const ours = await organization(kit, 'none');
      const call = await place(kit, ours, { status: 'completed', durationSeconds: 30 });
      expect(callCallbacks(kit, call.id).every((s) => s === 403)).toBe(true);
      expect(await callRow(call.id)).toMatchObject({ status: 'queued', duration: null });
      const inbound = await kit.sendInbound(ours, nextNumber(), 'Hello?');
      expect(inbound.status).toBe(403);
      expect(await inboundRows(ours.admin.organizationId)).toHaveLength(0);
    });

    it('a webhook on another carrier’s path matches nothing: refused like a bad signature', async () => {
      const org = await organization(kit);
      const call = await place(kit, org, { status: 'busy' });
      const other = kit.id === 'carrier_b' ? carrierC : carrierB;
      const body = kit.completed(org, call, 60);
      expectError(
        await postWebhook(other, `status?call_id=${call.id}`, body, await kit.sign(body, org)),
        403,
        /^Invalid webhook signature$/,
      );
      expect(await callRow(call.id)).toMatchObject({ status: 'busy', duration: 0 });
    });
  });
});

describe('carrier_c application ids', () => {
  it('a webhook naming another organization’s application is refused, even with the same secret', async () => {
    const ours = await organization(carrierC);
    const theirs = await organization(carrierC);
    const call = await place(carrierC, ours, { status: 'busy' });
    await t.database.db
      .update(calls)
      .set({ status: 'in-progress', duration: null, cost: null, endedAt: null })
      .where(eq(calls.id, call.id));
    const live = await callRow(call.id);
    const body = carrierC.completed(ours, call, 60);
    // Both organizations hold the same signature secret; the token names their application.
    const headers = {
      authorization: `Bearer ${await simC.webhookToken(body, theirs.account.application_id)}`,
    };
    expectError(await postWebhook(carrierC, `status?call_id=${call.id}`, body, headers), 403, /signature/);
    expect(await callRow(call.id)).toEqual(live);
    const message = carrierC.inbound(ours, nextNumber(), 'Whose?');
    const inboundHeaders = {
      authorization: `Bearer ${await simC.webhookToken(message.body, theirs.account.application_id)}`,
    };
    expectError(await postWebhook(carrierC, 'sms', message.body, inboundHeaders), 403);
    expect(await inboundRows(ours.admin.organizationId)).toHaveLength(0);
  });
});

describe('carrier_c inbound calls', () => {
  it('answers a call to our number with the NCCO connecting a new inbound call to its media stream', async () => {
    const org = await organization(carrierC);
    const customer = nextNumber();
    const rang = await simC.sendInboundCall({
      answerUrl: `${t.baseUrl}/webhooks/carrier_c/voice`,
      from: customer,
      to: org.number,
      applicationId: org.account.application_id,
    });
    expect(rang.answer?.status, rang.answer?.body).toBe(200);
    const [row] = await t.database.db
      .select()
      .from(calls)
      .where(and(eq(calls.provider, 'carrier_c'), eq(calls.callSid, rang.sid)));
    expect(row).toMatchObject({
      organizationId: org.admin.organizationId,
      assistantId: org.assistantId,
      phoneNumberId: org.numberId,
      direction: 'inbound',
      status: 'ringing',
      customerPhoneNumber: customer,
    });
    const stream = new URL(carrierC.streamUrl(rang));
    expect(stream.protocol).toBe('ws:');
    expect(stream.pathname).toBe(`/media-stream/${row!.id}`);
    expect(stream.search).toBe('');
    expect(websocketOfNcco(rang.answer!.body)!.headers.call_uuid).toBe(rang.sid);
    await expect(tokens.verify(carrierC.streamToken!(rang), row!.id)).resolves.toEqual({
      callId: row!.id,
      organizationId: org.admin.organizationId,
    });

    // Signed for another application (same secret): refused, and no call recorded.
    const other = await organization(carrierC);
    const body = JSON.stringify({
      to: wire(org.number),
      from: wire(nextNumber()),
      uuid: randomUUID(),
      conversation_uuid: `CON-${randomUUID()}`,
    });
    expectError(
      await postWebhook(carrierC, 'voice', body, await carrierC.sign(body, other)),
      403,
      /signature/,
    );
    const inbound = await t.database.db
      .select()
      .from(calls)
      .where(and(eq(calls.organizationId, org.admin.organizationId), eq(calls.direction, 'inbound')));
    expect(inbound).toHaveLength(1);
  });
});

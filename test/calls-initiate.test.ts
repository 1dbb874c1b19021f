/**
 * POST /calls/initiate and the carrier webhooks that follow, end to end against the carrier_a
 * simulator: the platform listens on loopback, the simulator fetches the call's instructions and
 * posts signed status callbacks, and the call record, its events and the wallet follow. Every error
 * row of the document, signature refusal, and who may call.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls, ledgerEntries } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { MediaTokens } from '../src/lib/media-token.js';
import { carrierASignature } from '../src/providers/carriers/carrier-a.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { expectError } from './support/assertions.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform } from './support/harness.js';

const sim = new CarrierASimulator();
let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true });
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

type Org = CarrierOrganization;

function nextNumber(): string {
  serial += 1;
  return `+1415666${String(1000 + serial).padStart(4, '0')}`;
}

/** An organization with carrier_a credentials (known to the simulator), an assistant and a routed number. */
function organization(options: { credentials?: boolean; number?: boolean } = {}): Promise<Org> {
  return f.carrierOrganization({ sim, ...options });
}

function initiate(headers: Record<string, string>, payload: unknown) {
  return t.app.inject({ method: 'POST', url: '/calls/initiate', headers, payload: payload as object });
}

async function callRow(id: number) {
  const [row] = await t.database.db.select().from(calls).where(eq(calls.id, id));
  return row!;
}

async function callLedger(organizationId: number) {
  return t.database.db
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.organizationId, organizationId), eq(ledgerEntries.kind, 'call')));
}

describe('placing a call', () => {
  it('places the call, connects its audio to the media stream, and completes the record from signed callbacks', async () => {
    const org = await organization();
    const to = nextNumber();
    sim.setCallOutcome(to, { status: 'completed', durationSeconds: 42 });
    const response = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: to,
      welcome_message: 'Hi {{ name | title_case }}, this is {{company}}',
      agenda: 'Confirm the {{ day }} appointment',
      variables: { name: 'ada lovelace', company: 'Acme', day: 'Monday' },
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).toEqual({
      message: 'Call initiated',
      call_sid: expect.stringMatching(/^CA/),
      call_id: expect.any(Number),
    });
    await sim.settle();

    // What the carrier was asked: our numbers, our webhook URLs with the call id.
    const placed = sim.calls.get(body.call_sid)!;
    expect(placed).toMatchObject({ from: org.number, to });
    expect(placed.request).toMatchObject({
      Url: `${t.baseUrl}/webhooks/carrier_a/voice?call_id=${body.call_id}`,
      StatusCallback: `${t.baseUrl}/webhooks/carrier_a/status?call_id=${body.call_id}`,
      // The assistant detects answering machines (voicemail_settings.detection, on by default).
      MachineDetection: 'DetectMessageEnd',
      AsyncAmd: 'true',
      AsyncAmdStatusCallback: `${t.baseUrl}/webhooks/carrier_a/status?call_id=${body.call_id}`,
    });
    // The voice webhook answered markup connecting the audio to a single-call token.
    expect(placed.answer?.status).toBe(200);
    expect(placed.answer?.contentType).toContain('text/xml');
    // The carrier drops a stream URL's query: the token travels as a <Parameter> of the stream.
    const streamUrl = /<Stream url="([^"]+)">/.exec(placed.answer!.body)![1]!;
    const stream = new URL(streamUrl);
    expect(stream.protocol).toBe('ws:');
    expect(stream.pathname).toBe(`/media-stream/${body.call_id}`);
    expect(stream.search).toBe('');
    const tokens = new MediaTokens(TEST_SECRET_KEY);
    const token = /<Parameter name="token" value="([^"]+)"\/>/.exec(placed.answer!.body)![1]!;
    await expect(tokens.verify(token, body.call_id)).resolves.toEqual({
      callId: body.call_id,
      organizationId: org.admin.organizationId,
    });
    await expect(tokens.verify(token, body.call_id + 1)).resolves.toBeUndefined();

    // Every callback was accepted, and the record says what happened.
    expect(
      sim.callbacks.filter((c) => c.url.includes(`call_id=${body.call_id}`)).map((c) => c.status),
    ).toEqual([204, 204, 200, 204, 204, 204]); // initiated, ringing, the voice request, in-progress, the machine detection's verdict (human), completed
    const row = await callRow(body.call_id);
    expect(row).toMatchObject({
      organizationId: org.admin.organizationId,
      assistantId: org.assistantId,
      phoneNumberId: org.numberId,
      provider: 'carrier_a',
      callSid: body.call_sid,
      direction: 'outbound',
      fromPhoneNumber: org.number,
      toPhoneNumber: to,
      customerPhoneNumber: to,
      status: 'completed',
      duration: 42,
      cost: 0.035, // 42 s at 0.05 per minute, per started second
    });
    expect(row.callMeta.answered_by).toBe('human');
    // The record agrees with itself, as the API shows it: it spans the billed duration.
    const record = (
      await t.app.inject({ method: 'GET', url: `/api/v1/calls/${body.call_id}`, headers: org.admin.headers })
    ).json();
    expect(Date.parse(record.ended_at) - Date.parse(record.started_at)).toBe(record.duration * 1000);
    expect(record.duration).toBe(42);
    expect(row.callMeta).toMatchObject({
      welcome_message: 'Hi Ada Lovelace, this is Acme',
      agenda: 'Confirm the Monday appointment',
      template_variables_used: { name: 'ada lovelace', company: 'Acme', day: 'Monday' },
    });
    const events = await t.database.db.select().from(callEvents).where(eq(callEvents.callId, body.call_id));
    // The machine detection's verdict comes beside the call's statuses, in no fixed order with them.
    expect(events.filter((e) => e.type !== 'call.machine_detection').map((e) => e.type)).toEqual([
      'call.queued',
      'call.placed',
      'call.ringing',
      'call.in-progress',
      'call.completed',
    ]);
    expect(events.filter((e) => e.type === 'call.machine_detection').map((e) => e.data)).toEqual([
      { call_sid: body.call_sid, answered_by: 'human' },
    ]);
    // Charged once, with a ledger entry naming the call.
    const ledger = await callLedger(org.admin.organizationId);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: -0.035, reference: `call:${body.call_id}` });
  });

  it.each(['busy', 'no-answer', 'failed'] as const)(
    'records a %s call with no duration and no charge',
    async (outcome) => {
      const org = await organization();
      const to = nextNumber();
      sim.setCallOutcome(to, { status: outcome });
      const response = await initiate(org.admin.headers, {
        from_phone_number: org.number,
        to_phone_number: to,
      });
      expect(response.statusCode, response.body).toBe(200);
      await sim.settle();
      const row = await callRow(response.json().call_id);
      expect(row).toMatchObject({ status: outcome, duration: 0 });
      expect(await callLedger(org.admin.organizationId)).toHaveLength(0);
    },
  );

  it('uses the assistant named in assistant_id over the number’s', async () => {
    const org = await organization();
    const other = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: org.admin.headers,
      payload: { name: 'Other' },
    });
    const response = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
      assistant_id: other.json().id,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect((await callRow(response.json().call_id)).assistantId).toBe(other.json().id);
  });

  it("a number routed to a graph uses the graph's entry assistant", async () => {
    const org = await organization();
    const assistant = async (name: string) => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/assistants',
        headers: org.admin.headers,
        payload: { name },
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().id as number;
    };
    const billing = await assistant('Billing');
    const reception = await assistant('Reception');
    const graph = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistant-graphs',
      headers: org.admin.headers,
      payload: {
        name: 'Front desk',
        // The entry node is not the first one, and its assistant is not the number's former one.
        nodes: [
          { assistant_id: billing, node_type: 'standard' },
          { assistant_id: reception, node_type: 'entry' },
        ],
        edges: [{ from_node_id: 1, to_node_id: 0, condition_type: 'intent', intent_pattern: 'billing' }],
      },
    });
    expect(graph.statusCode, graph.body).toBe(201);
    const routed = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/phone-numbers/${org.numberId}`,
      headers: org.admin.headers,
      payload: { graph_id: graph.json().id },
    });
    expect(routed.statusCode, routed.body).toBe(200);
    expect(routed.json()).toMatchObject({ graph_id: graph.json().id, assistant_id: null });

    const response = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
    });
    expect(response.statusCode, response.body).toBe(200);
    expect((await callRow(response.json().call_id)).assistantId).toBe(reception);
    // assistant_id still wins over the graph.
    const named = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
      assistant_id: billing,
    });
    expect(named.statusCode, named.body).toBe(200);
    expect((await callRow(named.json().call_id)).assistantId).toBe(billing);

    // An inbound call to the number is answered too, by the graph's entry assistant.
    const caller = nextNumber();
    const inbound = await sim.placeInboundCall({
      voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
      accountSid: org.account.account_sid,
      from: caller,
      to: org.number,
    });
    expect(inbound.answer?.status, inbound.answer?.body).toBe(200);
    expect(inbound.answer?.body).toContain('<Connect><Stream url=');
    const [row] = await t.database.db.select().from(calls).where(eq(calls.callSid, inbound.callSid));
    expect(row).toMatchObject({
      direction: 'inbound',
      status: 'ringing',
      assistantId: reception,
      customerPhoneNumber: caller,
      toPhoneNumber: org.number,
    });
  });

  it('accepts an API key with calls read_write', async () => {
    const org = await organization();
    const key = await f.apiKey(org.admin, { permissions: { calls: 'read_write' } });
    const response = await initiate(key.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
    });
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe('error rows of the document', () => {
  it('400: a number that is not E.164, a missing field, an unknown field, a broken template', async () => {
    const org = await organization();
    for (const payload of [
      { from_phone_number: org.number, to_phone_number: '4155550100' },
      { from_phone_number: '12345', to_phone_number: nextNumber() },
      { to_phone_number: nextNumber() },
      { from_phone_number: org.number },
      { from_phone_number: org.number, to_phone_number: nextNumber(), extra: 1 },
      { from_phone_number: org.number, to_phone_number: nextNumber(), assistant_id: 'one' },
      { from_phone_number: org.number, to_phone_number: nextNumber(), variables: [] },
    ]) {
      const response = await initiate(org.admin.headers, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(Array.isArray(response.json().detail)).toBe(true);
    }
    const broken = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
      welcome_message: 'Hi {{ name | shout }}',
    });
    expectError(broken, 400, /welcome_message: Unknown filter "shout"/);
    expect(sim.calls.size).toBeGreaterThan(0); // others placed calls; none of these did:
    const rows = await t.database.db
      .select()
      .from(calls)
      .where(eq(calls.organizationId, org.admin.organizationId));
    expect(rows).toHaveLength(0);
  });

  it('402 when the wallet is not above zero', async () => {
    const org = await organization();
    const { balance } = await t.platform.services.billing.wallet(new Tenant(org.admin.organizationId));
    await t.platform.services.billing.apply({
      organizationId: org.admin.organizationId,
      amount: -balance,
      kind: 'adjustment',
      description: 'empty the wallet',
    });
    expectError(
      await initiate(org.admin.headers, { from_phone_number: org.number, to_phone_number: nextNumber() }),
      402,
      /balance/i,
    );
  });

  it("403 for another organization's number or assistant", async () => {
    const mine = await organization();
    const theirs = await organization();
    expectError(
      await initiate(mine.admin.headers, { from_phone_number: theirs.number, to_phone_number: nextNumber() }),
      403,
    );
    expectError(
      await initiate(mine.admin.headers, {
        from_phone_number: mine.number,
        to_phone_number: nextNumber(),
        assistant_id: theirs.assistantId,
      }),
      403,
    );
  });

  it('404 for a number registered nowhere, an unknown assistant, and a number routed to no assistant', async () => {
    const org = await organization();
    expectError(
      await initiate(org.admin.headers, { from_phone_number: nextNumber(), to_phone_number: nextNumber() }),
      404,
    );
    expectError(
      await initiate(org.admin.headers, {
        from_phone_number: org.number,
        to_phone_number: nextNumber(),
        assistant_id: 2_000_000_000,
      }),
      404,
    );
    await t.app.inject({
      method: 'PUT',
      url: `/api/v1/phone-numbers/${org.numberId}`,
      headers: org.admin.headers,
      payload: { assistant_id: null },
    });
    expectError(
      await initiate(org.admin.headers, { from_phone_number: org.number, to_phone_number: nextNumber() }),
      404,
      /No assistant/,
    );
  });

  it('400 when the number’s carrier has no credentials', async () => {
    const org = await organization({ credentials: false });
    expectError(
      await initiate(org.admin.headers, { from_phone_number: org.number, to_phone_number: nextNumber() }),
      400,
      /carrier_a credentials/,
    );
  });

  it('502 when the carrier refuses; the call record is failed with the reason', async () => {
    const org = await organization();
    sim.failNext(1, 500, { code: 20500, message: 'Internal failure', status: 500 });
    const response = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
    });
    expectError(response, 502, /carrier/);
    const [row] = await t.database.db
      .select()
      .from(calls)
      .where(eq(calls.organizationId, org.admin.organizationId));
    expect(row).toMatchObject({ status: 'failed', callSid: null });
    expect(String(row!.callMeta.error)).toContain('500');
  });

  it('400 for a number on sip_trunk without a trunk; 502 with the reason while the SIP agent is off', async () => {
    const org = await organization({ number: false });
    const number = nextNumber();
    const registered = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: org.admin.headers,
      payload: { phone_number: number, provider: 'sip_trunk', assistant_id: org.assistantId },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    expectError(
      await initiate(org.admin.headers, { from_phone_number: number, to_phone_number: nextNumber() }),
      400,
      /sip_trunk credentials/,
    );
    const trunk = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: org.admin.headers,
      payload: { sip_trunk_config: { sip_domain: 'trunk.example.com' } },
    });
    expect(trunk.statusCode, trunk.body).toBe(200);
    // This platform never started its SIP agent (SIP_ENABLED=false does the same).
    expectError(
      await initiate(org.admin.headers, { from_phone_number: number, to_phone_number: nextNumber() }),
      502,
      /SIP agent is not running/,
    );
    const rows = await t.database.db
      .select()
      .from(calls)
      .where(eq(calls.organizationId, org.admin.organizationId));
    expect(rows.map((row) => row.status)).toEqual(['failed']);
  });
});

describe('who may place calls', () => {
  it('401 without credentials; 403 for an API key without calls or with read only', async () => {
    const org = await organization();
    const payload = { from_phone_number: org.number, to_phone_number: nextNumber() };
    expect((await initiate({}, payload)).statusCode).toBe(401);
    const none = await f.apiKey(org.admin, { permissions: { assistants: 'read_write' } });
    expect((await initiate(none.headers, payload)).statusCode).toBe(403);
    const readOnly = await f.apiKey(org.admin, { permissions: { calls: 'read' } });
    expect((await initiate(readOnly.headers, payload)).statusCode).toBe(403);
  });
});

describe('status webhooks', () => {
  async function placed(outcome: { status: 'completed'; durationSeconds: number } | { status: 'busy' }) {
    const org = await organization();
    const to = nextNumber();
    sim.setCallOutcome(to, outcome);
    const response = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: to,
    });
    await sim.settle();
    return { org, ...(response.json() as { call_id: number; call_sid: string }) };
  }

  function post(url: string, params: Record<string, string>, token: string | undefined) {
    const body = new URLSearchParams(params).toString();
    return t.app.inject({
      method: 'POST',
      url: url.replace(t.baseUrl!, ''),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(token ? { 'x-twilio-signature': carrierASignature(token, url, params) } : {}),
      },
      payload: body,
    });
  }

  it('refuses a bad, missing or other-account signature with 403 and changes nothing', async () => {
    const { org, call_id, call_sid } = await placed({ status: 'busy' });
    const other = await organization();
    const url = `${t.baseUrl}/webhooks/carrier_a/status?call_id=${call_id}`;
    const params = {
      CallSid: call_sid,
      AccountSid: org.account.account_sid,
      CallStatus: 'completed',
      CallDuration: '600',
    };
    for (const token of [undefined, 'not-the-token', other.account.auth_token]) {
      expectError(await post(url, params, token), 403, /signature/);
    }
    expect(await callRow(call_id)).toMatchObject({ status: 'busy', duration: 0 });
  });

  it('a repeated final status is applied once; a late earlier status does not move the call back', async () => {
    const { org, call_id, call_sid } = await placed({ status: 'completed', durationSeconds: 60 });
    const url = `${t.baseUrl}/webhooks/carrier_a/status?call_id=${call_id}`;
    const base = { CallSid: call_sid, AccountSid: org.account.account_sid };
    expect(
      (await post(url, { ...base, CallStatus: 'completed', CallDuration: '60' }, org.account.auth_token))
        .statusCode,
    ).toBe(204);
    expect((await post(url, { ...base, CallStatus: 'ringing' }, org.account.auth_token)).statusCode).toBe(
      204,
    );
    expect(await callRow(call_id)).toMatchObject({ status: 'completed', duration: 60, cost: 0.05 });
    expect(await callLedger(org.admin.organizationId)).toHaveLength(1);
  });

  it('concurrent duplicate final callbacks charge once', async () => {
    const { org, call_id, call_sid } = await placed({ status: 'busy' });
    // A fresh call still in progress: move a new one by hand.
    const second = await initiate(org.admin.headers, {
      from_phone_number: org.number,
      to_phone_number: nextNumber(),
    });
    await sim.settle();
    const id = second.json().call_id as number;
    await t.database.db
      .update(calls)
      .set({ status: 'in-progress', duration: null, cost: null, endedAt: null })
      .where(eq(calls.id, id));
    await t.database.db.delete(ledgerEntries).where(eq(ledgerEntries.reference, `call:${id}`));
    const url = `${t.baseUrl}/webhooks/carrier_a/status?call_id=${id}`;
    const params = {
      CallSid: second.json().call_sid,
      AccountSid: org.account.account_sid,
      CallStatus: 'completed',
      CallDuration: '90',
    };
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => post(url, params, org.account.auth_token)),
    );
    expect(answers.map((a) => a.statusCode)).toEqual([204, 204, 204, 204, 204]);
    const ledger = (await callLedger(org.admin.organizationId)).filter((e) => e.reference === `call:${id}`);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]!.amount).toBe(-0.075);
    expect(call_id).not.toBe(id);
    expect(call_sid).toBeTruthy();
  });

  it('403 for a webhook that matches no call (as for a bad signature); 400/404 for an unknown carrier or kind', async () => {
    const org = await organization();
    const url = `${t.baseUrl}/webhooks/carrier_a/status?call_id=2000000000`;
    expectError(
      await post(url, { CallSid: 'CA1', CallStatus: 'completed' }, org.account.auth_token),
      403,
      /^Invalid webhook signature$/,
    );
    const unknown = await t.app.inject({
      method: 'POST',
      url: '/webhooks/carrier_z/status',
      payload: 'a=b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect([400, 404, 422]).toContain(unknown.statusCode);
  });
});

/**
 * Call events reach the assistant's `webhook_url`: one signed outgoing webhook per status change of
 * a call placed through the carrier_a simulator, in order, carrying the call as it then stood; the
 * event of the final status carries the call's transcript.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
import { carrierASignature } from '../src/providers/carriers/carrier-a.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import {
  type ReceivedWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from './support/webhook-receiver.js';

const sim = new CarrierASimulator();
let receiver: WebhookReceiver;
let receiverUrl: string;
let received: ReceivedWebhook[];
let t: TestPlatform;

beforeAll(async () => {
  await sim.start();
  receiver = await startWebhookReceiver();
  receiverUrl = receiver.url;
  received = receiver.received;
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true });
});
afterAll(async () => {
  await sim.stop();
  await t.close();
  await receiver?.close();
});

/** An organization with carrier_a credentials the simulator knows, and an assistant that has a webhook_url. */
async function organizationWithWebhook(
  account: { account_sid: string; auth_token: string },
  name: string,
  webhookUrl: string,
) {
  const admin = await new Factories(t).user();
  sim.addAccount(account);
  await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { carrier_a: account },
  });
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name, webhook_url: webhookUrl },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
  return { admin, account, assistant };
}

it('sends call.ringing, call.in_progress and call.completed to webhook_url, signed with the organization secret', async () => {
  const { admin, assistant } = await organizationWithWebhook(
    { account_sid: 'AC00000000000000000000000000000e01', auth_token: 'events-token-0123456789' },
    'Eventful',
    receiverUrl,
  );
  await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: '+14155558800', provider: 'carrier_a', assistant_id: assistant.json().id },
  });
  sim.setCallOutcome('+14155558801', { status: 'completed', durationSeconds: 12 });
  const call = await t.app.inject({
    method: 'POST',
    url: '/calls/initiate',
    headers: admin.headers,
    payload: { from_phone_number: '+14155558800', to_phone_number: '+14155558801' },
  });
  expect(call.statusCode, call.body).toBe(200);
  await sim.settle();
  await waitFor(() => (received.length >= 3 ? true : undefined), 15_000);

  const secret = (
    await t.app.inject({ method: 'GET', url: '/api/v1/organization/webhook-secret', headers: admin.headers })
  ).json().webhook_secret as string;
  const events = received.map((r) => {
    const timestamp = String(r.headers['x-switchboard-timestamp']);
    expect(
      verifyWebhookSignature(secret, timestamp, r.body, String(r.headers['x-switchboard-signature'])),
    ).toBe(true);
    expect(
      verifyWebhookSignature(`${secret}x`, timestamp, r.body, String(r.headers['x-switchboard-signature'])),
    ).toBe(false);
    return JSON.parse(r.body) as {
      id: string;
      type: string;
      created_at: string;
      organization_id: number;
      data: Record<string, unknown>;
    };
  });
  // Deliveries are separate jobs and may arrive in any order; each event says when it happened.
  const byTime = [...events].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
  expect(byTime.map((e) => e.type)).toEqual(['call.ringing', 'call.in_progress', 'call.completed']);
  expect(new Set(events.map((e) => e.id)).size).toBe(3);
  expect(byTime[2]).toMatchObject({
    organization_id: admin.organizationId,
    data: {
      call_id: call.json().call_id,
      call_sid: call.json().call_sid,
      status: 'completed',
      direction: 'outbound',
      duration: 12,
      cost: 0.01,
      from_phone_number: '+14155558800',
      to_phone_number: '+14155558801',
      // Nothing was said: the end-of-call event still says so.
      transcript: [],
    },
  });
  // Only the final status carries a transcript.
  expect(byTime[0]!.data).not.toHaveProperty('transcript');
  expect(byTime[1]!.data).not.toHaveProperty('transcript');
});

it('ends an answered call with call.completed carrying the transcript in spoken order', async () => {
  const { admin, account, assistant } = await organizationWithWebhook(
    { account_sid: 'AC00000000000000000000000000000e02', auth_token: 'events-token-transcript-0123' },
    'Talkative',
    `${receiverUrl}/talkative`,
  );
  const number = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: '+14155558810', provider: 'carrier_a', assistant_id: assistant.json().id },
  });
  expect(number.statusCode, number.body).toBe(201);

  // The caller rings our number; the platform answers and the conversation is transcribed.
  const inbound = await sim.placeInboundCall({
    voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
    accountSid: account.account_sid,
    from: '+14155558811',
    to: '+14155558810',
  });
  expect(inbound.answer?.status, inbound.answer?.body).toBe(200);
  const [call] = (await t.app.inject({ method: 'GET', url: '/api/v1/calls', headers: admin.headers })).json();
  const at = Date.parse('2026-11-20T10:00:00.000Z');
  const said = [
    {
      speaker: 'assistant' as const,
      text: 'Hello, Acme here.',
      startedAt: new Date(at),
      endedAt: new Date(at + 1500),
    },
    {
      speaker: 'user' as const,
      text: 'Where is my parcel?',
      startedAt: new Date(at + 2000),
      endedAt: new Date(at + 3200),
    },
    {
      speaker: 'assistant' as const,
      text: 'It arrives today.',
      startedAt: new Date(at + 3900),
      endedAt: new Date(at + 5000),
    },
  ];
  const records = t.platform.services.callRecords;
  await records.appendTranscript(new Tenant(admin.organizationId), call.id, said.slice(0, 2));
  await records.appendTranscript(new Tenant(admin.organizationId), call.id, said.slice(2));

  // The carrier reports the answer, then the end, as its status callbacks do.
  const url = `${t.baseUrl}/webhooks/carrier_a/status?call_id=${call.id}`;
  const statuses: Array<Record<string, string>> = [
    { CallStatus: 'in-progress' },
    { CallStatus: 'completed', CallDuration: '5' },
  ];
  for (const params of statuses) {
    const form = { CallSid: inbound.callSid, AccountSid: account.account_sid, ...params };
    const status = await t.app.inject({
      method: 'POST',
      url: url.replace(t.baseUrl!, ''),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': carrierASignature(account.auth_token, url, form),
      },
      payload: new URLSearchParams(form).toString(),
    });
    expect(status.statusCode, status.body).toBe(204);
  }

  const ours = () =>
    received
      .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
      .filter((event) => event.data.call_id === call.id);
  const completed = await waitFor(() => ours().find((event) => event.type === 'call.completed'), 15_000);
  expect(completed.data).toMatchObject({ status: 'completed', direction: 'inbound', duration: 5 });
  expect(completed.data.transcript).toEqual([
    {
      speaker: 'assistant',
      text: 'Hello, Acme here.',
      started_at: '2026-11-20T10:00:00.000Z',
      ended_at: '2026-11-20T10:00:01.500Z',
    },
    {
      speaker: 'user',
      text: 'Where is my parcel?',
      started_at: '2026-11-20T10:00:02.000Z',
      ended_at: '2026-11-20T10:00:03.200Z',
    },
    {
      speaker: 'assistant',
      text: 'It arrives today.',
      started_at: '2026-11-20T10:00:03.900Z',
      ended_at: '2026-11-20T10:00:05.000Z',
    },
  ]);
  const answered = await waitFor(() => ours().find((event) => event.type === 'call.in_progress'), 15_000);
  expect(answered.data).not.toHaveProperty('transcript');
});

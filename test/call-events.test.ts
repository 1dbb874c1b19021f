/**
 * Call events reach the assistant's `webhook_url`: one signed outgoing webhook per status change of
 * a call placed through the carrier_a simulator, in order, carrying the call as it then stood.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
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

it('sends call.ringing, call.in_progress and call.completed to webhook_url, signed with the organization secret', async () => {
  const f = new Factories(t);
  const admin = await f.user();
  const account = {
    account_sid: 'AC00000000000000000000000000000e01',
    auth_token: 'events-token-0123456789',
  };
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
    payload: { name: 'Eventful', webhook_url: receiverUrl },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
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
    },
  });
});

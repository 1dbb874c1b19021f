/**
 * After-call analysis end to end (issue 19's "done when"): a live call through the simulated phone
 * with an assistant whose `custom_settings` ask for structured data; once the call has ended the
 * `call.analyzed` webhook arrives at a local receiver, signed, with a summary of what the caller said
 * and structured data valid against the assistant's schema — the same that GET …/analysis shows.
 */
import { Ajv } from 'ajv';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
import { waitFor } from './support/harness.js';
import { askToBook, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

let rig: VoiceRig;
let receiver: WebhookReceiver;

beforeAll(async () => {
  rig = await startVoiceRig();
  receiver = await startWebhookReceiver();
}, 60_000);
afterAll(async () => {
  await rig.close();
  await receiver.close();
});

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1 },
    account_number: { type: 'integer', minimum: 0 },
    topic: { type: 'string', enum: ['appointment', 'billing', 'other'] },
    urgent: { type: 'boolean' },
  },
  required: ['name', 'account_number', 'topic'],
  additionalProperties: false,
};
const SAID = 'My name is Ada Lovelace, my account number is 4 4 7 1 and I need an appointment';

it('sends call.analyzed with a schema-valid structured result after a live call', {
  timeout: 90_000,
}, async () => {
  const outcome = await rig.call({
    heard: [SAID],
    assistant: {
      webhook_url: `${receiver.url}/analysis`,
      custom_settings: {
        structured_data_prompt: 'Extract who called, their account number and what the call was about.',
        structured_data_schema: SCHEMA,
      },
    },
    script: askToBook,
  });
  expect(outcome.status).toBe('completed');
  expect(outcome.transcript.map((s) => s.text)).toContain(SAID);

  const delivery = await waitFor(
    () => receiver.received.find((r) => r.headers['x-switchboard-event-type'] === 'call.analyzed'),
    30_000,
  );
  const secret = (
    await rig.t.app.inject({
      method: 'GET',
      url: '/api/v1/organization/webhook-secret',
      headers: outcome.org.admin.headers,
    })
  ).json().webhook_secret as string;
  const timestamp = String(delivery.headers['x-switchboard-timestamp']);
  const signature = String(delivery.headers['x-switchboard-signature']);
  expect(verifyWebhookSignature(secret, timestamp, delivery.body, signature)).toBe(true);

  const event = JSON.parse(delivery.body) as { type: string; data: Record<string, unknown> };
  expect(event.type).toBe('call.analyzed');
  expect(event.data).toMatchObject({
    call_id: outcome.callId,
    structured_data_valid: true,
    structured_data_error: null,
    sentiment: 'neutral',
    provider: 'llm_a',
  });
  expect(event.data.summary).toContain(SAID);
  const ajv = new Ajv({ strict: false, allErrors: true });
  expect(ajv.validate(SCHEMA, event.data.structured_data), ajv.errorsText()).toBe(true);
  expect(event.data.structured_data).toEqual({
    name: 'Ada Lovelace',
    account_number: 4471,
    topic: 'appointment',
  });
  // The analysis asked the organization's own model, with the call's transcript.
  const asked = rig.llm.analysisRequests.filter((r) => r.key === outcome.keys.llm);
  expect(asked.map((r) => r.analysis?.task)).toEqual(['summary', 'structured']);
  expect(asked[0]!.analysis?.callerLines).toEqual([SAID]);

  const shown = await rig.t.app.inject({
    method: 'GET',
    url: `/api/v1/calls/${outcome.callId}/analysis`,
    headers: outcome.org.admin.headers,
  });
  expect(shown.statusCode, shown.body).toBe(200);
  expect(shown.json()).toMatchObject({
    status: 'completed',
    summary: event.data.summary,
    structured_data: event.data.structured_data,
    structured_data_valid: true,
  });
});

/**
 * The outgoing webhook events as the OpenAPI document's top-level `webhooks` (docs/webhooks.md):
 * one entry per event type, its body (the envelope `WebhookService.emit` builds, with the `data` the
 * emitting service passes: `callEventData` for calls, `analysisEventData` for a call's analysis,
 * `messageView` for SMS), the signature headers
 * each attempt carries, and what the receiver's answer means. The payload schemas are checked
 * against real deliveries in test/openapi-contract.test.ts.
 */
import { type TSchema, Type } from 'typebox';
import { CALL_STATUSES, TRANSCRIPT_SPEAKERS } from '../../db/schema/telephony.js';
import { literalUnion, Nullable } from '../../lib/schema.js';
import { AnalysisFields } from '../analysis/views.js';
import { MessageOut } from '../sms/schemas.js';
import { TEST_EVENT_TYPE } from './service.js';

/** `call.<status>` for every status a call can change to (`-` written `_`); a call starts `queued`. */
export const CALL_EVENT_TYPES = CALL_STATUSES.filter((s) => s !== 'queued').map(
  (s) => `call.${s.replace(/-/g, '_')}`,
);
/** A call's after-call analysis completed (domains/analysis). */
export const CALL_ANALYZED_EVENT_TYPE = 'call.analyzed';
/** `sms.received` for inbound messages; `sms.<status>` for the carrier's receipts of outbound ones. */
export const SMS_EVENT_TYPES = [
  'sms.received',
  'sms.sending',
  'sms.sent',
  'sms.delivered',
  'sms.undelivered',
  'sms.failed',
];

export const CallEventData = Type.Object(
  {
    call_id: Type.Integer(),
    call_sid: Nullable(Type.String({ description: "The carrier's call identifier" })),
    assistant_id: Nullable(Type.Integer()),
    direction: literalUnion(['inbound', 'outbound']),
    status: literalUnion(CALL_STATUSES),
    from_phone_number: Type.String(),
    to_phone_number: Type.String(),
    customer_phone_number: Type.String({ description: 'The other party' }),
    duration: Nullable(Type.Integer({ description: 'Seconds, once the call has ended' })),
    cost: Nullable(Type.Number()),
    started_at: Nullable(Type.String({ format: 'date-time' })),
    ended_at: Nullable(Type.String({ format: 'date-time' })),
    transcript: Type.Optional(
      Type.Array(
        Type.Object(
          {
            speaker: literalUnion(TRANSCRIPT_SPEAKERS),
            text: Type.String(),
            started_at: Type.String({ format: 'date-time' }),
            ended_at: Type.String({ format: 'date-time' }),
          },
          { title: 'CallEventTranscriptSegment' },
        ),
        {
          description:
            'Only on the events of a final status (`call.completed`, `call.busy`, `call.no_answer`, ' +
            '`call.failed`, `call.canceled`): everything said on the call, in spoken order (`user` is ' +
            'the caller), as `GET /api/v1/calls/{call_id}/transcript` answers it; `[]` when nothing was.',
        },
      ),
    ),
    recording_url: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'Only on the events of a final status of a recorded call: a signed URL of the recording ' +
          '(audio/wav, byte ranges) that needs no credentials and expires after RECORDING_URL_TTL_HOURS ' +
          '(24 h by default). The file is stored moments after the call ends: a 404 just after the ' +
          'event means try again shortly.',
      }),
    ),
  },
  { title: 'CallEventData', description: 'The call as it is after the change the event reports.' },
);

export const CallAnalyzedData = Type.Object(
  {
    call_id: Type.Integer(),
    call_sid: Nullable(Type.String({ description: "The carrier's call identifier" })),
    assistant_id: Nullable(Type.Integer()),
    campaign_id: Nullable(Type.Integer({ description: 'The campaign that placed the call, if one did' })),
    ...AnalysisFields,
    provider: Nullable(Type.String({ description: 'The language model that did the analysis' })),
    completed_at: Type.String({ format: 'date-time' }),
  },
  {
    title: 'CallAnalyzedData',
    description: 'What GET /api/v1/calls/{call_id}/analysis shows once the analysis has completed.',
  },
);

const envelope = (title: string, types: readonly string[], data: TSchema, description: string) =>
  Type.Object(
    {
      id: Type.String({
        format: 'uuid',
        description: 'The event id, equal to X-Switchboard-Event-Id; the same on every retry and redelivery',
      }),
      type: literalUnion(types),
      created_at: Type.String({ format: 'date-time', description: 'When the event happened' }),
      organization_id: Type.Integer(),
      data,
    },
    { title, description },
  );

export const CallEvent = envelope(
  'CallEvent',
  CALL_EVENT_TYPES,
  CallEventData,
  "A call's status changed; posted to the assistant's `webhook_url`.",
);
export const CallAnalyzedEvent = envelope(
  'CallAnalyzedEvent',
  [CALL_ANALYZED_EVENT_TYPE],
  CallAnalyzedData,
  "A call's after-call analysis completed (a few seconds after the call ended); posted to the assistant's `webhook_url`.",
);
export const SmsEvent = envelope(
  'SmsEvent',
  SMS_EVENT_TYPES,
  MessageOut,
  "A message arrived, or an outbound message's status changed; posted to the assistant's `sms_webhook_url`.",
);
export const TestEvent = envelope(
  'TestEvent',
  [TEST_EVENT_TYPE],
  Type.Object({ message: Type.String() }, { title: 'TestEventData' }),
  'Sent by `POST /api/v1/organization/webhook-deliveries/test` to the URL given.',
);

const header = (name: string, description: string, schema: Record<string, unknown>) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema,
});

const HEADERS = [
  header('X-Switchboard-Event-Id', 'The event id (the body’s `id`).', { type: 'string', format: 'uuid' }),
  header('X-Switchboard-Event-Type', 'The event type (the body’s `type`).', { type: 'string' }),
  header(
    'X-Switchboard-Timestamp',
    'Unix seconds of this attempt; covered by the signature. Refuse values more than about 5 minutes from your clock.',
    { type: 'string', pattern: '^[0-9]+$' },
  ),
  header(
    'X-Switchboard-Signature',
    '`v1=` and the lower-case hex HMAC-SHA256 of `<X-Switchboard-Timestamp>.<raw body>`, keyed by the ' +
      'organization’s webhook secret (`whsec_…`, as UTF-8). Several comma-separated values may be listed; ' +
      'one matching is enough. See docs/webhooks.md for a verifier.',
    { type: 'string', pattern: '^v1=[0-9a-f]{64}(,\\s*v1=[0-9a-f]{64})*$' },
  ),
];

const RESPONSES = {
  '2XX': { description: 'Delivered: any 2xx within 10 seconds. The body is ignored.' },
  '408': { description: 'Retried with back-off (9 attempts in all), as are 429, 5xx and no answer.' },
  '429': { description: 'Retried with back-off.' },
  '5XX': { description: 'Retried with back-off.' },
  default: {
    description: 'Any other status (3xx included: redirects are not followed) fails the delivery at once.',
  },
};

/** The `webhooks` object of the document: its schemas are titled, so they become named components. */
export function webhookEntries(tag: string): Record<string, unknown> {
  const entry = (type: string, schema: TSchema, summary: string) => [
    type,
    {
      post: {
        operationId: `on${type
          .split(/[._]/)
          .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
          .join('')}`,
        tags: [tag],
        summary,
        security: [],
        parameters: HEADERS,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } },
        },
        responses: RESPONSES,
      },
    },
  ];
  return Object.fromEntries([
    ...CALL_EVENT_TYPES.map((type) => entry(type, CallEvent, `The call is now ${type.slice(5)}`)),
    entry(
      CALL_ANALYZED_EVENT_TYPE,
      CallAnalyzedEvent,
      "The call's summary, sentiment and structured data are ready",
    ),
    ...SMS_EVENT_TYPES.map((type) =>
      entry(
        type,
        SmsEvent,
        type === 'sms.received' ? 'A message arrived' : `An outbound message is now ${type.slice(4)}`,
      ),
    ),
    entry(TEST_EVENT_TYPE, TestEvent, 'A test event'),
  ]);
}

/** The SMS domain's request and response bodies; `SmsMessage` is also the `data` of SMS webhook events. */
import { Type } from 'typebox';
import { MESSAGE_STATUSES, type MessageStatus } from '../../db/schema/messaging.js';
import { Nullable } from '../../lib/schema.js';
import { TELEPHONY_PROVIDERS } from '../../providers/ids.js';

/** The carrier of the number a message goes through. */
const Carrier = Type.Unsafe<string>({ type: 'string', enum: [...TELEPHONY_PROVIDERS] });

export const SendBody = Type.Object(
  {
    from_phone_number: Type.String({
      minLength: 1,
      maxLength: 32,
      description: 'E.164; routed to an assistant',
    }),
    to_phone_number: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
    message: Type.String({ minLength: 1, maxLength: 1600 }),
    media_urls: Type.Optional(
      Type.Array(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }), {
        maxItems: 10,
        description: 'MMS media',
      }),
    ),
    queue: Type.Optional(
      Type.Boolean({ default: true, description: 'true: queued under the number’s rate; false: sent now' }),
    ),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  {
    additionalProperties: false,
    title: 'SmsSend',
    examples: [
      {
        from_phone_number: '+14155550100',
        to_phone_number: '+14155550123',
        message: 'Your order 1234 has shipped.',
        media_urls: ['https://cdn.example.com/label.png'],
      },
    ],
  },
);

export const SendAnswer = Type.Object(
  {
    success: Type.Boolean(),
    message_id: Type.String(),
    message: Type.String(),
    provider: Carrier,
    status: Type.Union([Type.Literal('queued'), Type.Literal('sent'), Type.Literal('failed')]),
  },
  {
    title: 'SmsSendResult',
    examples: [
      {
        success: true,
        message_id: '6f1c2a4e-0b7d-4a51-9c3e-2d8f5b6a7c10',
        message: 'Message queued for sending',
        provider: 'carrier_a',
        status: 'queued',
      },
    ],
  },
);

export const MessageOut = Type.Object(
  {
    message_id: Type.String(),
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
    status: Type.Unsafe<MessageStatus>({ type: 'string', enum: [...MESSAGE_STATUSES] }),
    provider: Carrier,
    from_phone_number: Type.String(),
    to_phone_number: Type.String(),
    message: Type.String(),
    media_urls: Type.Array(Type.String()),
    segments: Type.Integer(),
    cost: Nullable(Type.Number()),
    error: Nullable(Type.String()),
    attempts: Type.Integer(),
    assistant_id: Nullable(Type.Integer()),
    phone_number_id: Nullable(Type.Integer()),
    sent_at: Nullable(Type.String({ format: 'date-time' })),
    delivered_at: Nullable(Type.String({ format: 'date-time' })),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'SmsMessage' },
);

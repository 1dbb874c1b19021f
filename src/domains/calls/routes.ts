/** POST /calls/initiate: place an outbound call from one of the organization's numbers. */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { OpenObject } from '../../lib/schema.js';
import type { CallService } from './service.js';

const InitiateBody = Type.Object(
  {
    from_phone_number: Type.String({
      minLength: 1,
      maxLength: 32,
      description: 'E.164; a number of your organization routed to an assistant (or given assistant_id)',
    }),
    to_phone_number: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
    assistant_id: Type.Optional(Id),
    welcome_message: Type.Optional(Type.String({ maxLength: 2000, description: 'Supports {{variable}}' })),
    agenda: Type.Optional(Type.String({ maxLength: 10_000, description: 'Supports {{variable}}' })),
    variables: Type.Optional(OpenObject),
  },
  {
    additionalProperties: false,
    title: 'CallInitiate',
    examples: [
      {
        from_phone_number: '+14155550100',
        to_phone_number: '+14155550123',
        welcome_message: 'Hi {{ name | title_case }}, this is {{ company }}.',
        agenda: 'Confirm the appointment on {{ day }}',
        variables: { name: 'ada lovelace', company: 'Acme', day: 'Monday' },
      },
    ],
  },
);

const InitiateAnswer = Type.Object(
  {
    message: Type.String(),
    call_sid: Type.String({ description: "The carrier's call identifier" }),
    call_id: Type.Integer({ description: 'The call record' }),
  },
  {
    title: 'CallInitiated',
    examples: [{ message: 'Call initiated', call_sid: 'CA0123456789abcdef0123456789abcdef', call_id: 17 }],
  },
);

export function callRoutes(app: App, calls: CallService): void {
  app.post(
    '/calls/initiate',
    {
      config: { access: access.area('calls', 'read_write'), validationStatus: 400 },
      schema: {
        tags: ['calls'],
        operationId: 'initiateCall',
        summary: 'Place an outbound call through the carrier of from_phone_number',
        description:
          'Assistant: assistant_id, else the one routed to the number. 400 invalid body or number, 402 no balance, ' +
          "403 another organization's number or assistant, 404 unknown number or no assistant, 502 the carrier refused.",
        body: InitiateBody,
        response: {
          200: InitiateAnswer,
          ...errors({
            400: 'Invalid body or number, no carrier credentials, or a SIP trunk number',
            402: 'Insufficient balance: add credits to place calls',
            403: 'Not allowed, or the number or assistant belongs to another organization',
            404: 'Number not registered, assistant not found, or no assistant for the number',
            502: 'The carrier refused or could not be reached',
          }),
        },
      },
    },
    async (request) => calls.initiate(principalOf(request), request.body),
  );
}

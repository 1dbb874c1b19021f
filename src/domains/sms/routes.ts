/** /sms: send (queued under the number's rate, or now), look up, cancel, and the queue's state. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors, noContent } from '../../http/responses.js';
import type { App } from '../../http/types.js';
import { Nullable } from '../../lib/schema.js';
import { MessageOut, SendAnswer, SendBody } from './schemas.js';
import type { SmsService } from './service.js';
import { messageView } from './views.js';

const tags = ['sms'];

const MessageParams = Type.Object({ message_id: Type.String({ format: 'uuid' }) });

export function smsRoutes(app: App, sms: SmsService): void {
  app.post(
    '/sms/send',
    {
      config: { access: access.area('sms', 'read_write'), validationStatus: 400 },
      schema: {
        operationId: 'sendSms',
        tags,
        summary: 'Send an SMS or MMS from a number routed to an assistant',
        description:
          '400 invalid body or numbers; 403 SMS compliance enforced and the number not approved; 404 no assistant for ' +
          'from_phone_number; 422 an idempotency key reused with another body; 500 the carrier failed (queue: false). ' +
          'Header Idempotency-Key wins over the body field; keys are kept 24 hours per organization.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ maxLength: 256 })) }),
        body: SendBody,
        response: {
          200: SendAnswer,
          ...errors({
            400: 'Invalid body or numbers, a SIP trunk number, or no carrier credentials',
            403: 'Not allowed, or SMS compliance is enforced and the number is not approved',
            404: 'No assistant for from_phone_number',
            409: 'A request with this idempotency key is still being processed',
            422: 'The idempotency key was used with a different body',
            // Kept under the idempotency key as it was answered: a repeat gets the same 500.
            500: 'The carrier did not send the message (queue: false); detail gives its words',
          }),
        },
      },
    },
    async (request, reply) => {
      const answer = await sms.send(principalOf(request), request.body, request.headers['idempotency-key']);
      // 200, or the 500 of a failed immediate send (kept under the idempotency key as it was answered).
      return reply.code(answer.status as 200).send(answer.body as never);
    },
  );

  app.get(
    '/sms/queue/stats',
    {
      config: { access: access.area('sms') },
      schema: {
        operationId: 'getSmsQueueStats',
        tags,
        summary: 'Outbound messages per status, and the queue of each sending number',
        response: {
          200: Type.Object({
            total: Type.Integer(),
            by_status: Type.Record(Type.String(), Type.Integer()),
            queued: Type.Integer(),
            numbers: Type.Array(
              Type.Object({
                phone_number_id: Nullable(Type.Integer()),
                phone_number: Type.String(),
                queued: Type.Integer(),
                oldest_queued_at: Nullable(Type.String({ format: 'date-time' })),
              }),
            ),
          }),
        },
      },
    },
    async (request) => {
      const { byStatus, byNumber } = await sms.queueStats(principalOf(request));
      const counts = Object.fromEntries(byStatus.map((row) => [row.status, Number(row.n)]));
      return {
        total: Object.values(counts).reduce((a, b) => a + b, 0),
        by_status: counts,
        queued: counts.queued ?? 0,
        numbers: byNumber.map((row) => ({
          phone_number_id: row.phoneNumberId,
          phone_number: row.phoneNumber,
          queued: Number(row.queued),
          oldest_queued_at: row.oldest ? new Date(row.oldest).toISOString() : null,
        })),
      };
    },
  );

  app.get(
    '/sms/:message_id',
    {
      config: { access: access.area('sms') },
      schema: {
        operationId: 'getSms',
        tags,
        summary: 'A message and its status',
        params: MessageParams,
        response: { 200: MessageOut, ...errors({ 404: 'Message not found in your organization' }) },
      },
    },
    async (request) => messageView(await sms.get(principalOf(request), request.params.message_id)),
  );

  app.delete(
    '/sms/:message_id',
    {
      config: { access: access.area('sms', 'read_write') },
      schema: {
        operationId: 'cancelSms',
        tags,
        summary:
          'Cancel a message still queued (it stays, with status cancelled); 409 once it is sending or sent',
        params: MessageParams,
        response: {
          204: Type.Null(),
          ...errors({
            404: 'Message not found in your organization',
            409: 'Only a queued message can be cancelled',
          }),
        },
      },
    },
    async (request, reply) => {
      await sms.cancel(principalOf(request), request.params.message_id);
      return noContent(reply);
    },
  );
}

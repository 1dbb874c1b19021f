/**
 * Root webhook paths the carriers call: `/webhooks/{carrier}/voice` (what to do with a call that
 * connected, outbound or inbound), `/status` (call status changes), `/sms` (inbound messages) and
 * `/sms-status` (delivery receipts). Public — carriers hold no
 * credentials of ours — and verified by signature in the service. The routes live in their own
 * scope whose body parsers keep the raw text, because signatures are computed over it.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { errors } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { literalUnion, OpenObject } from '../../lib/schema.js';
import { CARRIERS } from '../../providers/ids.js';
import type { CarrierWebhookService } from './service.js';

const tags = ['carrier-webhooks'];

const Params = Type.Object({
  carrier: literalUnion(CARRIERS),
  kind: Type.Union([
    Type.Literal('voice'),
    Type.Literal('status'),
    Type.Literal('sms'),
    Type.Literal('sms-status'),
  ]),
});

export async function carrierWebhookRoutes(
  app: App,
  options: { webhooks: CarrierWebhookService; publicUrl: string },
): Promise<void> {
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    scope.post(
      '/webhooks/:carrier/:kind',
      {
        config: { access: access.public },
        schema: {
          operationId: 'receiveCarrierWebhook',
          tags,
          summary:
            'Called by carriers (signed): call instructions (voice), call status (status), inbound SMS (sms), delivery receipts (sms-status)',
          params: Params,
          querystring: Type.Object({
            call_id: Type.Optional(Id),
            message_id: Type.Optional(Type.String({ format: 'uuid' })),
          }),
          response: {
            // The markup is the carrier's own format, sent as the adapter wrote it.
            200: {
              description: 'voice: the call instructions, in the format of the carrier',
              content: {
                'text/xml': { schema: Type.String({ description: 'carrier_a: XML call instructions' }) },
                'application/json': {
                  schema: Type.Unsafe<string>(
                    Type.Array(OpenObject, { description: 'carrier_c: the list of call control actions' }),
                  ),
                },
              },
            },
            204: Type.Null({ description: 'status, sms, sms-status: the event was taken' }),
            ...errors({
              403: 'The signature does not verify, the webhook matches nothing of ours, or it reports another call or message than its URL names',
              404: 'voice: no call to connect (the number is routed to no assistant), or the carrier asks for no instructions',
              415: 'A malformed Content-Type header',
            }),
          },
        },
      },
      async (request, reply) => {
        const answer = await options.webhooks.handle(
          request.params.carrier,
          request.params.kind,
          {
            // The URL the carrier called, as it signed it: our public base plus path and query.
            url: `${options.publicUrl}${request.url}`,
            method: request.method,
            headers: request.headers,
            rawBody: typeof request.body === 'string' ? request.body : '',
          },
          request.query,
        );
        // 200 with the markup, or 204: the service's answer is the carrier's format, already text.
        reply.code(answer.status as 200 | 204);
        if (answer.contentType) reply.type(answer.contentType);
        return reply.send(answer.body === '' ? null : answer.body);
      },
    );
  });
}

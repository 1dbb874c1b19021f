/**
 * /api/v1/organization/webhook-secret and /api/v1/organization/webhook-deliveries: the secret that
 * signs the organization's outgoing webhooks, the log of every delivery, redelivery and a test event.
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../http/pagination.js';
import { errors } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import type { WebhookService } from './service.js';
import { DeliveryOut, deliveryView, Status } from './views.js';

const tags = ['webhooks'];
const SecretOut = Type.Object(
  {
    webhook_secret: Type.String({
      description: '`whsec_…`: the HMAC-SHA256 key of X-Switchboard-Signature (docs/webhooks.md)',
    }),
  },
  { title: 'WebhookSecret' },
);

const TestBody = Type.Object(
  { url: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }) },
  {
    additionalProperties: false,
    title: 'WebhookTest',
    examples: [{ url: 'https://example.com/hooks/calls' }],
  },
);

export function webhookRoutes(app: App, webhooks: WebhookService): void {
  const signedInAdmin = { via: ['jwt', 'cookie'], role: 'admin' } as const;
  const adminWrite = { role: 'admin', area: 'organization' } as const;

  app.get(
    '/api/v1/organization/webhook-secret',
    {
      config: { access: signedInAdmin },
      schema: {
        operationId: 'getWebhookSecret',
        tags,
        summary: 'The secret that signs outgoing webhooks (made on first use)',
        response: { 200: SecretOut },
      },
    },
    async (request) => ({ webhook_secret: await webhooks.secret(principalOf(request).tenant) }),
  );

  app.post(
    '/api/v1/organization/webhook-secret/rotate',
    {
      config: { access: signedInAdmin },
      schema: {
        operationId: 'rotateWebhookSecret',
        tags,
        summary: 'Replace the webhook secret; the old one stops signing at once',
        response: { 200: SecretOut },
      },
    },
    async (request) => ({ webhook_secret: await webhooks.rotateSecret(principalOf(request).tenant) }),
  );

  app.get(
    '/api/v1/organization/webhook-deliveries',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: 'Every webhook delivery of the organization, newest first',
        querystring: Type.Object({
          ...PageQuery,
          status: Type.Optional(Status),
          event_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        }),
        response: { 200: Type.Object({ items: Type.Array(DeliveryOut), pagination: PaginationOut }) },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await webhooks.list(principalOf(request).tenant, page, {
        status: request.query.status,
        eventType: request.query.event_type,
      });
      return { items: rows.map(deliveryView), pagination: paginationView(page, total) };
    },
  );

  app.post(
    '/api/v1/organization/webhook-deliveries/test',
    {
      config: { access: adminWrite },
      schema: {
        operationId: 'sendTestWebhook',
        tags,
        summary: 'Send a signed `webhook.test` event to a URL',
        body: TestBody,
        response: { 200: DeliveryOut },
      },
    },
    async (request) => deliveryView(await webhooks.sendTest(principalOf(request).tenant, request.body.url)),
  );

  app.post(
    '/api/v1/organization/webhook-deliveries/:delivery_id/redeliver',
    {
      config: { access: adminWrite },
      schema: {
        operationId: 'redeliverWebhook',
        tags,
        summary: 'Send a delivered or failed event again (same event id, fresh signature)',
        params: IdParam('delivery_id'),
        response: {
          200: DeliveryOut,
          ...errors({
            404: 'Webhook delivery not found in your organization',
            409: 'The delivery is still pending (being sent or waiting for a retry)',
          }),
        },
      },
    },
    async (request) =>
      deliveryView(await webhooks.redeliver(principalOf(request).tenant, request.params.delivery_id)),
  );
}

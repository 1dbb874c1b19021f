/**
 * /api/v1/campaigns: create, list (filters, pages, metrics), get, update and delete, and the
 * template preview. Invalid bodies answer 422 (the spec's 400 rows are the schedule's only).
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { Nullable, OpenObject } from '../../lib/schema.js';
import { type CampaignService, type CampaignWithMetrics, DEFAULTS } from './service.js';
import { CampaignOut, CampaignStatus, CampaignType, campaignView } from './views.js';

const tags = ['campaigns'];
export const MAX_TEMPLATE_LENGTH = 10_000;

const Template = Nullable(
  Type.String({
    maxLength: MAX_TEMPLATE_LENGTH,
    description: 'Jinja2-style: {{name}}, {{ name | title_case }}, {{ plan | default("basic") }}',
  }),
);

const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Nullable(Type.String({ maxLength: 2000 })),
  campaign_type: CampaignType,
  assistant_id: Id,
  welcome_message_template: Template,
  agenda_template: Template,
  end_call_message_template: Template,
  sms_message_template: Template,
  fallback_values: Type.Object(
    {},
    {
      additionalProperties: Type.Union([
        Type.String({ maxLength: 1000 }),
        Type.Number(),
        Type.Boolean(),
        Type.Null(),
      ]),
      maxProperties: 100,
      description: 'Variable name → the value used when a contact has none',
    },
  ),
  variable_mappings: Type.Object(
    {},
    {
      additionalProperties: Type.String({ maxLength: 200 }),
      maxProperties: 100,
      description:
        'Template variable → contact field: name, company, email, phone_number or custom_fields.<key>',
    },
  ),
  max_attempts: Type.Integer({
    minimum: 1,
    maximum: 10,
    description: `Attempts per contact (default ${DEFAULTS.maxAttempts})`,
  }),
  retry_delay_minutes: Type.Integer({
    minimum: 0,
    maximum: 10_080,
    description: `Minutes between attempts at one contact (default ${DEFAULTS.retryDelayMinutes})`,
  }),
  concurrency_limit: Type.Integer({
    minimum: 1,
    maximum: 100,
    description: `Attempts of the campaign in flight at once (default ${DEFAULTS.concurrencyLimit})`,
  }),
};

const CampaignCreate = Type.Object(
  {
    name: Fields.name,
    description: Type.Optional(Fields.description),
    campaign_type: Fields.campaign_type,
    assistant_id: Fields.assistant_id,
    welcome_message_template: Type.Optional(Fields.welcome_message_template),
    agenda_template: Type.Optional(Fields.agenda_template),
    end_call_message_template: Type.Optional(Fields.end_call_message_template),
    sms_message_template: Type.Optional(Fields.sms_message_template),
    fallback_values: Type.Optional(Fields.fallback_values),
    variable_mappings: Type.Optional(Fields.variable_mappings),
    max_attempts: Type.Optional(Fields.max_attempts),
    retry_delay_minutes: Type.Optional(Fields.retry_delay_minutes),
    concurrency_limit: Type.Optional(Fields.concurrency_limit),
  },
  {
    additionalProperties: false,
    title: 'CampaignCreate',
    examples: [
      {
        name: 'Spring renewals',
        campaign_type: 'call',
        assistant_id: 7,
        welcome_message_template: 'Hi {{ name | title_case }}, this is {{assistant_name}} from {{company}}.',
        agenda_template: 'Your {{ plan | default("current") }} plan renews on {{renewal_date}}.',
        fallback_values: { company: 'Acme' },
        variable_mappings: { plan: 'custom_fields.plan' },
        max_attempts: 2,
        retry_delay_minutes: 30,
      },
    ],
  },
);

const CampaignUpdate = Type.Partial(CampaignCreate, {
  additionalProperties: false,
  minProperties: 1,
  title: 'CampaignUpdate',
  examples: [{ max_attempts: 3, retry_delay_minutes: 60 }],
});

const PreviewBody = Type.Object(
  {
    template: Type.String({ maxLength: MAX_TEMPLATE_LENGTH }),
    variables: Type.Optional(OpenObject),
    fallback_values: Type.Optional(OpenObject),
  },
  { additionalProperties: false },
);

const view = ({ row, metrics }: CampaignWithMetrics) => campaignView(row, metrics);

export function campaignRoutes(app: App, campaigns: CampaignService): void {
  const config = { access: access.area('campaigns') };
  const params = IdParam('campaign_id');

  app.post(
    '/api/v1/campaigns',
    {
      config,
      schema: {
        operationId: 'createCampaign',
        tags,
        summary: 'Create a campaign (status draft); every template is checked',
        description:
          '422: invalid body, a template that does not parse (the message names the position), an unknown ' +
          'contact field in variable_mappings, or an assistant not in your organization.',
        body: CampaignCreate,
        response: { 201: CampaignOut },
      },
    },
    async (request, reply) =>
      reply.code(201).send(view(await campaigns.create(principalOf(request), request.body))),
  );

  app.get(
    '/api/v1/campaigns',
    {
      config,
      schema: {
        operationId: 'listCampaigns',
        tags,
        summary: "The organization's campaigns, newest first, with their metrics",
        querystring: Type.Object({
          status: Type.Optional(CampaignStatus),
          campaign_type: Type.Optional(CampaignType),
          assistant_id: Type.Optional(Id),
          search: Type.Optional(
            Type.String({ minLength: 1, maxLength: 200, description: 'Part of the name or description' }),
          ),
          ...PageQuery,
        }),
        response: {
          200: Type.Object({ campaigns: Type.Array(CampaignOut), pagination: PaginationOut }),
        },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { campaigns: found, total } = await campaigns.list(principalOf(request), page, {
        status: request.query.status,
        campaignType: request.query.campaign_type,
        assistantId: request.query.assistant_id,
        search: request.query.search,
      });
      return { campaigns: found.map(view), pagination: paginationView(page, total) };
    },
  );

  app.post(
    '/api/v1/campaigns/template-preview',
    {
      // Renders text and stores nothing: reading campaigns is enough.
      config: { access: access.area('campaigns', 'read') },
      schema: {
        operationId: 'previewCampaignTemplate',
        tags,
        summary: 'Render a template with variables and fallback values, as a campaign would',
        description: '422 when the template does not parse; the message names the position.',
        body: PreviewBody,
        response: { 200: Type.Object({ rendered: Type.String() }) },
      },
    },
    async (request) => campaigns.preview(request.body),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id',
    {
      config,
      schema: {
        operationId: 'getCampaign',
        tags,
        summary: 'One campaign with its metrics',
        params,
        response: { 200: CampaignOut, ...errors({ 404: 'Campaign not found in your organization' }) },
      },
    },
    async (request) => view(await campaigns.get(principalOf(request), request.params.campaign_id)),
  );

  app.put(
    '/api/v1/campaigns/:campaign_id',
    {
      config,
      schema: {
        operationId: 'updateCampaign',
        tags,
        summary: 'Change the fields named; 409 while the campaign is running',
        params,
        body: CampaignUpdate,
        response: {
          200: CampaignOut,
          ...errors({
            404: 'Campaign not found in your organization',
            409: 'The campaign is running (or another request changed it)',
          }),
        },
      },
    },
    async (request) =>
      view(await campaigns.update(principalOf(request), request.params.campaign_id, request.body)),
  );

  app.delete(
    '/api/v1/campaigns/:campaign_id',
    {
      config,
      schema: {
        operationId: 'deleteCampaign',
        tags,
        summary: 'Delete a campaign with its schedule, contacts and executions; 409 while it is running',
        params,
        response: {
          204: Type.Null(),
          ...errors({
            404: 'Campaign not found in your organization',
            409: 'The campaign is running (or another request changed it)',
          }),
        },
      },
    },
    async (request, reply) => {
      await campaigns.remove(principalOf(request), request.params.campaign_id);
      return noContent(reply);
    },
  );
}

/** /api/v1/phone-numbers: the organization's numbers and what each one is routed to. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { literalUnion, Nullable } from '../../lib/schema.js';
import { TELEPHONY_PROVIDERS } from '../../providers/ids.js';
import type { PhoneNumberService } from './service.js';
import { PhoneNumberOut, phoneNumberView } from './views.js';

const tags = ['phone-numbers'];
const Provider = literalUnion(TELEPHONY_PROVIDERS);

const Fields = {
  phone_number: Type.String({
    minLength: 2,
    maxLength: 32,
    description: 'E.164 (+14155552671); spaces, dots, dashes and brackets are removed',
  }),
  provider: Provider,
  friendly_name: Nullable(Type.String({ maxLength: 200 })),
  assistant_id: Nullable(Id),
  graph_id: Nullable(Id),
  sms_rate_per_second: Nullable(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: 1000,
      description: 'Messages per second; null: 1 for long codes, 3 for toll-free numbers',
    }),
  ),
};

const PhoneNumberCreate = Type.Object(
  {
    phone_number: Fields.phone_number,
    provider: Fields.provider,
    friendly_name: Type.Optional(Fields.friendly_name),
    assistant_id: Type.Optional(Fields.assistant_id),
    graph_id: Type.Optional(Fields.graph_id),
    sms_rate_per_second: Type.Optional(Fields.sms_rate_per_second),
  },
  {
    additionalProperties: false,
    title: 'PhoneNumberCreate',
    examples: [
      {
        phone_number: '+1 (415) 555-2671',
        provider: 'carrier_a',
        friendly_name: 'Support line',
        assistant_id: 7,
      },
    ],
  },
);

const PhoneNumberUpdate = Type.Partial(PhoneNumberCreate, {
  additionalProperties: false,
  minProperties: 1,
  title: 'PhoneNumberUpdate',
  examples: [{ friendly_name: 'Main line', assistant_id: 8 }],
});

export function phoneNumberRoutes(app: App, phoneNumbers: PhoneNumberService): void {
  const config = { access: access.area('phone_numbers') };

  app.post(
    '/api/v1/phone-numbers',
    {
      config,
      schema: {
        operationId: 'createPhoneNumber',
        tags,
        summary:
          'Register a number of one of your carrier accounts, optionally routed to an assistant or graph',
        body: PhoneNumberCreate,
        response: { 201: PhoneNumberOut, ...errors({ 409: 'The phone number is already registered' }) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(phoneNumberView(await phoneNumbers.create(principalOf(request), request.body))),
  );

  app.get(
    '/api/v1/phone-numbers',
    {
      config,
      schema: {
        operationId: 'listPhoneNumbers',
        tags,
        summary: "The organization's phone numbers (total in X-Total-Count)",
        querystring: Type.Object({
          ...SkipLimitQuery,
          assistant_id: Type.Optional(Id),
          provider: Type.Optional(Provider),
        }),
        response: { 200: Type.Array(PhoneNumberOut) },
      },
    },
    async (request, reply) => {
      const { rows, total } = await phoneNumbers.list(principalOf(request), {
        ...skipLimitOf(request.query),
        assistantId: request.query.assistant_id,
        provider: request.query.provider,
      });
      reply.header('X-Total-Count', total);
      return rows.map(phoneNumberView);
    },
  );

  app.get(
    '/api/v1/phone-numbers/:phone_number_id',
    {
      config,
      schema: {
        operationId: 'getPhoneNumber',
        tags,
        summary: 'One phone number',
        params: IdParam('phone_number_id'),
        response: { 200: PhoneNumberOut, ...errors({ 404: 'Phone number not found in your organization' }) },
      },
    },
    async (request) =>
      phoneNumberView(await phoneNumbers.get(principalOf(request), request.params.phone_number_id)),
  );

  app.put(
    '/api/v1/phone-numbers/:phone_number_id',
    {
      config,
      schema: {
        operationId: 'updatePhoneNumber',
        tags,
        summary:
          'Change the fields named; routing to an assistant ends routing to a graph and the other way round',
        params: IdParam('phone_number_id'),
        body: PhoneNumberUpdate,
        response: {
          200: PhoneNumberOut,
          ...errors({
            404: 'Phone number not found in your organization',
            409: 'The phone number is already registered',
          }),
        },
      },
    },
    async (request) =>
      phoneNumberView(
        await phoneNumbers.update(principalOf(request), request.params.phone_number_id, request.body),
      ),
  );

  app.delete(
    '/api/v1/phone-numbers/:phone_number_id',
    {
      config,
      schema: {
        operationId: 'deletePhoneNumber',
        tags,
        summary: 'Remove a phone number',
        params: IdParam('phone_number_id'),
        response: { 204: Type.Null(), ...errors({ 404: 'Phone number not found in your organization' }) },
      },
    },
    async (request, reply) => {
      await phoneNumbers.remove(principalOf(request), request.params.phone_number_id);
      return noContent(reply);
    },
  );
}

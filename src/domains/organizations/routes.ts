/** /api/v1/organization: the caller's organization, its settings, credentials and readiness. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import type { App } from '../../http/types.js';
import { literalUnion, Nullable } from '../../lib/schema.js';
import { CARRIERS, KEYED_VENDORS, STT_PROVIDERS, TTS_PROVIDERS } from '../../providers/ids.js';
import { invalidField } from '../errors.js';
import type { OrganizationService } from './service.js';
import { ConcurrencyOut, concurrencyView, Limit, OrganizationOut, organizationView } from './views.js';

const tags = ['organization'];
const Secret = (description: string) => Type.String({ minLength: 1, maxLength: 4096, description });

const SettingsIn = Type.Object(
  {
    default_timezone: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
    hipaa_enabled: Type.Optional(Nullable(Type.Boolean())),
    baa_signed: Type.Optional(Nullable(Type.Boolean())),
    enforce_sms_compliance: Type.Optional(Nullable(Type.Boolean())),
  },
  {
    additionalProperties: true,
    description: 'Merged into the stored settings: named keys change, a null value removes the key.',
  },
);

const CarrierIn = {
  carrier_a: Type.Object(
    { account_sid: Type.String({ minLength: 1, maxLength: 128 }), auth_token: Secret('Auth token') },
    { additionalProperties: false },
  ),
  carrier_b: Type.Object(
    {
      api_key: Secret('API key'),
      connection_id: Type.String({ minLength: 1, maxLength: 128 }),
      public_key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 4096,
          description:
            "The account's Ed25519 public key (base64 or PEM); incoming webhooks are verified with it",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  carrier_c: Type.Object(
    {
      application_id: Type.String({ minLength: 1, maxLength: 128 }),
      private_key: Secret('Private key (PEM)'),
      signature_secret: Type.Optional(Secret('Signature secret; incoming webhooks are verified with it')),
    },
    { additionalProperties: false },
  ),
};

const OrganizationUpdateIn = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  settings: Type.Optional(SettingsIn),
  api_keys: Type.Optional(
    Type.Object(
      Object.fromEntries(
        KEYED_VENDORS.map((vendor) => [
          vendor,
          Type.Optional(
            Nullable(
              Type.Object(
                {
                  api_key: Secret('API key'),
                  active: Type.Optional(Type.Boolean({ description: 'Read-only, as GET shows it; ignored' })),
                },
                { additionalProperties: false },
              ),
            ),
          ),
        ]),
      ),
      {
        additionalProperties: false,
        description: `Vendor id → {api_key}; null removes it. Vendors: ${KEYED_VENDORS.join(', ')}. A masked value (****…) keeps the stored key.`,
      },
    ),
  ),
  sip_trunk_config: Type.Optional(
    Nullable(
      Type.Object(
        {
          sip_domain: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
          inbound_enabled: Type.Optional(Type.Boolean()),
          username: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
          password: Type.Optional(Secret('SIP password')),
          port: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 65535,
              description: 'The trunk’s SIP port; 5060 (5061 over TLS)',
            }),
          ),
          transport: Type.Optional(literalUnion(['udp', 'tcp', 'tls'] as const)),
          inbound_addresses: Type.Optional(
            Type.Array(
              Type.String({ minLength: 2, maxLength: 49, pattern: '^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$' }),
              {
                maxItems: 32,
                description:
                  'Addresses (IPv4/IPv6, or CIDR blocks) inbound calls may come from without credentials; none: the addresses sip_domain resolves to',
              },
            ),
          ),
          register: Type.Optional(
            Type.Boolean({
              description: 'Register with the trunk (username and password) and keep the registration fresh',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  ),
  carrier_a: Type.Optional(Nullable(CarrierIn.carrier_a)),
  carrier_b: Type.Optional(Nullable(CarrierIn.carrier_b)),
  carrier_c: Type.Optional(Nullable(CarrierIn.carrier_c)),
  cloud_functions: Type.Optional(
    Nullable(
      Type.Object(
        {
          access_key: Type.String({ minLength: 1, maxLength: 128, pattern: '^\\S+$' }),
          secret_key: Secret('Secret access key; a masked value (****…) keeps the stored one'),
          region: Type.Optional(
            Type.String({
              maxLength: 32,
              pattern: '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$',
              description: 'Where function tools run unless a tool names its own region (default us-east-1)',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'The cloud account function tools are invoked in; null removes it',
        },
      ),
    ),
  ),
});

const ProviderStatus = Type.Object({
  ready: Type.Boolean(),
  usable: Type.Array(Type.Object({ provider: Type.String(), sources: Type.Array(Type.String()) })),
  inactive: Type.Array(
    Type.Object({ provider: Type.String(), source: Type.String(), reason: Type.String() }),
  ),
});

const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);
const SipTrunkStatus = Type.Object(
  {
    agent: Type.Union([Type.Literal('running'), Type.Literal('off')], {
      description: 'Whether this process runs the SIP agent (SIP_ENABLED)',
    }),
    reachable: Type.Union([Type.Boolean(), Type.Null()], {
      description: 'The trunk answered the last OPTIONS ping (below 500, not 408); null before the first',
    }),
    last_status: Type.Union([Type.Integer(), Type.Null()], {
      description: "The last ping's SIP status (408: no answer, 503: not delivered)",
    }),
    rtt_ms: Type.Union([Type.Number(), Type.Null()], { description: "The last answered ping's round trip" }),
    checked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    registration: Type.Union(
      [Type.Literal('registered'), Type.Literal('registering'), Type.Literal('failed'), Type.Literal('off')],
      { description: 'Our registration with the trunk (`register: true`); off when it does not register' },
    ),
    registration_status: NullableInteger,
    detail: Type.Union([Type.String(), Type.Null()], { description: 'Why the trunk could not be checked' }),
  },
  { description: "The organization's SIP trunk as the SIP agent last checked it" },
);

const limitsFor = (providers: readonly string[]) =>
  Type.Object(Object.fromEntries(providers.map((p) => [p, Type.Optional(Limit)])), {
    additionalProperties: false,
  });
const ConcurrencyIn = Type.Object(
  { tts: Type.Optional(limitsFor(TTS_PROVIDERS)), stt: Type.Optional(limitsFor(STT_PROVIDERS)) },
  { additionalProperties: false },
);
export function organizationRoutes(app: App, organizations: OrganizationService): void {
  app.get(
    '/api/v1/organization',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'getOrganization',
        tags,
        summary: 'The current organization, with its stored credentials masked',
        response: { 200: OrganizationOut },
      },
    },
    async (request) => organizationView(await organizations.current(principalOf(request))),
  );

  app.post(
    '/api/v1/organization/create',
    {
      config: { access: access.user },
      schema: {
        operationId: 'createOrganization',
        tags,
        summary: 'Create another organization; the caller becomes its admin',
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 200 }),
          slug: Type.String({
            pattern: '^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$',
            description: '3-63 lower-case letters, digits and hyphens; unique on the platform',
          }),
          description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
          domain: Type.Optional(
            Nullable(
              Type.String({
                maxLength: 253,
                pattern: '^(?=.{1,253}$)([a-zA-Z0-9-]{1,63}\\.)+[a-zA-Z]{2,63}$',
              }),
            ),
          ),
        }),
        response: {
          201: Type.Object({ ...OrganizationOut.properties }),
          ...errors({ 409: 'An organization with this slug already exists' }),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const row = await organizations.createForUser(principal, request.body);
      const details = { row, credentials: new Map(), byoInactiveReason: null };
      return reply.code(201).send(organizationView(details));
    },
  );

  app.put(
    '/api/v1/organization',
    {
      config: { access: { role: 'admin', area: 'organization' } },
      schema: {
        operationId: 'updateOrganization',
        tags,
        summary:
          'Change the organization: name, settings, vendor API keys, carrier credentials, SIP trunk, cloud functions',
        body: OrganizationUpdateIn,
        response: { 200: OrganizationOut },
      },
    },
    async (request) => {
      const body = request.body;
      const details = await organizations.update(principalOf(request), {
        name: body.name,
        settings: body.settings as Record<string, unknown> | undefined,
        apiKeys: body.api_keys as Record<string, { api_key: string } | null> | undefined,
        sipTrunkConfig: body.sip_trunk_config,
        cloudFunctions: body.cloud_functions as Record<string, string> | null | undefined,
        carriers: Object.fromEntries(
          CARRIERS.filter((id) => body[id] !== undefined).map((id) => [
            id,
            body[id] as Record<string, string> | null,
          ]),
        ),
      });
      return organizationView(details);
    },
  );

  app.post(
    '/api/v1/organization/:carrier/validate',
    {
      config: { access: access.admin },
      schema: {
        operationId: 'validateCarrierCredentials',
        tags,
        summary:
          "Check carrier credentials against the carrier's API (the stored ones, or those sent); saves nothing",
        params: Type.Object({
          carrier: literalUnion(CARRIERS),
        }),
        description:
          'Body (optional): the credentials to check, shaped as in PUT /api/v1/organization; a masked secret means ' +
          'the stored one. Without a body the stored credentials are checked.',
        response: {
          200: Type.Object({
            provider: Type.String(),
            valid: Type.Boolean(),
            detail: Type.String(),
            account: Nullable(Type.String()),
          }),
          ...errors({
            400: 'No credentials stored for the carrier and none sent',
            502: 'The carrier could not check the credentials (unreachable or failing)',
          }),
        },
      },
    },
    async (request) => {
      // The body is optional, which a body schema cannot say: checked here instead.
      const body = request.body as unknown;
      if (body !== undefined && body !== null) {
        const fields = typeof body === 'object' && !Array.isArray(body) ? Object.entries(body) : undefined;
        if (!fields) throw invalidField(['body'], 'Must be an object of credential fields');
        for (const [field, value] of fields) {
          if (typeof value !== 'string' || value === '' || value.length > 8192)
            throw invalidField(['body', field], 'Must be a non-empty string');
        }
      }
      return organizations.validateCarrier(
        principalOf(request),
        request.params.carrier,
        (body ?? undefined) as Record<string, string> | undefined,
      );
    },
  );

  app.get(
    '/api/v1/organization/configuration-status',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'getConfigurationStatus',
        tags,
        summary: 'Which providers have usable credentials, which are inactive and why, and what is missing',
        response: {
          200: Type.Object({
            ready: Type.Boolean(),
            missing: Type.Array(Type.String()),
            providers: Type.Object({
              telephony: ProviderStatus,
              llm: ProviderStatus,
              stt: ProviderStatus,
              tts: ProviderStatus,
            }),
            sip_trunk: Type.Optional(SipTrunkStatus),
          }),
        },
      },
    },
    async (request) => organizations.configurationStatus(principalOf(request)),
  );

  app.get(
    '/api/v1/organization/concurrency-settings',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'getConcurrencySettings',
        tags,
        summary: 'Concurrent-session limits per speech provider',
        response: { 200: ConcurrencyOut },
      },
    },
    async (request) => concurrencyView((await organizations.current(principalOf(request))).row),
  );

  app.put(
    '/api/v1/organization/concurrency-settings',
    {
      config: { access: { role: 'admin', area: 'organization' } },
      schema: {
        operationId: 'updateConcurrencySettings',
        tags,
        summary: 'Replace the concurrent-session limits per speech provider',
        body: ConcurrencyIn,
        response: { 200: ConcurrencyOut },
      },
    },
    async (request) =>
      concurrencyView(
        await organizations.updateConcurrency(principalOf(request), {
          tts: (request.body.tts ?? {}) as Record<string, { enabled: boolean; concurrent_limit: number }>,
          stt: (request.body.stt ?? {}) as Record<string, { enabled: boolean; concurrent_limit: number }>,
        }),
      ),
  );
}

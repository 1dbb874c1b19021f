/**
 * Builds the Fastify application — plugins, hooks, routes — without listening, so tests drive it
 * with `app.inject()` and the server calls `listen` on the same object.
 */
import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { ConsoleBuilds } from './console/build.js';
import { consoleRoutes } from './console/routes.js';
import type { Database } from './db/client.js';
import { analysisRoutes } from './domains/analysis/routes.js';
import { apiKeyRoutes } from './domains/api-keys/routes.js';
import { assistantRoutes } from './domains/assistants/routes.js';
import { billingRoutes } from './domains/billing/routes.js';
import { callAnalyticsRoutes } from './domains/calls/analytics-routes.js';
import { callEventRoutes } from './domains/calls/event-routes.js';
import { callRecordRoutes } from './domains/calls/record-routes.js';
import { callRoutes } from './domains/calls/routes.js';
import { webCallRoutes } from './domains/calls/web-routes.js';
import { campaignContactRoutes } from './domains/campaigns/contacts/routes.js';
import { campaignMoveRoutes } from './domains/campaigns/moves-routes.js';
import { campaignProgressRoutes } from './domains/campaigns/progress/routes.js';
import { campaignProgressSocket } from './domains/campaigns/progress/socket-routes.js';
import { campaignRoutes } from './domains/campaigns/routes.js';
import { campaignScheduleRoutes } from './domains/campaigns/schedules/routes.js';
import { carrierWebhookRoutes } from './domains/carrier-webhooks/routes.js';
import { fallbackKeyRoutes } from './domains/fallback-keys/routes.js';
import { graphRoutes } from './domains/graphs/routes.js';
import { graphSessionRoutes } from './domains/graphs/session-routes.js';
import type { Authenticator } from './domains/identity/principal.js';
import { identityRoutes } from './domains/identity/routes.js';
import { knowledgeRoutes } from './domains/knowledge/routes.js';
import { knowledgeSearchRoutes } from './domains/knowledge/search-routes.js';
import { llmPresetRoutes } from './domains/llm-presets/routes.js';
import { organizationRoutes } from './domains/organizations/routes.js';
import { phoneNumberRoutes } from './domains/phone-numbers/routes.js';
import { recordingRoutes } from './domains/recordings/routes.js';
import { serverlessRoutes } from './domains/serverless/routes.js';
import { smsRoutes } from './domains/sms/routes.js';
import { smsComplianceRoutes } from './domains/sms-compliance/routes.js';
import { systemRoutes } from './domains/system/routes.js';
import { userRoutes } from './domains/users/routes.js';
import { webhookRoutes } from './domains/webhooks/routes.js';
import { installAuthentication } from './http/auth.js';
import { answerFrameworkError, installErrorHandling } from './http/errors.js';
import { installRequestMetrics } from './http/metrics.js';
import { installOpenApi } from './http/openapi.js';
import { installRouteDocs } from './http/route-docs.js';
import { buildSerializerOnFirstUse } from './http/serialization.js';
import type { App } from './http/types.js';
import { installValidation } from './http/validation.js';
import type { JobQueue } from './queue/queue.js';
import type { Services } from './services.js';
import { VERSION } from './version.js';
import { mediaStreamRoutes } from './voice/media-routes.js';
import { webCallStreamRoutes } from './voice/web-call-routes.js';

export interface AppDependencies {
  config: Config;
  logger: FastifyBaseLogger;
  database: Database;
  queue: JobQueue;
  metrics: Registry;
  authenticator: Authenticator;
  services: Services;
  /** The web console's build (src/console/build.ts), served at /console/. */
  consoleBuilds: ConsoleBuilds;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(deps: AppDependencies): Promise<App> {
  const { config } = deps;
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: config.bodyLimitBytes,
    // Decides `request.ip`, which per-address sign-in limits count and logs show (see TRUST_PROXY).
    trustProxy: config.trustProxy,
    // Path parameters such as invitation tokens may be longer than the router's default 100.
    routerOptions: { maxParamLength: 256 },
    // Errors the router raises before any route runs still answer in the error envelope.
    frameworkErrors: answerFrameworkError,
    requestIdHeader: false,
    // A caller's own X-Request-Id is kept when it is a sane token, so traces join up across services.
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Response serializers are compiled on a route's first answer, not at start-up.
    schemaController: { compilersFactory: { buildSerializer: buildSerializerOnFirstUse } },
    ajv: {
      customOptions: { allErrors: true, removeAdditional: false, coerceTypes: 'array', useDefaults: true },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });

  // Cookie parsing must run before authentication; authentication's onRoute check must see every
  // route registered after it, the documentation routes included.
  await app.register(fastifyCookie);
  installAuthentication(app, deps.authenticator);
  // /openapi.json's document and the /docs page (src/http/openapi.ts), checked at start-up.
  await installOpenApi(app, { publicUrl: config.publicUrl, version: VERSION });
  // WebSocket routes (`websocket: true`) must be registered after this plugin. Client frames are
  // small JSON messages or media chunks: 1 MiB is plenty and bounds what one frame may cost us.
  await app.register(fastifyWebsocket, { options: { maxPayload: 1 << 20 } });

  installValidation(app);
  installErrorHandling(app);
  installRequestMetrics(app, deps.metrics);
  installRouteDocs(app);

  systemRoutes(app, {
    database: deps.database,
    queue: deps.queue,
    metrics: deps.metrics,
    metricsToken: config.metricsToken,
    version: VERSION,
  });
  const cookie = { secure: config.publicUrl.startsWith('https:') };
  identityRoutes(app, deps.services.identity, cookie);
  userRoutes(app, { identity: deps.services.identity, users: deps.services.users, cookie });
  apiKeyRoutes(app, deps.services.apiKeys);
  organizationRoutes(app, deps.services.organizations);
  billingRoutes(app, deps.services.billing);
  llmPresetRoutes(app, deps.services.llmPresets);
  fallbackKeyRoutes(app, deps.services.fallbackKeys);
  assistantRoutes(app, deps.services.assistants);
  await knowledgeRoutes(app, deps.services.knowledge, { maxUploadBytes: config.knowledge.maxUploadBytes });
  knowledgeSearchRoutes(app, deps.services.knowledgeSearch);
  phoneNumberRoutes(app, deps.services.phoneNumbers);
  graphRoutes(app, deps.services.graphs);
  graphSessionRoutes(app, { sessions: deps.services.graphSessions, analytics: deps.services.graphAnalytics });
  campaignRoutes(app, deps.services.campaigns);
  campaignMoveRoutes(app, deps.services);
  campaignScheduleRoutes(app, deps.services.campaignSchedules);
  campaignProgressRoutes(app, deps.services.campaignProgress);
  campaignProgressSocket(app, {
    authenticator: deps.authenticator,
    progress: deps.services.campaignProgress,
    feed: deps.services.campaignProgressFeed,
    consoleOrigin: new URL(config.publicUrl).origin,
  });
  await campaignContactRoutes(app, deps.services.campaignContacts, {
    maxFileBytes: config.contacts.importMaxBytes,
  });
  callRoutes(app, deps.services.calls);
  webCallRoutes(app, deps.services.webCalls);
  callAnalyticsRoutes(app, deps.services.callAnalytics);
  callRecordRoutes(app, deps.services.callRecords);
  callEventRoutes(app, deps.services.callRecords);
  analysisRoutes(app, deps.services.analysis);
  recordingRoutes(app, deps.services.recordings);
  smsRoutes(app, deps.services.sms);
  await carrierWebhookRoutes(app, {
    webhooks: deps.services.carrierWebhooks,
    publicUrl: deps.config.publicUrl,
  });
  smsComplianceRoutes(app, deps.services.smsCompliance);
  webhookRoutes(app, deps.services.webhooks);
  await serverlessRoutes(app, deps.services.serverless);
  mediaStreamRoutes(app, { streams: deps.services.mediaStreams, publicUrl: config.publicUrl });
  consoleRoutes(app, deps.consoleBuilds);
  webCallStreamRoutes(app, deps.services.webCallStreams);

  return app;
}

export type { TypeBoxTypeProvider };

/**
 * The composition root: wires infrastructure (database, queue, mail, secrets) into services and the
 * HTTP app, and knows the order of a clean stop. The server, the CLI, tests and benchmarks all build
 * the platform here, so they run the same code.
 */
import path from 'node:path';
import { buildApp } from './app.js';
import { ConsoleBuilds } from './console/build.js';
import { AnalysisService } from './domains/analysis/service.js';
import { ApiKeyService } from './domains/api-keys/service.js';
import { ApiKeyUsage } from './domains/api-keys/usage.js';
import { AssistantService } from './domains/assistants/service.js';
import { BillingService } from './domains/billing/service.js';
import { CallAnalytics } from './domains/calls/analytics.js';
import { LiveCalls } from './domains/calls/live.js';
import { CallRecords } from './domains/calls/records.js';
import { CallService } from './domains/calls/service.js';
import { WebCallService } from './domains/calls/web-calls.js';
import { CampaignContactService } from './domains/campaigns/contacts/service.js';
import { CampaignExecutor } from './domains/campaigns/execution/executor.js';
import { CampaignRecovery } from './domains/campaigns/execution/recovery.js';
import { CampaignProgressFeed } from './domains/campaigns/progress/feed.js';
import { CampaignProgressService } from './domains/campaigns/progress/service.js';
import { nextRunAfter } from './domains/campaigns/schedules/recurrence.js';
import { CampaignScheduleService } from './domains/campaigns/schedules/service.js';
import { CampaignService } from './domains/campaigns/service.js';
import { CarrierWebhookService } from './domains/carrier-webhooks/service.js';
import { FallbackKeyService } from './domains/fallback-keys/service.js';
import { GraphAnalyticsService } from './domains/graphs/analytics.js';
import { GraphService } from './domains/graphs/service.js';
import { GraphSessionService } from './domains/graphs/sessions.js';
import { AccessTokens } from './domains/identity/access-tokens.js';
import { IdentityAuthenticator } from './domains/identity/authenticator.js';
import { IdentityChanges } from './domains/identity/principal-cache.js';
import { IdentityService } from './domains/identity/service.js';
import { createKnowledge } from './domains/knowledge/wiring.js';
import { VendorLeases } from './domains/leases/service.js';
import { LlmPresetService } from './domains/llm-presets/service.js';
import { OrganizationService } from './domains/organizations/service.js';
import { PhoneNumberService } from './domains/phone-numbers/service.js';
import { RecordingLinks } from './domains/recordings/links.js';
import { RecordingService } from './domains/recordings/service.js';
import { ConfigResolver } from './domains/runtime/resolve-config.js';
import { ServerlessService } from './domains/serverless/service.js';
import { SmsService } from './domains/sms/service.js';
import { SmsComplianceService } from './domains/sms-compliance/service.js';
import { UserService } from './domains/users/service.js';
import { WebhookService } from './domains/webhooks/service.js';
import { createMetrics } from './http/metrics.js';
import { Mailer } from './lib/mail.js';
import { MediaTokens } from './lib/media-token.js';
import { OutboundTargets } from './lib/outbound-target.js';
import { SecretBox } from './lib/secrets.js';
import type { Platform, PlatformOptions } from './platform-types.js';
import { createCarriers } from './providers/carriers/index.js';
import { mediaWires } from './providers/carriers/media-wires.js';
import { LambdaFunctions } from './providers/cloud/functions.js';
import { jobMetrics } from './queue/metrics.js';
import { JobQueue } from './queue/queue.js';
import { registerWorkers } from './queue/workers.js';
import type { Services } from './services.js';
import { createStorage } from './storage/create.js';
import { LINEAR16_16K } from './voice/audio.js';
import { callKnowledge } from './voice/knowledge-setup.js';
import { MediaStreams } from './voice/media-stream.js';
import { VoiceMetrics } from './voice/metrics.js';
import { createVoice } from './voice/setup.js';
import type { SipAgent } from './voice/sip/agent.js';
import { startSipAgent } from './voice/sip/start.js';
import { WebCallStreams } from './voice/web-call.js';

export type { Platform, PlatformOptions, Services };

export async function createPlatform(options: PlatformOptions): Promise<Platform> {
  const { config, database, logger } = options;
  const secrets = new SecretBox(options.secretKey);
  const mediaTokens = new MediaTokens(options.secretKey);
  const metrics = createMetrics();
  const queue = new JobQueue(database, logger, {
    pollingIntervalSeconds: options.queuePollingIntervalSeconds ?? 2,
    observe: jobMetrics(metrics),
  });
  await queue.start();

  const changes = new IdentityChanges(database);
  await changes.start();
  const mailer = new Mailer(config, secrets, logger);
  const tokens = new AccessTokens(options.secretKey, config.accessTokenTtlSeconds);
  const apiKeyUsage = new ApiKeyUsage(database.db, logger);
  apiKeyUsage.start();
  const authenticator = new IdentityAuthenticator(database.db, tokens, apiKeyUsage, changes);
  const billing = new BillingService({ db: database.db });
  // One policy for every tenant URL that the platform or a carrier fetches.
  const targets = new OutboundTargets({
    allowPrivate: config.allowPrivateTargets,
    lookup: options.hostLookup,
  });
  const carriers = createCarriers(config.providers);
  const cloudFunctions = new LambdaFunctions({ endpoint: config.providers.lambda });
  const organizations: OrganizationService = new OrganizationService({
    db: database.db,
    secrets,
    billing,
    trialCredits: config.trialCredits,
    carriers,
    // Identity owns users and memberships; it is built next (it creates organizations in turn),
    // and is only called once the platform runs.
    founders: {
      addFounder: (ex, userId, organizationId) => identity.addFounder(ex, userId, organizationId),
      claimTrialCredits: (ex, userId) => identity.claimTrialCredits(ex, userId),
    },
  });
  const identity: IdentityService = new IdentityService({
    db: database.db,
    queue,
    tokens,
    mailer,
    changes,
    organizations,
    config: { publicUrl: config.publicUrl, sessionTtlSeconds: config.sessionTtlSeconds, login: config.login },
  });
  const webhooks = new WebhookService({
    db: database.db,
    queue,
    secrets,
    log: logger,
    targets,
    organizations,
  });
  const configResolver = new ConfigResolver({ db: database.db, secrets });
  // One storage for recordings and knowledge-base documents.
  const storage = createStorage(config.storage);
  const recordings = new RecordingService({
    db: database.db,
    storage,
    links: new RecordingLinks(options.secretKey, config.publicUrl, config.recordings.urlTtlSeconds),
    tempDir: path.join(config.dataDir, 'tmp', 'recordings'),
    log: logger,
  });
  const calls = new CallService({
    db: database.db,
    carriers,
    resolver: configResolver,
    billing,
    mediaTokens,
    queue,
    webhooks,
    publicUrl: config.publicUrl,
    pricePerMinute: config.prices.callPerMinute,
    recordingUrl: (callId) => recordings.signedUrl(callId),
  });
  // A web call ends by closing its browser's stream (services.webCallStreams, made below).
  const webEnds = { end: (callId: number, reason: string) => services.webCallStreams.end(callId, reason) };
  const callRecords = new CallRecords({
    db: database.db,
    database,
    carriers,
    resolver: configResolver,
    recordings,
    webCalls: webEnds,
  });
  const analysis = new AnalysisService({
    db: database.db,
    queue,
    resolver: configResolver,
    webhooks,
    urls: config.providers,
    targets,
    log: logger,
  });
  const voiceMetrics = new VoiceMetrics(metrics);
  const graphSessions = new GraphSessionService({ db: database.db });
  const knowledgeParts = createKnowledge({ db: database.db, queue, storage, secrets, config, log: logger });
  const knowledgeRetriever = knowledgeParts.retriever;
  const voice = createVoice({
    live: new LiveCalls({ db: database.db, carriers, resolver: configResolver, webCalls: webEnds }),
    callRecords,
    resolver: configResolver,
    targets,
    urls: config.providers,
    metrics: voiceMetrics,
    log: logger,
    leases: new VendorLeases({ db: database.db }),
    graphs: { db: database.db, sessions: graphSessions },
    functions: cloudFunctions,
    signingSecret: (tenant) => webhooks.secret(tenant),
    recordings,
    knowledge: callKnowledge({
      db: database.db,
      secrets,
      urls: config.providers,
      retriever: knowledgeRetriever,
      log: logger,
    }),
  });
  const sms = new SmsService({
    db: database.db,
    queue,
    carriers,
    resolver: configResolver,
    billing,
    webhooks,
    targets,
    publicUrl: config.publicUrl,
    pricePerSegment: config.prices.smsSegment,
    log: logger,
  });
  await sms.start(database);
  const executor = new CampaignExecutor({
    db: database.db,
    queue,
    calls,
    sms,
    resolver: configResolver,
    billing,
    nextRunAfter,
    options: { organizationConcurrency: config.campaigns.organizationConcurrency },
  });
  const recovery = new CampaignRecovery({
    db: database.db,
    queue,
    calls,
    sms,
    carriers,
    resolver: configResolver,
    executor,
    log: logger,
    sweepIntervalSeconds: config.campaigns.sweepIntervalSeconds,
    recoverAfterSeconds: config.campaigns.recoverAfterSeconds,
  });
  const campaignProgress = new CampaignProgressService({ db: database.db });
  const campaignProgressFeed = new CampaignProgressFeed({
    database,
    compute: (tenant, campaignId) => campaignProgress.progressOf(tenant, campaignId),
    log: logger,
  });
  await campaignProgressFeed.start();
  const carrierWebhooks = new CarrierWebhookService({
    db: database.db,
    carriers,
    resolver: configResolver,
    calls,
    sms,
  });
  await carrierWebhooks.start(database);
  await configResolver.start(database);
  const { service: knowledge, processor: documentProcessor, recovery: knowledgeRecovery } = knowledgeParts;
  const webCalls = new WebCallService({
    db: database.db,
    queue,
    billing,
    calls,
    mediaTokens,
    publicUrl: config.publicUrl,
    log: logger,
    // The greeting is synthesized while the browser connects, as for a phone call being answered.
    ...(options.callRuntime
      ? {}
      : { created: (tenant, id) => voice.runtime.prepare(tenant, id, LINEAR16_16K) }),
  });
  const services: Services = {
    identity,
    users: new UserService({
      db: database.db,
      queue,
      mailer,
      identity,
      changes,
      publicUrl: config.publicUrl,
    }),
    apiKeys: new ApiKeyService({ db: database.db, usage: apiKeyUsage, changes }),
    organizations,
    billing,
    llmPresets: new LlmPresetService({ db: database.db, secrets, targets }),
    fallbackKeys: new FallbackKeyService({ db: database.db, secrets }),
    assistants: new AssistantService({ db: database.db, queue, secrets, targets, knowledge }),
    knowledge,
    phoneNumbers: new PhoneNumberService({ db: database.db }),
    graphs: new GraphService({ db: database.db }),
    graphSessions,
    graphAnalytics: new GraphAnalyticsService({ db: database.db }),
    campaigns: new CampaignService({ db: database.db }),
    executor,
    campaignRecovery: recovery,
    campaignContacts: new CampaignContactService({
      db: database.db,
      defaultRegion: config.contacts.defaultPhoneRegion,
      copyIn: database.copyIn,
    }),
    campaignSchedules: new CampaignScheduleService({ db: database.db, queue }),
    campaignProgress,
    campaignProgressFeed,
    smsCompliance: new SmsComplianceService({ db: database.db }),
    configResolver,
    calls,
    callRecords,
    callAnalytics: new CallAnalytics({ db: database.db }),
    analysis,
    recordings,
    sms,
    carrierWebhooks,
    webhooks,
    serverless: new ServerlessService({
      db: database.db,
      functions: cloudFunctions,
      log: logger,
      timeoutMs: config.serverless.listTimeoutMs,
      ratePerMinute: config.serverless.listRatePerMinute,
    }),
    knowledgeRetriever,
    knowledgeSearch: knowledgeParts.search,
    webCalls,
    webCallStreams: new WebCallStreams({
      db: database.db,
      tokens: mediaTokens,
      runtime: options.callRuntime ?? voice.runtime,
      calls: webCalls,
      log: logger,
    }),
    mediaStreams: new MediaStreams({
      db: database.db,
      carriers,
      wires: mediaWires,
      resolver: configResolver,
      tokens: mediaTokens,
      runtime: options.callRuntime ?? voice.runtime,
      log: logger,
    }),
  };

  // Who listens to whom, between domains. A campaign attempt finishes with its call or message, in
  // the transaction that records the call's final status or settles the message (the executor's
  // lock order relies on that). Listeners run in the order they are added here.
  calls.onCallFinished((tx, jobs, tenant, call) => executor.callFinished(tx, jobs, tenant, call));
  // A call that ended gets its analysis row (and job) in that same transaction; a completed analysis
  // gives its campaign execution the sentiment, in the transaction that stores it.
  calls.onCallFinished((tx, jobs, tenant, call) => analysis.callFinished(tx, jobs, tenant, call));
  analysis.onCallAnalyzed((tx, tenant, found, call) => executor.callAnalyzed(tx, tenant, found, call));
  // A call's answer markup is on its way: the voice runtime gets ready (the greeting starts speaking).
  if (!options.callRuntime)
    carrierWebhooks.onCallAnswered((tenant, callId, format, version) =>
      voice.runtime.prepare(tenant, callId, format, version),
    );
  // The carrier's answering-machine verdict reaches the call's live session, if this process holds it.
  if (!options.callRuntime)
    carrierWebhooks.onMachineDetection((_tenant, callId, verdict) =>
      voice.runtime.machineDetection(callId, verdict),
    );
  sms.onMessageSettled((tx, jobs, tenant, messages) => executor.messagesSettled(tx, jobs, tenant, messages));

  const consoleBuilds = new ConsoleBuilds();
  const app = await buildApp({
    config,
    logger,
    database,
    queue,
    metrics,
    authenticator,
    services,
    consoleBuilds,
  });

  let stopping: Promise<void> | undefined;
  let sip: Promise<SipAgent> | undefined;
  return {
    app,
    config,
    database,
    queue,
    mailer,
    secrets,
    mediaTokens,
    metrics,
    voiceMetrics,
    services,
    apiKeyUsage,
    authenticator,
    consoleBuilds,
    async startWorkers() {
      await registerWorkers(queue, {
        mailer,
        webhooks,
        sms,
        campaigns: executor,
        analysis,
        knowledge: documentProcessor,
      });
      await sms.wakeEveryQueue();
      recovery.start();
      knowledgeRecovery.start();
    },
    startSip() {
      sip ??= startSipAgent({
        config,
        secretKey: options.secretKey,
        db: database.db,
        calls,
        resolver: configResolver,
        runtime: options.callRuntime ?? voice.runtime,
        carriers,
        registry: metrics,
        log: logger,
      });
      return sip;
    },
    stop() {
      stopping ??= (async () => {
        // Closing the app closes its WebSockets (unsubscribing them); then no computation is left.
        // Fastify closes the connections idle when it starts closing; one whose request was still
        // running becomes idle later and would be kept for the whole keep-alive time-out (72 s), so
        // the idle ones are closed again until the app has closed.
        const closeIdle = setInterval(() => app.server.closeIdleConnections(), 100);
        await app.close().finally(() => clearInterval(closeIdle));
        await recovery.stop();
        await knowledgeRecovery.stop();
        await campaignProgressFeed.stop();
        await queue.stop(config.shutdownTimeoutMs);
        sms.stop();
        await apiKeyUsage.stop();
        cloudFunctions.close();
        // Calls through trunks end (BYE) before the runtime that talks on them closes.
        await sip?.then((agent) => agent.stop()).catch(() => undefined);
        await voice.close();
        // Calls that ended as the app closed are still storing their recordings.
        await recordings.drain(config.shutdownTimeoutMs);
        await database.close();
      })();
      return stopping;
    },
  };
}

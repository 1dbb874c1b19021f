/**
 * The services the platform builds and the HTTP app routes to. Their own module so that `app.ts`
 * (which routes to them) and `platform.ts` (which builds them and the app) do not import each other.
 */
import type { AnalysisService } from './domains/analysis/service.js';
import type { ApiKeyService } from './domains/api-keys/service.js';
import type { AssistantService } from './domains/assistants/service.js';
import type { BillingService } from './domains/billing/service.js';
import type { CallAnalytics } from './domains/calls/analytics.js';
import type { CallRecords } from './domains/calls/records.js';
import type { CallService } from './domains/calls/service.js';
import type { WebCallService } from './domains/calls/web-calls.js';
import type { CampaignContactService } from './domains/campaigns/contacts/service.js';
import type { CampaignExecutor } from './domains/campaigns/execution/executor.js';
import type { CampaignRecovery } from './domains/campaigns/execution/recovery.js';
import type { CampaignProgressFeed } from './domains/campaigns/progress/feed.js';
import type { CampaignProgressService } from './domains/campaigns/progress/service.js';
import type { CampaignScheduleService } from './domains/campaigns/schedules/service.js';
import type { CampaignService } from './domains/campaigns/service.js';
import type { CarrierWebhookService } from './domains/carrier-webhooks/service.js';
import type { FallbackKeyService } from './domains/fallback-keys/service.js';
import type { GraphAnalyticsService } from './domains/graphs/analytics.js';
import type { GraphService } from './domains/graphs/service.js';
import type { GraphSessionService } from './domains/graphs/sessions.js';
import type { IdentityService } from './domains/identity/service.js';
import type { KnowledgeRetriever } from './domains/knowledge/retrieval.js';
import type { KnowledgeSearch } from './domains/knowledge/search.js';
import type { KnowledgeService } from './domains/knowledge/service.js';
import type { LlmPresetService } from './domains/llm-presets/service.js';
import type { OrganizationService } from './domains/organizations/service.js';
import type { PhoneNumberService } from './domains/phone-numbers/service.js';
import type { RecordingService } from './domains/recordings/service.js';
import type { ConfigResolver } from './domains/runtime/resolve-config.js';
import type { ServerlessService } from './domains/serverless/service.js';
import type { SmsService } from './domains/sms/service.js';
import type { SmsComplianceService } from './domains/sms-compliance/service.js';
import type { UserService } from './domains/users/service.js';
import type { WebhookService } from './domains/webhooks/service.js';
import type { MediaStreams } from './voice/media-stream.js';
import type { WebCallStreams } from './voice/web-call.js';

export interface Services {
  identity: IdentityService;
  apiKeys: ApiKeyService;
  organizations: OrganizationService;
  billing: BillingService;
  users: UserService;
  llmPresets: LlmPresetService;
  fallbackKeys: FallbackKeyService;
  assistants: AssistantService;
  /** Assistants' knowledge-base documents: upload, list, status, delete, re-process. */
  knowledge: KnowledgeService;
  phoneNumbers: PhoneNumberService;
  graphs: GraphService;
  graphSessions: GraphSessionService;
  graphAnalytics: GraphAnalyticsService;
  campaigns: CampaignService;
  executor: CampaignExecutor;
  campaignRecovery: CampaignRecovery;
  campaignContacts: CampaignContactService;
  campaignSchedules: CampaignScheduleService;
  campaignProgress: CampaignProgressService;
  /** Live progress for WebSockets: one LISTEN per process, coalesced computations. */
  campaignProgressFeed: CampaignProgressFeed;
  smsCompliance: SmsComplianceService;
  configResolver: ConfigResolver;
  calls: CallService;
  /** Listing, search, export, transcripts and hang-up of call records. */
  callRecords: CallRecords;
  /** GET /calls/analytics, read from the rollups the calls domain keeps. */
  callAnalytics: CallAnalytics;
  /** After-call analysis: summary, sentiment, structured data (the `call.analyze` job). */
  analysis: AnalysisService;
  /** Call recordings: made during calls, served to owners and signed URLs, deleted with the call. */
  recordings: RecordingService;
  sms: SmsService;
  carrierWebhooks: CarrierWebhookService;
  webhooks: WebhookService;
  serverless: ServerlessService;
  /** Hybrid retrieval over assistants' knowledge bases (the search route and live turns). */
  knowledgeRetriever: KnowledgeRetriever;
  knowledgeSearch: KnowledgeSearch;
  /** Web calls (a browser talking to an assistant): created here, streamed on webCallStreams. */
  webCalls: WebCallService;
  webCallStreams: WebCallStreams;
  /** Carriers' media streams of live calls: proven, then handed to the call runtime. */
  mediaStreams: MediaStreams;
}

/** Which service handles each job. A process runs these only when WORKERS_ENABLED is true. */
import type { AnalysisService } from '../domains/analysis/service.js';
import type { CampaignExecutor } from '../domains/campaigns/execution/executor.js';
import type { DocumentProcessor } from '../domains/knowledge/processing.js';
import type { SmsService } from '../domains/sms/service.js';
import type { WebhookService } from '../domains/webhooks/service.js';
import type { Mailer } from '../lib/mail.js';
import type { JobQueue } from './queue.js';

export async function registerWorkers(
  queue: JobQueue,
  handlers: {
    mailer: Mailer;
    webhooks: WebhookService;
    sms: SmsService;
    campaigns: CampaignExecutor;
    analysis: AnalysisService;
    knowledge: DocumentProcessor;
  },
): Promise<void> {
  await queue.work('mail.send', (payload) => handlers.mailer.deliver(payload), 2);
  await queue.work('webhook.deliver', (payload, job) => handlers.webhooks.deliver(payload, job), 4);
  // A run is one statement (its sends go on after it, drain.ts): a few workers keep many numbers going.
  await queue.work('sms.drain', (payload) => handlers.sms.runDrain(payload), 4);
  // Dispatching is serialised per organization anyway; attempts wait on carriers, so run several.
  await queue.work('campaign.dispatch', (payload) => handlers.campaigns.runDispatch(payload), 2);
  await queue.work('campaign.attempt', (payload) => handlers.campaigns.runAttempt(payload), 8);
  await queue.work('campaign.wakeup', (payload) => handlers.campaigns.runWakeup(payload), 1);
  // Each waits on a language model for seconds: a few at once.
  await queue.work('call.analyze', (payload, job) => handlers.analysis.run(payload, job), 4);
  // Parsing and splitting take CPU, embedding waits on a vendor: two documents at once.
  await queue.work('knowledge.process', (payload, job) => handlers.knowledge.run(payload, job), 2);
}

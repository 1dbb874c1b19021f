/** Which service handles each job. A process runs these only when WORKERS_ENABLED is true. */
import type { SmsService } from '../domains/sms/service.js';
import type { WebhookService } from '../domains/webhooks/service.js';
import type { Mailer } from '../lib/mail.js';
import type { JobQueue } from './queue.js';

export async function registerWorkers(
  queue: JobQueue,
  handlers: { mailer: Mailer; webhooks: WebhookService; sms: SmsService },
): Promise<void> {
  await queue.work('mail.send', (payload) => handlers.mailer.deliver(payload), 2);
  await queue.work('webhook.deliver', (payload, job) => handlers.webhooks.deliver(payload, job), 4);
  // Several at once: each waits for its own number's slot, so numbers do not hold each other up.
  await queue.work('sms.send', (payload) => handlers.sms.runSendJob(payload), 8);
}

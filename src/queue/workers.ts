/** Which service handles each job. A process runs these only when WORKERS_ENABLED is true. */
import type { Mailer } from '../lib/mail.js';
import type { JobQueue } from './queue.js';

export async function registerWorkers(queue: JobQueue, handlers: { mailer: Mailer }): Promise<void> {
  await queue.work('mail.send', (payload) => handlers.mailer.deliver(payload), 2);
}

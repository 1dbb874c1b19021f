/**
 * Settling an outbound message: accepted by the carrier (`sent`), refused or given up (`failed`), or
 * cancelled. Whoever settles one tells the listeners inside the transaction that records it, so
 * that what depends on the message (a campaign's attempt) moves with it or not at all.
 *
 * Here too is the rule for a send that was interrupted (its process died after claiming the message
 * and before the carrier's answer was recorded): failed, never resent — the carrier may have it.
 */
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import * as store from './store.js';

/** A message still `sending` after this long was interrupted (its process died mid-send). */
export const INTERRUPTED_AFTER_SECONDS = 60;
export const INTERRUPTED_ERROR =
  'Interrupted while sending (the server stopped); not resent, as the carrier may have accepted it';

/** Whether a message's send was interrupted: still `sending` INTERRUPTED_AFTER_SECONDS after its claim. */
export function sendInterrupted(message: Pick<store.MessageRow, 'status' | 'updatedAt'>): boolean {
  return (
    message.status === 'sending' &&
    Date.now() - message.updatedAt.getTime() > INTERRUPTED_AFTER_SECONDS * 1000
  );
}

/**
 * Told, inside the transaction that records it, when outbound messages are settled: accepted by
 * the carrier (`sent`), refused or given up (`failed`), or cancelled. Campaigns finish their SMS
 * attempts so. One call per transaction, with every message it settled (the drain records a batch
 * at once), never with an empty list.
 */
export type MessageSettledListener = (
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  messages: store.MessageRow[],
) => Promise<void>;

export class Settlement {
  readonly #listeners: MessageSettledListener[] = [];

  constructor(private readonly queue: JobQueue) {}

  /** Adds a listener for outbound messages being settled (see MessageSettledListener). */
  listen(listener: MessageSettledListener): void {
    this.#listeners.push(listener);
  }

  /** Tells the listeners, in the caller's transaction, that `messages` are settled. */
  async tell(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, messages: store.MessageRow[]): Promise<void> {
    if (messages.length === 0) return;
    for (const listener of this.#listeners) await listener(tx, jobs, tenant, messages);
  }

  /** Sets a message's status to `failed` (or another settled status) and tells the listeners. */
  async settle(
    tenant: Tenant,
    id: string,
    changes: { status: 'failed' | 'cancelled' | 'queued'; error?: string },
    onlyIfStatus?: store.MessageRow['status'],
  ): Promise<store.MessageRow | undefined> {
    return this.queue.transaction(async (tx, jobs) => {
      const row = await store.updateMessage(tx, tenant, id, changes, onlyIfStatus);
      if (row && changes.status !== 'queued') await this.tell(tx, jobs, tenant, [row]);
      return row;
    });
  }

  /**
   * Fails a message whose send was interrupted (`sendInterrupted`), in the caller's transaction, and
   * tells the listeners; undefined when it is no longer `sending`. The campaign sweep settles so.
   * (The drain fails its number's interrupted messages in bulk, telling no one: the sweep later
   * finishes their campaign attempts from the record.)
   */
  async failInterruptedSend(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    id: string,
  ): Promise<store.MessageRow | undefined> {
    const failed = await store.updateMessage(
      tx,
      tenant,
      id,
      { status: 'failed', error: INTERRUPTED_ERROR },
      'sending',
    );
    if (failed) await this.tell(tx, jobs, tenant, [failed]);
    return failed;
  }
}

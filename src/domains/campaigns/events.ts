/**
 * Campaign progress changes, announced inside the transaction that makes them: `pg_notify` is
 * delivered when (and only if) that transaction commits, to every process listening — the API
 * process serving a WebSocket hears what a worker process did.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';

export const PROGRESS_CHANNEL = 'campaign_progress';

/** Payload: `<organization id>:<campaign id>`. */
export async function announceProgress(
  ex: Executor,
  organizationId: number,
  campaignId: number,
): Promise<void> {
  await ex.execute(sql`select ${progressAnnouncement(organizationId, campaignId)}`);
}

/**
 * The announcement as an expression, for a statement of the same transaction to evaluate once (a
 * write's RETURNING): the transaction then announces at no statement of its own.
 */
export function progressAnnouncement(organizationId: number, campaignId: number) {
  return sql<string>`pg_notify(${PROGRESS_CHANNEL}, ${`${organizationId}:${campaignId}`})`;
}

/** SQL of outgoing webhooks: the delivery log and the organization's sealed webhook secret. */
import { desc, eq, ne, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { webhookDeliveries } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import { offsetOf, type Page } from '../../lib/page.js';

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type DeliveryStatus = DeliveryRow['status'];

export async function insertDelivery(
  ex: Executor,
  tenant: Tenant,
  values: { eventId: string; eventType: string; url: string; payload: Record<string, unknown> },
): Promise<DeliveryRow> {
  const [row] = await ex
    .insert(webhookDeliveries)
    .values({ organizationId: tenant.organizationId, ...values })
    .returning();
  if (!row) throw new Error('insert into webhook_deliveries returned no row');
  return row;
}

/**
 * One delivery by id, whatever its organization: for the `webhook.deliver` worker only, whose job
 * was enqueued by our own code. Requests go through `findDelivery`.
 */
export async function findDeliveryForWorker(ex: Executor, id: number): Promise<DeliveryRow | undefined> {
  const [row] = await ex.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).limit(1);
  return row;
}

export async function findDelivery(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<DeliveryRow | undefined> {
  const [row] = await ex
    .select()
    .from(webhookDeliveries)
    .where(tenant.where(webhookDeliveries, eq(webhookDeliveries.id, id)))
    .limit(1);
  return row;
}

export async function listDeliveries(
  ex: Executor,
  tenant: Tenant,
  page: Page,
  filter: { status?: DeliveryStatus; eventType?: string },
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const where = tenant.where(
    webhookDeliveries,
    filter.status ? eq(webhookDeliveries.status, filter.status) : undefined,
    filter.eventType ? eq(webhookDeliveries.eventType, filter.eventType) : undefined,
  );
  const [rows, [count]] = await Promise.all([
    ex
      .select()
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.id))
      .limit(page.perPage)
      .offset(offsetOf(page)),
    ex.select({ n: sql<number>`count(*)::int` }).from(webhookDeliveries).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/** Counts one attempt that the receiver accepted. */
export async function recordDelivered(ex: Executor, id: number, statusCode: number): Promise<void> {
  await ex
    .update(webhookDeliveries)
    .set(
      withUpdatedAt({
        status: 'delivered',
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        lastStatusCode: statusCode,
        lastError: null,
        deliveredAt: sql`now()`,
      }),
    )
    .where(eq(webhookDeliveries.id, id));
}

/**
 * Counts one failed attempt (`counted: false` records the reason without counting an attempt, for a
 * delivery refused before any request was made). With `final` the delivery ends `failed`.
 */
export async function recordFailure(
  ex: Executor,
  id: number,
  failure: { statusCode: number | null; error: string; final: boolean; counted: boolean },
): Promise<void> {
  await ex
    .update(webhookDeliveries)
    .set(
      withUpdatedAt({
        ...(failure.final ? { status: 'failed' as const } : {}),
        ...(failure.counted ? { attempts: sql`${webhookDeliveries.attempts} + 1` } : {}),
        lastStatusCode: failure.statusCode,
        lastError: failure.error,
      }),
    )
    .where(eq(webhookDeliveries.id, id));
}

/**
 * Puts a finished delivery (delivered or failed) back to `pending` for another round of attempts;
 * undefined when it does not exist for this tenant or is still pending (so never two rounds at once).
 */
export async function reopenDelivery(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<DeliveryRow | undefined> {
  const [row] = await ex
    .update(webhookDeliveries)
    .set(withUpdatedAt({ status: 'pending' }))
    .where(
      tenant.where(webhookDeliveries, eq(webhookDeliveries.id, id), ne(webhookDeliveries.status, 'pending')),
    )
    .returning();
  return row;
}

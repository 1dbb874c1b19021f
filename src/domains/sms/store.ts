/** SQL of messages and their idempotency keys (the drain's claim and records: drain-store.ts). */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { messages, smsIdempotencyKeys } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type MessageRow = typeof messages.$inferSelect;
export type NewMessage = Omit<
  typeof messages.$inferInsert,
  'id' | 'organizationId' | 'createdAt' | 'updatedAt'
>;
export type IdempotencyRow = typeof smsIdempotencyKeys.$inferSelect;

export async function insertMessage(ex: Executor, tenant: Tenant, values: NewMessage): Promise<MessageRow> {
  const [row] = await ex
    .insert(messages)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

export async function findMessage(
  ex: Executor,
  tenant: Tenant,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<MessageRow | undefined> {
  const query = ex
    .select()
    .from(messages)
    .where(tenant.where(messages, eq(messages.id, id)))
    .limit(1);
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** Stores an inbound message once per carrier id; undefined when it is already stored. */
export async function insertInboundOnce(
  ex: Executor,
  tenant: Tenant,
  values: NewMessage,
): Promise<MessageRow | undefined> {
  const [row] = await ex
    .insert(messages)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing({ target: [messages.provider, messages.providerMessageId] })
    .returning();
  return row;
}

export async function updateMessage(
  ex: Executor,
  tenant: Tenant,
  id: string,
  changes: Partial<Omit<MessageRow, 'id' | 'organizationId' | 'createdAt'>>,
  onlyIfStatus?: MessageRow['status'],
): Promise<MessageRow | undefined> {
  const [row] = await ex
    .update(messages)
    .set(withUpdatedAt(changes))
    .where(
      tenant.where(
        messages,
        eq(messages.id, id),
        onlyIfStatus ? eq(messages.status, onlyIfStatus) : undefined,
      ),
    )
    .returning();
  return row;
}

/** Counts per status, and per sending number the queued ones. */
export async function queueStats(ex: Executor, tenant: Tenant) {
  const [byStatus, byNumber] = await Promise.all([
    ex
      .select({ status: messages.status, n: sql<number>`count(*)::int` })
      .from(messages)
      .where(tenant.where(messages, eq(messages.direction, 'outbound')))
      .groupBy(messages.status),
    ex
      .select({
        phoneNumberId: messages.phoneNumberId,
        phoneNumber: messages.fromPhoneNumber,
        queued: sql<number>`count(*)::int`,
        oldest: sql<Date | null>`min(${messages.createdAt})`,
      })
      .from(messages)
      .where(tenant.where(messages, eq(messages.status, 'queued')))
      .groupBy(messages.phoneNumberId, messages.fromPhoneNumber)
      .orderBy(asc(messages.fromPhoneNumber)),
  ]);
  return { byStatus, byNumber };
}

export async function findIdempotencyKey(ex: Executor, tenant: Tenant, key: string) {
  const [row] = await ex
    .select()
    .from(smsIdempotencyKeys)
    .where(tenant.where(smsIdempotencyKeys, eq(smsIdempotencyKeys.key, key)));
  return row;
}

export async function recordIdempotentAnswer(
  ex: Executor,
  tenant: Tenant,
  key: string,
  values: { messageId?: string; response: Record<string, unknown> },
): Promise<void> {
  await ex
    .update(smsIdempotencyKeys)
    .set({ ...(values.messageId ? { messageId: values.messageId } : {}), response: values.response })
    .where(tenant.where(smsIdempotencyKeys, eq(smsIdempotencyKeys.key, key)));
}

/** Deletes keys older than 24 hours on the whole platform (the hourly prune job). */
export async function pruneIdempotencyKeys(ex: Executor): Promise<number> {
  const rows = await ex
    .delete(smsIdempotencyKeys)
    .where(sql`${smsIdempotencyKeys.createdAt} < now() - interval '24 hours'`)
    .returning({ key: smsIdempotencyKeys.key });
  return rows.length;
}

/** Platform-wide lookups for carrier webhooks (trusted only after the signature is verified). */
export const unscoped = {
  async messageById(ex: Executor, id: string): Promise<MessageRow | undefined> {
    const [row] = await ex.select().from(messages).where(eq(messages.id, id)).limit(1);
    return row;
  },
  async messageByProviderId(ex: Executor, provider: string, providerMessageId: string) {
    const [row] = await ex
      .select()
      .from(messages)
      .where(and(eq(messages.provider, provider), eq(messages.providerMessageId, providerMessageId)))
      .limit(1);
    return row;
  },
};

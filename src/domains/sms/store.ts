/** SQL of messages, their idempotency keys, and the per-number sending slots. */
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

/**
 * Records that the carrier accepted a message. The status becomes `sent` only while it is still
 * `sending`: a delivery receipt that overtook the carrier's answer keeps its later status.
 */
export async function markAccepted(
  ex: Executor,
  tenant: Tenant,
  id: string,
  values: { providerMessageId: string; segments: number; cost: number },
): Promise<MessageRow | undefined> {
  const [row] = await ex
    .update(messages)
    .set(
      withUpdatedAt({
        ...values,
        status: sql`case when ${messages.status} = 'sending' then 'sent' else ${messages.status} end`,
        sentAt: sql`now()`,
        error: null,
      }),
    )
    .where(tenant.where(messages, eq(messages.id, id)))
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

/**
 * Claims the number's oldest queued message (queued → sending), skipping one another process is
 * claiming: messages from one number go out in the order they were sent to the API.
 */
export async function claimOldestQueued(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
): Promise<MessageRow | undefined> {
  const oldest = ex
    .select({ id: messages.id })
    .from(messages)
    .where(tenant.where(messages, eq(messages.phoneNumberId, phoneNumberId), eq(messages.status, 'queued')))
    .orderBy(asc(messages.createdAt), asc(messages.id))
    .limit(1)
    .for('update', { skipLocked: true });
  const [row] = await ex
    .update(messages)
    .set(withUpdatedAt({ status: 'sending', attempts: sql`${messages.attempts} + 1` }))
    .where(and(tenant.owns(messages), sql`${messages.id} = (${oldest})`))
    .returning();
  return row;
}

/**
 * How many of the number's queued messages were queued before `message` (its place in the line):
 * a send job that lost its turn comes back when its place is due instead of with every other job
 * at the next turn.
 */
export async function queuedAhead(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  message: { id: string; createdAt: Date },
): Promise<number> {
  const [row] = await ex
    .select({ count: sql<number>`count(*)::int` })
    .from(messages)
    .where(
      tenant.where(
        messages,
        eq(messages.phoneNumberId, phoneNumberId),
        eq(messages.status, 'queued'),
        sql`(${messages.createdAt}, ${messages.id}) < (${message.createdAt.toISOString()}::timestamptz, ${message.id}::uuid)`,
      ),
    );
  return row?.count ?? 0;
}

/**
 * Marks messages left in `sending` longer than `olderThanSeconds` (their process died between the
 * claim and the carrier's answer) as failed: the carrier may have taken them, so they are not resent.
 */
export async function failInterrupted(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  olderThanSeconds: number,
  error: string,
): Promise<number> {
  const rows = await ex
    .update(messages)
    .set(withUpdatedAt({ status: 'failed', error }))
    .where(
      tenant.where(
        messages,
        eq(messages.phoneNumberId, phoneNumberId),
        eq(messages.status, 'sending'),
        sql`${messages.updatedAt} < now() - make_interval(secs => ${olderThanSeconds}::float8)`,
      ),
    )
    .returning({ id: messages.id });
  return rows.length;
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

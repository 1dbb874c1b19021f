/** SQL of messages and their idempotency keys (the drain's claim and records: drain-store.ts). */
import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { messages, smsIdempotencyKeys } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import { configVersionOfRowIn } from '../runtime/versioned-cache.js';

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

/**
 * How far along each status is: a delivery receipt moves a message only forward (receipts arrive
 * out of order; `sent` after `delivered` changes nothing). Statuses not named count as 0.
 */
export const RECEIPT_ORDER: Record<string, number> = {
  queued: 0,
  sending: 1,
  sent: 2,
  delivered: 3,
  undelivered: 3,
  failed: 3,
};

function receiptRank(status: SQL): SQL {
  const cases = Object.entries(RECEIPT_ORDER).map(
    ([name, rank]) => sql`when ${name}::text then ${rank}::int`,
  );
  return sql`(case ${status} ${sql.join(cases, sql` `)} else 0 end)`;
}

/**
 * Applies a delivery receipt in one statement, unless the message's assistant wants SMS events
 * (`forwarded`, a boolean expression over the message's `assistant_id`; the caller then applies it
 * with the event in a transaction): the status moves only forward, decided under the row's lock by
 * the update itself, so concurrent receipts apply in turn and the later status wins.
 */
export async function applyReceiptUnlessForwarded(
  ex: Executor,
  tenant: Tenant,
  id: string,
  receipt: { status: string; error?: string },
  forwarded: (assistantId: SQL) => SQL,
): Promise<'applied' | 'unchanged' | 'forwarded'> {
  const result = (await ex.execute(sql`
    with target as (
      select m.id, ${forwarded(sql`m.assistant_id`)} as forwarded from messages as m
      where m.organization_id = ${tenant.organizationId}::int and m.id = ${id}::uuid
    ),
    updated as (
      update messages as m set status = ${receipt.status}::text,
        delivered_at = case when ${receipt.status}::text = 'delivered' then now() else m.delivered_at end,
        error = coalesce(${receipt.error ?? null}::text, m.error), updated_at = now()
      from target
      where m.id = target.id and not target.forwarded
        and ${receiptRank(sql`m.status`)} < ${RECEIPT_ORDER[receipt.status] ?? 0}::int
      returning m.id
    )
    select coalesce((select forwarded from target), false) as forwarded,
      exists (select 1 from updated) as applied`)) as unknown as {
    rows: Array<{ forwarded: boolean; applied: boolean }>;
  };
  const row = result.rows[0]!;
  if (row.forwarded) return 'forwarded';
  return row.applied ? 'applied' : 'unchanged';
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
  /**
   * The message with its organization's configuration version, read in the same statement (a
   * receipt's signature is verified with credentials kept at that version, credential-cache.ts).
   */
  async messageWithConfigVersion(
    ex: Executor,
    by: { id: string } | { provider: string; providerMessageId: string },
  ): Promise<{ message: MessageRow; configVersion: number } | undefined> {
    const [row] = await ex
      .select({
        message: messages,
        configVersion: configVersionOfRowIn('messages'),
      })
      .from(messages)
      .where(
        'id' in by
          ? eq(messages.id, by.id)
          : and(eq(messages.provider, by.provider), eq(messages.providerMessageId, by.providerMessageId)),
      )
      .limit(1);
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

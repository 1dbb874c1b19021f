/** SQL of phone numbers. */
import { and, asc, eq, getTableColumns, sql } from 'drizzle-orm';
import { scopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import { assistants, phoneNumbers } from '../../db/schema/index.js';
import { ownedByPlaceholder, type Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type PhoneNumberRow = typeof phoneNumbers.$inferSelect & { assistantName: string | null };
export type PhoneNumberValues = Pick<
  typeof phoneNumbers.$inferInsert,
  'phoneNumber' | 'provider' | 'friendlyName' | 'assistantId' | 'graphId' | 'smsRatePerSecond'
>;

// The foreign key keeps a number's assistant inside its organization, so the join needs no tenant filter.
const withAssistantName = { ...getTableColumns(phoneNumbers), assistantName: assistants.name };

function selectWithAssistant(ex: Executor) {
  return ex
    .select(withAssistantName)
    .from(phoneNumbers)
    .leftJoin(assistants, eq(assistants.id, phoneNumbers.assistantId));
}

export async function findPhoneNumber(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { forUpdate?: boolean } = {},
): Promise<PhoneNumberRow | undefined> {
  if (options.forUpdate) {
    const [locked] = await ex
      .select({ id: phoneNumbers.id })
      .from(phoneNumbers)
      .where(tenant.where(phoneNumbers, eq(phoneNumbers.id, id)))
      .for('update');
    if (!locked) return undefined;
  }
  const [row] = await selectWithAssistant(ex).where(tenant.where(phoneNumbers, eq(phoneNumbers.id, id)));
  return row;
}

/** The organization's row for an E.164 number, if it has one. */
export async function findByNumber(
  ex: Executor,
  tenant: Tenant,
  phoneNumber: string,
): Promise<PhoneNumberRow | undefined> {
  const [row] = await numberRead(ex, tenant, { phoneNumber });
  return row;
}

const numberRead = scopedStatement((ex) =>
  selectWithAssistant(ex).where(
    and(ownedByPlaceholder(phoneNumbers), eq(phoneNumbers.phoneNumber, sql.placeholder('phoneNumber'))),
  ),
);

export async function listPhoneNumbers(
  ex: Executor,
  tenant: Tenant,
  options: { skip: number; limit: number; assistantId?: number; provider?: string },
): Promise<{ rows: PhoneNumberRow[]; total: number }> {
  const where = tenant.where(
    phoneNumbers,
    options.assistantId === undefined ? undefined : eq(phoneNumbers.assistantId, options.assistantId),
    options.provider === undefined ? undefined : eq(phoneNumbers.provider, options.provider),
  );
  const [rows, [count]] = await Promise.all([
    selectWithAssistant(ex)
      .where(where)
      .orderBy(asc(phoneNumbers.id))
      .limit(options.limit)
      .offset(options.skip),
    ex.select({ n: sql<number>`count(*)::int` }).from(phoneNumbers).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/** The first number (lowest id) routed to an assistant: where its calls go out from by default. */
export async function firstNumberOfAssistant(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<PhoneNumberRow | undefined> {
  const [row] = await firstNumberRead(ex, tenant, { assistantId });
  return row;
}

const firstNumberRead = scopedStatement((ex) =>
  selectWithAssistant(ex)
    .where(
      and(ownedByPlaceholder(phoneNumbers), eq(phoneNumbers.assistantId, sql.placeholder('assistantId'))),
    )
    .orderBy(asc(phoneNumbers.id))
    .limit(1),
);

/**
 * The numbers routed to an assistant, or to a graph, lowest id first: the 409 that protects either
 * from deletion names them.
 */
export async function numbersRoutedTo(
  ex: Executor,
  tenant: Tenant,
  target: { assistantId: number } | { graphId: number },
): Promise<Array<{ id: number; phoneNumber: string }>> {
  const routed =
    'assistantId' in target
      ? eq(phoneNumbers.assistantId, target.assistantId)
      : eq(phoneNumbers.graphId, target.graphId);
  return ex
    .select({ id: phoneNumbers.id, phoneNumber: phoneNumbers.phoneNumber })
    .from(phoneNumbers)
    .where(tenant.where(phoneNumbers, routed))
    .orderBy(asc(phoneNumbers.id));
}

/** Inserts the number; undefined when the number is registered already (anywhere). */
export async function insertPhoneNumber(
  ex: Executor,
  tenant: Tenant,
  values: PhoneNumberValues,
): Promise<number | undefined> {
  const [row] = await ex
    .insert(phoneNumbers)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing({ target: phoneNumbers.phoneNumber })
    .returning({ id: phoneNumbers.id });
  return row?.id;
}

export async function updatePhoneNumber(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<PhoneNumberValues>,
): Promise<boolean> {
  const rows = await ex
    .update(phoneNumbers)
    .set(withUpdatedAt(changes))
    .where(and(tenant.owns(phoneNumbers), eq(phoneNumbers.id, id)))
    .returning({ id: phoneNumbers.id });
  return rows.length === 1;
}

export async function deletePhoneNumber(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const rows = await ex
    .delete(phoneNumbers)
    .where(tenant.where(phoneNumbers, eq(phoneNumbers.id, id)))
    .returning({ id: phoneNumbers.id });
  return rows.length === 1;
}

/**
 * The number's row on the whole platform, whichever organization owns it: for carrier webhooks
 * (trusted only after the owner's signature check) and for telling "another organization's number"
 * (403) from "none" (404) on call initiation.
 */
export async function findNumberOnPlatform(
  ex: Executor,
  e164: string,
): Promise<typeof phoneNumbers.$inferSelect | undefined> {
  const [row] = await ex.select().from(phoneNumbers).where(eq(phoneNumbers.phoneNumber, e164)).limit(1);
  return row;
}

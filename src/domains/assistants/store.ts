/** SQL of assistants. */
import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import { scopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import { assistants } from '../../db/schema/index.js';
import { ownedByPlaceholder, type Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type AssistantRow = typeof assistants.$inferSelect;
type Values = Pick<AssistantRow, 'name' | 'description' | 'isActive' | 'llmProvider' | 'config'>;

export async function insertAssistant(
  ex: Executor,
  tenant: Tenant,
  values: Values & { userId: number },
): Promise<AssistantRow | undefined> {
  const [row] = await ex
    .insert(assistants)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing()
    .returning();
  return row;
}

/** The assistant by id, built once: calls and campaign attempts read it for every call. */
const assistantRead = scopedStatement((ex) =>
  ex
    .select()
    .from(assistants)
    .where(and(ownedByPlaceholder(assistants), eq(assistants.id, sql.placeholder('id'))))
    .limit(1),
);

export async function findAssistant(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { forUpdate?: boolean } = {},
): Promise<AssistantRow | undefined> {
  if (!options.forUpdate) {
    const [row] = await assistantRead(ex, tenant, { id });
    return row;
  }
  const query = ex
    .select()
    .from(assistants)
    .where(tenant.where(assistants, eq(assistants.id, id)))
    .limit(1);
  const [row] = await query.for('update');
  return row;
}

export async function listAssistants(
  ex: Executor,
  tenant: Tenant,
  options: { skip: number; limit: number; activeOnly: boolean },
): Promise<{ rows: AssistantRow[]; total: number }> {
  const where = tenant.where(assistants, options.activeOnly ? eq(assistants.isActive, true) : undefined);
  const [rows, [count]] = await Promise.all([
    ex
      .select()
      .from(assistants)
      .where(where)
      .orderBy(asc(assistants.id))
      .limit(options.limit)
      .offset(options.skip),
    ex.select({ n: sql<number>`count(*)::int` }).from(assistants).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

export async function updateAssistant(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<Values>,
): Promise<AssistantRow | undefined> {
  const [row] = await ex
    .update(assistants)
    .set(withUpdatedAt(changes))
    .where(and(tenant.owns(assistants), eq(assistants.id, id)))
    .returning();
  return row;
}

export async function deleteAssistant(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const rows = await ex
    .delete(assistants)
    .where(tenant.where(assistants, eq(assistants.id, id)))
    .returning({ id: assistants.id });
  return rows.length === 1;
}

/**
 * Which providers the organization's assistants carry their own credentials for, without opening
 * any secret: one row per (llm provider, tts provider) pair, each flag true if any assistant has it.
 */
export async function assistantKeySources(
  ex: Executor,
  tenant: Tenant,
): Promise<
  Array<{
    llmProvider: string;
    ttsProvider: string | null;
    llmKey: boolean;
    customUrl: boolean;
    sttKey: boolean;
    ttsKey: boolean;
    carrierA: boolean;
    carrierB: boolean;
  }>
> {
  const isString = (path: string) => sql`bool_or(jsonb_typeof(${assistants.config} #> ${path}) = 'string')`;
  const isObject = (path: string) => sql`bool_or(jsonb_typeof(${assistants.config} #> ${path}) = 'object')`;
  const ttsProvider = sql<string | null>`${assistants.config} #>> '{tts_settings,provider}'`;
  return ex
    .select({
      llmProvider: assistants.llmProvider,
      ttsProvider,
      llmKey: isString('{llm_provider_config,api_key}').mapWith(Boolean),
      customUrl: isString('{llm_provider_config,base_url}').mapWith(Boolean),
      sttKey: isString('{stt_settings,api_key}').mapWith(Boolean),
      ttsKey:
        sql`${isString('{tts_settings,api_key}')} or ${isString('{tts_settings,provider_config,api_key}')}`.mapWith(
          Boolean,
        ),
      carrierA: isObject('{carrier_a_config}').mapWith(Boolean),
      carrierB: isObject('{carrier_b_config}').mapWith(Boolean),
    })
    .from(assistants)
    .where(tenant.owns(assistants))
    .groupBy(assistants.llmProvider, ttsProvider);
}

/** Where an assistant wants its call and SMS events (`webhook_url`, `sms_webhook_url`), if anywhere. */
export async function assistantEventUrls(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<{ webhookUrl: string | null; smsWebhookUrl: string | null } | undefined> {
  const [row] = await ex
    .select({
      webhookUrl: sql<string | null>`${assistants.config} ->> 'webhook_url'`,
      smsWebhookUrl: sql<string | null>`${assistants.config} ->> 'sms_webhook_url'`,
    })
    .from(assistants)
    .where(tenant.where(assistants, eq(assistants.id, id)));
  return row;
}

/**
 * A `boolean` SQL expression: whether the tenant's assistant `assistantId` (an `int` expression of
 * the caller's statement; null for none) wants SMS events (`sms_webhook_url`) — for a statement that
 * decides on it in the same round trip (the SMS receipts).
 */
export function forwardsSmsEvents(tenant: Tenant, assistantId: SQL): SQL {
  return sql`coalesce((select ${assistants.config} ->> 'sms_webhook_url' is not null from ${assistants}
    where ${assistants.organizationId} = ${tenant.organizationId}::int and ${assistants.id} = ${assistantId}), false)`;
}

/** Platform-wide on purpose: call initiation tells "another organization's" assistant (403) from "none" (404). */
export const unscoped = {
  /** The organization an assistant belongs to. */
  async assistantOrganization(ex: Executor, id: number): Promise<number | undefined> {
    const [row] = await ex
      .select({ organizationId: assistants.organizationId })
      .from(assistants)
      .where(eq(assistants.id, id))
      .limit(1);
    return row?.organizationId;
  },
};

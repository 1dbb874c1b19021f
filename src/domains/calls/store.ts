/** SQL of call records and their events. */
import { and, asc, desc, eq, gte, inArray, isNull, lte, type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { rowOf, scopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import {
  assistants,
  type CallStatus,
  callAnalyses,
  callEvents,
  callSearchDocuments,
  calls,
} from '../../db/schema/index.js';
import { ORGANIZATION_PLACEHOLDER, ownedByPlaceholder, type Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import { COUNTED_EVENTS, rollUpEvent, rollupSubjectOf } from './rollups.js';
import { digitArrayLiteral, phoneLexemes } from './search-terms.js';

export type CallRow = typeof calls.$inferSelect;
export type NewCall = Omit<typeof calls.$inferInsert, 'id' | 'organizationId' | 'createdAt' | 'updatedAt'>;
/** What a call's update may change. */
export type CallChanges = Partial<Omit<CallRow, 'id' | 'organizationId' | 'createdAt'>>;

/**
 * Inserts a call with its search document and, when given, its first event — in one statement. The
 * search document starts with the call's phone numbers, until transcript segments add their words.
 */
export async function insertCall(
  ex: Executor,
  tenant: Tenant,
  values: NewCall,
  event?: CallEventValues,
): Promise<CallRow> {
  const inserted = ex
    .insert(calls)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  const document = phoneDocument([values.fromPhoneNumber, values.toPhoneNumber, values.customerPhoneNumber]);
  const recorded = event ? sql`, recorded as (${eventOfRowsIn('call', event)})` : sql``;
  const result = (await ex.execute(sql`with call as (${inserted.getSQL()}),
    document as (insert into ${callSearchDocuments} (call_id, organization_id, assistant_id, document)
      select id, organization_id, assistant_id, ${document} from call)
    ${recorded}
    select * from call`)) as unknown as { rows: Array<Record<string, unknown>> };
  return rowOf(calls, result.rows[0]!);
}

/** A call's event, as the store writes it. */
export interface CallEventValues {
  type: string;
  data: Record<string, unknown>;
}

/**
 * The insert of `event` for each call row a WITH query named `cte` returned (with its `id` and
 * `organization_id`): the event is written by the statement that wrote the call, and only if it did.
 */
function eventOfRowsIn(cte: string, event: CallEventValues): SQL {
  return sql`insert into ${callEvents} (organization_id, call_id, type, data)
    select organization_id, id, ${event.type}, ${JSON.stringify(event.data)}::jsonb from ${sql.identifier(cte)}`;
}

/** A new call's search document: its phone numbers, until transcript segments add their words. */
function phoneDocument(numbers: Array<string | null | undefined>): SQL {
  return sql`setweight(array_to_tsvector(${digitArrayLiteral(phoneLexemes(numbers))}::text[]), 'A')`;
}

async function insertSearchDocument(ex: Executor, tenant: Tenant, call: CallRow): Promise<void> {
  await ex.insert(callSearchDocuments).values({
    callId: call.id,
    organizationId: tenant.organizationId,
    assistantId: call.assistantId,
    document: phoneDocument([call.fromPhoneNumber, call.toPhoneNumber, call.customerPhoneNumber]),
  });
}

/** Inserts a call the carrier announced, once per carrier call id; undefined when it exists. */
export async function insertCallOnce(
  ex: Executor,
  tenant: Tenant,
  values: NewCall,
): Promise<CallRow | undefined> {
  const [row] = await ex
    .insert(calls)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing({ target: [calls.provider, calls.callSid] })
    .returning();
  if (row) await insertSearchDocument(ex, tenant, row);
  return row;
}

/** A call with its assistant's `webhook_url` (null when it has none). */
export interface CallWithWebhook {
  call: CallRow;
  webhookUrl: string | null;
}

/** The `webhook_url` of the call's assistant, in a select from `calls`. */
export const assistantWebhookUrl =
  // Spelled out: in a one-table select Drizzle leaves columns unqualified.
  sql<string | null>`(select nullif(a.config ->> 'webhook_url', '') from ${assistants} a
    where a.id = "calls"."assistant_id" and a.organization_id = "calls"."organization_id")`;

/**
 * The call locked for a status change, with its assistant's `webhook_url`: what a status callback
 * reads before it writes, in one statement.
 */
export async function lockCallForStatus(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<CallWithWebhook | undefined> {
  const [row] = await lockCallForStatusStatement(ex, tenant, { id });
  return row;
}

const lockCallForStatusStatement = scopedStatement((ex) =>
  ex
    .select({ call: calls, webhookUrl: assistantWebhookUrl })
    .from(calls)
    .where(and(ownedByPlaceholder(calls), eq(calls.id, sql.placeholder('id'))))
    .limit(1)
    .for('update', { of: calls }),
);

/**
 * Changes a call and records `event`, in one statement — only if the call is still as `seen` (every
 * column a status decision reads: status, carrier id, `call_meta`, start) and, when `noWebhookUrl`,
 * its assistant has no `webhook_url`. False when it is not (the caller then decides under the lock).
 */
export async function moveCallIfUnchanged(
  ex: Executor,
  tenant: Tenant,
  seen: CallRow,
  changes: CallChanges,
  event: CallEventValues,
  options: { noWebhookUrl: boolean },
): Promise<boolean> {
  if (COUNTED_EVENTS.has(event.type)) return false;
  const moved = ex
    .update(calls)
    .set(withUpdatedAt(changes))
    .where(
      tenant.where(
        calls,
        eq(calls.id, seen.id),
        eq(calls.status, seen.status),
        seen.callSid === null ? isNull(calls.callSid) : eq(calls.callSid, seen.callSid),
        sql`${calls.callMeta} = ${JSON.stringify(seen.callMeta)}::jsonb`,
        seen.startedAt === null ? isNull(calls.startedAt) : eq(calls.startedAt, seen.startedAt),
        options.noWebhookUrl ? sql`${assistantWebhookUrl} is null` : undefined,
      ),
    )
    .returning({ id: calls.id, organizationId: calls.organizationId });
  const result = (await ex.execute(
    sql`with moved as (${moved.getSQL()}) ${eventOfRowsIn('moved', event)} returning 1`,
  )) as unknown as { rows: unknown[] };
  return result.rows.length > 0;
}

export async function findCall(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { forUpdate?: boolean } = {},
): Promise<CallRow | undefined> {
  const [row] = await (options.forUpdate ? findCallForUpdateStatement : findCallStatement)(ex, tenant, {
    id,
  });
  return row;
}

const callById = (ex: Executor) =>
  ex
    .select()
    .from(calls)
    .where(and(ownedByPlaceholder(calls), eq(calls.id, sql.placeholder('id'))))
    .limit(1);
const findCallStatement = scopedStatement((ex) => callById(ex));
const findCallForUpdateStatement = scopedStatement((ex) => callById(ex).for('update'));

/** Which calls a listing or an export covers; dates bound `created_at` (inclusive). */
export interface CallFilter {
  status?: CallStatus;
  assistantId?: number;
  dateFrom?: Date;
  dateTo?: Date;
}

export function callFilterSql(tenant: Tenant, filter: CallFilter): SQL {
  return tenant.where(
    calls,
    filter.status !== undefined ? eq(calls.status, filter.status) : undefined,
    filter.assistantId !== undefined ? eq(calls.assistantId, filter.assistantId) : undefined,
    filter.dateFrom !== undefined ? gte(calls.createdAt, filter.dateFrom) : undefined,
    filter.dateTo !== undefined ? lte(calls.createdAt, filter.dateTo) : undefined,
  );
}

/** A page of the organization's calls, newest first, and how many match in all. */
export async function listCalls(
  ex: Executor,
  tenant: Tenant,
  filter: CallFilter,
  page: { skip: number; limit: number },
): Promise<{ rows: CallRow[]; total: number }> {
  const where = callFilterSql(tenant, filter);
  const [rows, [counted]] = await Promise.all([
    ex
      .select()
      .from(calls)
      .where(where)
      .orderBy(desc(calls.createdAt), desc(calls.id))
      .offset(page.skip)
      .limit(page.limit),
    ex.select({ total: sql<number>`count(*)::int` }).from(calls).where(where),
  ]);
  return { rows, total: counted?.total ?? 0 };
}

/** Calls by id, in no particular order (the organization's only). */
export async function callsByIds(ex: Executor, tenant: Tenant, ids: number[]): Promise<CallRow[]> {
  if (ids.length === 0) return [];
  return ex
    .select()
    .from(calls)
    .where(tenant.where(calls, inArray(calls.id, ids)));
}

/** Compiles statements that run outside Drizzle's query builder (a database cursor). */
const dialect = new PgDialect();

/**
 * The export's rows, oldest first, as one SQL statement for a database cursor: the columns are
 * named as the JSON export names its keys.
 */
export function exportQuery(tenant: Tenant, filter: CallFilter): { sql: string; params: unknown[] } {
  return dialect.sqlToQuery(sql`select ${calls.id} as "id", ${calls.callSid} as "call_sid", ${assistants.name} as "assistant_name",
      ${calls.customerPhoneNumber} as "customer_phone_number", ${calls.status} as "status",
      ${calls.duration} as "duration", ${calls.startedAt} as "started_at", ${calls.endedAt} as "ended_at",
      ${callAnalyses.summary} as "summary", ${callAnalyses.sentiment} as "sentiment",
      ${callAnalyses.sentimentScore} as "sentiment_score", ${callAnalyses.structuredData} as "structured_data"
    ${exportSource(tenant, filter)}`);
}

/**
 * Where the export's rows come from and in which order: the organization's calls the filter keeps,
 * each with its assistant and its analysis, oldest first (the COPY export of export-copy.ts too).
 */
export function exportSource(tenant: Tenant, filter: CallFilter): SQL {
  return sql`from ${calls} left join ${assistants} on ${assistants.id} = ${calls.assistantId}
      left join ${callAnalyses} on ${callAnalyses.callId} = ${calls.id}
        and ${callAnalyses.organizationId} = ${calls.organizationId}
    where ${callFilterSql(tenant, filter)}
    order by ${asc(calls.createdAt)}, ${asc(calls.id)}`;
}

export async function updateCall(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: CallChanges,
): Promise<CallRow | undefined> {
  const [row] = await ex
    .update(calls)
    .set(withUpdatedAt(changes))
    .where(and(tenant.owns(calls), eq(calls.id, id)))
    .returning();
  return row;
}

/** `updateCall` and the event that says what changed, in one statement. */
export async function updateCallWithEvent(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: CallChanges,
  event: CallEventValues,
): Promise<CallRow | undefined> {
  if (COUNTED_EVENTS.has(event.type)) {
    const updated = await updateCall(ex, tenant, id, changes);
    await insertCallEvent(ex, tenant, id, event.type, event.data);
    return updated;
  }
  const updated = ex
    .update(calls)
    .set(withUpdatedAt(changes))
    .where(and(tenant.owns(calls), eq(calls.id, id)))
    .returning();
  const result = (await ex.execute(sql`with updated as (${updated.getSQL()}),
    recorded as (${eventOfRowsIn('updated', event)})
    select * from updated`)) as unknown as { rows: Array<Record<string, unknown>> };
  const [row] = result.rows;
  return row ? rowOf(calls, row) : undefined;
}

/** Deletes a call; its transcript, turns, events, recording and analysis rows go with it (cascades). */
export async function deleteCall(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const deleted = await ex
    .delete(calls)
    .where(tenant.where(calls, eq(calls.id, id)))
    .returning({ id: calls.id });
  return deleted.length > 0;
}

/** Sets the carrier's call id unless a webhook that arrived first already did. */
export async function setCallSid(ex: Executor, tenant: Tenant, id: number, callSid: string): Promise<void> {
  await ex
    .update(calls)
    .set(withUpdatedAt({ callSid }))
    .where(tenant.where(calls, eq(calls.id, id), sql`${calls.callSid} is null`));
}

/**
 * A dialled call: the carrier's id kept (unless a webhook that arrived first did) and the
 * `call.placed` event recorded, in one statement.
 */
export async function recordPlaced(ex: Executor, tenant: Tenant, id: number, callSid: string): Promise<void> {
  const kept = ex
    .update(calls)
    .set(withUpdatedAt({ callSid }))
    .where(tenant.where(calls, eq(calls.id, id), sql`${calls.callSid} is null`));
  const event = ex.insert(callEvents).values({
    organizationId: tenant.organizationId,
    callId: id,
    type: 'call.placed',
    data: { call_sid: callSid },
  });
  await ex.execute(sql`with kept as (${kept.getSQL()}) ${event.getSQL()}`);
}

/** Links the call to its graph session unless it is linked already; the session it is linked to. */
export async function linkGraphSession(
  ex: Executor,
  tenant: Tenant,
  id: number,
  sessionId: number,
): Promise<number | null | undefined> {
  const [linked] = await ex
    .update(calls)
    .set(withUpdatedAt({ graphSessionId: sessionId }))
    .where(tenant.where(calls, eq(calls.id, id), sql`${calls.graphSessionId} is null`))
    .returning({ graphSessionId: calls.graphSessionId });
  if (linked) return linked.graphSessionId;
  return (await findCall(ex, tenant, id))?.graphSessionId;
}

export async function insertCallEvent(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  type: string,
  data: Record<string, unknown> = {},
): Promise<void> {
  if (!COUNTED_EVENTS.has(type)) {
    await insertCallEventStatement(ex, tenant, { callId, type, data });
    return;
  }
  // A tool use or a transfer is counted in the call analytics with the event, atomically.
  await ex.transaction(async (tx) => {
    const call = await rollupSubjectOf(tx, tenant, callId);
    await tx.insert(callEvents).values({ organizationId: tenant.organizationId, callId, type, data });
    if (call) await rollUpEvent(tx, tenant.organizationId, call, type, data);
  });
}

const insertCallEventStatement = scopedStatement((ex) =>
  ex.insert(callEvents).values({
    organizationId: sql.placeholder(ORGANIZATION_PLACEHOLDER),
    callId: sql.placeholder('callId'),
    type: sql.placeholder('type'),
    data: sql.placeholder('data'),
  }),
);

export type CallEventRow = typeof callEvents.$inferSelect;

/** The call's events in the order they happened, optionally of one type. */
export async function eventsOf(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  options: { type?: string; skip: number; limit: number },
): Promise<CallEventRow[]> {
  return ex
    .select()
    .from(callEvents)
    .where(
      tenant.where(
        callEvents,
        eq(callEvents.callId, callId),
        options.type === undefined ? undefined : eq(callEvents.type, options.type),
      ),
    )
    .orderBy(asc(callEvents.id))
    .offset(options.skip)
    .limit(options.limit);
}

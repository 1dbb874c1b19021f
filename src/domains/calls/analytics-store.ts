/**
 * SQL of call analytics: sums of the rollup rows (`db/schema/call-rollups.ts`) over a range of whole
 * hours. A range reads day rows for the UTC days it covers whole and hour rows for its ragged ends,
 * so a year is ~365 rows per assistant and number, not 8,760. Histograms are summed bucket by bucket
 * in SQL (one `sum` per bucket; a bucket outside a row's stored span reads NULL, which `sum` skips),
 * so only the sums leave the database: on a server that measured 1.6× faster than adding the rows'
 * arrays up in Node, and 2.4× faster than `unnest`-ing them.
 */
import { inArray, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { assistants } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { HISTOGRAM_SIZE } from './histogram.js';
import { HISTOGRAMS, type HistogramName } from './rollups.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Which rows a report reads: [from, to) in whole UTC hours, the organization's, maybe one assistant or number. */
export interface RollupRange {
  from: Date;
  to: Date;
  assistantId?: number;
  phoneNumber?: string;
}

/** Counters summed over rows (cost and duration as numbers). */
export interface Counters {
  calls: number;
  completed: number;
  voicemail: number;
  busy: number;
  noAnswer: number;
  failed: number;
  canceled: number;
  inbound: number;
  outbound: number;
  durationSeconds: number;
  cost: number;
  transfers: number;
  turns: number;
  interruptedTurns: number;
}

export interface GroupFigures extends Counters {
  assistantId: number;
  phoneNumber: string;
  histograms: Record<HistogramName, number[]>;
}

const COUNTERS: Array<keyof Counters> = [
  'calls',
  'completed',
  'voicemail',
  'busy',
  'noAnswer',
  'failed',
  'canceled',
  'inbound',
  'outbound',
  'durationSeconds',
  'cost',
  'transfers',
  'turns',
  'interruptedTurns',
];

const COUNTER_SQL = sql.raw(`sum(calls)::int as "calls", sum(completed)::int as "completed",
  sum(voicemail)::int as "voicemail", sum(busy)::int as "busy", sum(no_answer)::int as "noAnswer",
  sum(failed)::int as "failed", sum(canceled)::int as "canceled", sum(inbound)::int as "inbound",
  sum(outbound)::int as "outbound", sum(duration_seconds)::float8 as "durationSeconds",
  sum(cost)::float8 as "cost", sum(transfers)::int as "transfers", sum(turns)::int as "turns",
  sum(interrupted_turns)::int as "interruptedTurns"`);

/**
 * `sum(h[1]), …, sum(h[n])` for each histogram column, as one comma-separated text: the drivers
 * return integer arrays differently, a text the same.
 */
const HISTOGRAM_SQL = sql.raw(
  Object.entries(HISTOGRAMS)
    .map(([name, column]) => {
      const sums = Array.from({ length: HISTOGRAM_SIZE }, (_, i) => `sum(${column}[${i + 1}])`);
      return `array_to_string(array[${sums.join(', ')}], ',', '0') as "histogram_${name}"`;
    })
    .join(', '),
);

/** The start of the first UTC day at or after `at`, and of the UTC day `at` falls in. */
const ceilDay = (at: Date) => new Date(Math.ceil(at.getTime() / DAY_MS) * DAY_MS);
const floorDay = (at: Date) => new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
const ts = (at: Date) => sql`${at.toISOString()}::timestamptz`;

/**
 * The rows that cover [from, to) exactly once: day rows for the whole UTC days inside it, hour rows
 * for the hours before the first and after the last of them (or hour rows only, without a whole day).
 */
function coveringRows(range: RollupRange, table: 'call_rollups' | 'call_tool_rollups'): SQL {
  const t = sql.raw(table);
  const firstDay = ceilDay(range.from);
  const lastDay = floorDay(range.to);
  if (firstDay >= lastDay)
    return sql`(${t}.hours = 1 and ${t}.period_start >= ${ts(range.from)} and ${t}.period_start < ${ts(range.to)})`;
  return sql`((${t}.hours = 24 and ${t}.period_start >= ${ts(firstDay)} and ${t}.period_start < ${ts(lastDay)})
    or (${t}.hours = 1 and ((${t}.period_start >= ${ts(range.from)} and ${t}.period_start < ${ts(firstDay)})
      or (${t}.period_start >= ${ts(lastDay)} and ${t}.period_start < ${ts(range.to)}))))`;
}

function scope(tenant: Tenant, range: RollupRange, table: 'call_rollups' | 'call_tool_rollups'): SQL {
  const t = sql.raw(table);
  return sql.join(
    [
      sql`${t}.organization_id = ${tenant.organizationId}`,
      coveringRows(range, table),
      ...(range.assistantId !== undefined ? [sql`${t}.assistant_id = ${range.assistantId}`] : []),
      ...(range.phoneNumber !== undefined ? [sql`${t}.phone_number = ${range.phoneNumber}`] : []),
    ],
    sql` and `,
  );
}

type Rows<T> = { rows: T[] };

/** Counters and histograms per (assistant, number) over the range: totals and breakdowns add these up. */
export async function figuresByGroup(
  ex: Executor,
  tenant: Tenant,
  range: RollupRange,
): Promise<GroupFigures[]> {
  const result = (await ex.execute(sql`
    select assistant_id as "assistantId", phone_number as "phoneNumber", ${COUNTER_SQL}, ${HISTOGRAM_SQL}
    from call_rollups where ${scope(tenant, range, 'call_rollups')}
    group by assistant_id, phone_number`)) as unknown as Rows<Record<string, unknown>>;
  return result.rows.map((row) => {
    const histograms = {} as Record<HistogramName, number[]>;
    for (const name of Object.keys(HISTOGRAMS) as HistogramName[])
      histograms[name] = String(row[`histogram_${name}`]).split(',').map(Number);
    const counters = Object.fromEntries(COUNTERS.map((name) => [name, Number(row[name])]));
    return {
      ...(counters as unknown as Counters),
      assistantId: Number(row.assistantId),
      phoneNumber: String(row.phoneNumber),
      histograms,
    };
  });
}

/**
 * Counters per local date of `timeZone` (YYYY-MM-DD). `byUtcDay` when the zone is UTC over the
 * range, so day rows are local days; otherwise each hour row goes to the local date it starts on.
 */
export async function countersByDay(
  ex: Executor,
  tenant: Tenant,
  range: RollupRange,
  timeZone: string,
  byUtcDay: boolean,
): Promise<Array<Counters & { date: string }>> {
  const where = byUtcDay
    ? scope(tenant, range, 'call_rollups')
    : sql`call_rollups.organization_id = ${tenant.organizationId} and call_rollups.hours = 1
        and call_rollups.period_start >= ${ts(range.from)} and call_rollups.period_start < ${ts(range.to)}
        ${range.assistantId !== undefined ? sql`and call_rollups.assistant_id = ${range.assistantId}` : sql``}
        ${range.phoneNumber !== undefined ? sql`and call_rollups.phone_number = ${range.phoneNumber}` : sql``}`;
  const result = (await ex.execute(sql`
    select to_char((period_start at time zone ${timeZone})::date, 'YYYY-MM-DD') as "date", ${COUNTER_SQL}
    from call_rollups where ${where}
    group by 1`)) as unknown as Rows<Counters & { date: string }>;
  return result.rows;
}

/** Uses and failures per tool name, most used first. */
export async function toolUse(
  ex: Executor,
  tenant: Tenant,
  range: RollupRange,
): Promise<Array<{ name: string; calls: number; failures: number }>> {
  const result = (await ex.execute(sql`
    select tool as "name", sum(uses)::int as "calls", sum(failures)::int as "failures"
    from call_tool_rollups where ${scope(tenant, range, 'call_tool_rollups')}
    group by tool order by 2 desc, 1`)) as unknown as Rows<{ name: string; calls: number; failures: number }>;
  return result.rows;
}

/** Names of the organization's assistants among `ids` (a deleted one has none). */
export async function assistantNames(
  ex: Executor,
  tenant: Tenant,
  ids: number[],
): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await ex
    .select({ id: assistants.id, name: assistants.name })
    .from(assistants)
    .where(tenant.where(assistants, inArray(assistants.id, ids)));
  return new Map(rows.map((row) => [row.id, row.name]));
}

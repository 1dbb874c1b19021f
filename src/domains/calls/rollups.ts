/**
 * Keeping the call analytics rollups (`db/schema/call-rollups.ts`) true: each fact they count is
 * added — to its hour row and its UTC-day row, in one upsert — by the transaction that records it:
 * a call reaching its final status, a turn stored (a turn written again replaces its figures), a
 * `call.tool` or `call.transferred` event. Everything a call adds goes to the period of its
 * `created_at`, under its assistant and our number on it.
 */
import { eq, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { calls } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { bucketOf } from './histogram.js';

type CallRow = typeof calls.$inferSelect;

/** What a rollup row is keyed by, besides its period. */
export interface RollupSubject {
  createdAt: Date;
  assistantId: number | null;
  fromPhoneNumber: string;
}

/** The call's rollup subject (what its counts are kept under); undefined when it is not the tenant's. */
export async function rollupSubjectOf(
  ex: Executor,
  tenant: Tenant,
  callId: number,
): Promise<RollupSubject | undefined> {
  const [call] = await ex
    .select({
      createdAt: calls.createdAt,
      assistantId: calls.assistantId,
      fromPhoneNumber: calls.fromPhoneNumber,
    })
    .from(calls)
    .where(tenant.where(calls, eq(calls.id, callId)));
  return call;
}

/** Counter columns (TypeScript name → column). */
const COUNTERS = {
  calls: 'calls',
  completed: 'completed',
  voicemail: 'voicemail',
  busy: 'busy',
  noAnswer: 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
  inbound: 'inbound',
  outbound: 'outbound',
  durationSeconds: 'duration_seconds',
  transfers: 'transfers',
  turns: 'turns',
  interruptedTurns: 'interrupted_turns',
} as const;
type Counter = keyof typeof COUNTERS;

/** Histogram columns (TypeScript name → column). */
export const HISTOGRAMS = {
  durationSeconds: 'duration_seconds_histogram',
  endToEndMs: 'end_to_end_ms_histogram',
  llmTtftMs: 'llm_ttft_ms_histogram',
  ttsTtfbMs: 'tts_ttfb_ms_histogram',
  sttDelayMs: 'stt_delay_ms_histogram',
  platformMs: 'platform_ms_histogram',
} as const;
export type HistogramName = keyof typeof HISTOGRAMS;
/** The per-turn latencies kept, as `call_turns` columns name them. */
export const LATENCIES = ['endToEndMs', 'llmTtftMs', 'ttsTtfbMs', 'sttDelayMs', 'platformMs'] as const;
export type Latency = (typeof LATENCIES)[number];

/** Values to count in (n > 0) or out (n < 0) of a histogram. */
type HistogramValues = Array<{ value: number; n: number }>;

/** What one fact adds to (or, negative, takes from) a rollup row. */
export interface RollupDelta {
  counts?: Partial<Record<Counter, number>>;
  cost?: number;
  values?: Partial<Record<HistogramName, HistogramValues>>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const floorTo = (at: Date, step: number) => new Date(Math.floor(at.getTime() / step) * step);

/** The outcome a final call is counted under: its status, or `voicemail` when a machine answered. */
export function outcomeOf(call: Pick<CallRow, 'status' | 'callMeta'>): string {
  return call.status === 'completed' && call.callMeta.answered_by === 'machine' ? 'voicemail' : call.status;
}

const OUTCOME_COUNTER: Record<string, Counter> = {
  completed: 'completed',
  voicemail: 'voicemail',
  busy: 'busy',
  'no-answer': 'noAnswer',
  failed: 'failed',
  canceled: 'canceled',
};

/** Adds a call that has just reached its final status. */
export async function rollUpFinishedCall(ex: Executor, call: CallRow): Promise<void> {
  const outcome = outcomeOf(call);
  const answered = outcome === 'completed' || outcome === 'voicemail';
  const duration = call.duration ?? 0;
  await addToRollups(ex, call.organizationId, call, {
    counts: {
      calls: 1,
      [OUTCOME_COUNTER[outcome]!]: 1,
      [call.direction]: 1,
      ...(answered ? { durationSeconds: duration } : {}),
    },
    cost: call.cost ?? 0,
    ...(answered ? { values: { durationSeconds: [{ value: duration, n: 1 }] } } : {}),
  });
}

/** The figures of a stored turn that the rollups count. */
export interface TurnFigures {
  kind: string;
  interrupted: boolean;
  endToEndMs: number | null;
  llmTtftMs: number | null;
  ttsTtfbMs: number | null;
  sttDelayMs: number | null;
  platformMs: number | null;
}

/** What a turn adds (sign 1) or, replaced by a rewrite, takes back (sign -1). */
export function turnDelta(turn: TurnFigures, sign: 1 | -1): RollupDelta {
  const values: RollupDelta['values'] = {};
  if (turn.kind === 'reply') {
    for (const latency of LATENCIES) {
      const value = turn[latency];
      if (value !== null) values[latency] = [{ value, n: sign }];
    }
  }
  return { counts: { turns: sign, interruptedTurns: turn.interrupted ? sign : 0 }, values };
}

/** Adds a call event, when it is one the analytics count (a tool use, a transfer). */
export async function rollUpEvent(
  ex: Executor,
  organizationId: number,
  call: RollupSubject,
  type: string,
  data: Record<string, unknown>,
): Promise<void> {
  if (type === 'call.transferred') {
    await addToRollups(ex, organizationId, call, { counts: { transfers: 1 } });
  } else if (type === 'call.tool' && typeof data.name === 'string') {
    const failed = data.ok === false ? 1 : 0;
    const rows = keyRows(organizationId, call).map((key) => sql`(${key}, ${data.name}, 1, ${failed})`);
    await ex.execute(sql`
      insert into call_tool_rollups (organization_id, hours, period_start, assistant_id, phone_number, tool, uses, failures)
      values ${sql.join(rows, sql`, `)}
      on conflict (organization_id, hours, period_start, assistant_id, phone_number, tool) do update
      set uses = call_tool_rollups.uses + excluded.uses, failures = call_tool_rollups.failures + excluded.failures`);
  }
}

/** Both deltas at once (a rewritten turn: the old figures out, the new in). */
export function combine(first: RollupDelta, second: RollupDelta): RollupDelta {
  const counts: Partial<Record<Counter, number>> = { ...first.counts };
  for (const [name, n] of Object.entries(second.counts ?? {}) as Array<[Counter, number]>)
    counts[name] = (counts[name] ?? 0) + n;
  const values: RollupDelta['values'] = { ...first.values };
  for (const [name, list] of Object.entries(second.values ?? {}) as Array<[HistogramName, HistogramValues]>)
    values[name] = [...(values[name] ?? []), ...list];
  return { counts, cost: (first.cost ?? 0) + (second.cost ?? 0), values };
}

/** Whether an event type is one `rollUpEvent` counts (the store then needs the call's key). */
export const COUNTED_EVENTS: ReadonlySet<string> = new Set(['call.tool', 'call.transferred']);

/** The key columns of the hour row and the day row of a call's period. */
function keyRows(organizationId: number, call: RollupSubject): SQL[] {
  return [
    [1, floorTo(call.createdAt, HOUR_MS)],
    [24, floorTo(call.createdAt, DAY_MS)],
  ].map(
    ([hours, start]) =>
      sql`${organizationId}::int, ${hours}::smallint, ${(start as Date).toISOString()}::timestamptz, ${call.assistantId ?? 0}::int, ${call.fromPhoneNumber}::text`,
  );
}

/**
 * A histogram as stored: only the buckets from the lowest to the highest it counts, as a PostgreSQL
 * array whose subscripts are the buckets' (bucket + 1): `[31:33]={1,0,2}`, `{}` when empty. A row
 * holds a handful of buckets per histogram, not 65; a bucket outside reads NULL, which sums skip.
 */
export function histogramLiteral(counts: ReadonlyMap<number, number>): string {
  if (counts.size === 0) return '{}';
  const buckets = [...counts.keys()];
  const low = Math.min(...buckets);
  const high = Math.max(...buckets);
  const values = Array.from({ length: high - low + 1 }, (_, i) => counts.get(low + i) ?? 0);
  return `[${low + 1}:${high + 1}]={${values.join(',')}}`;
}

/** Adds `delta` to the hour row and the day row of `call`'s period, creating them if need be. */
export async function addToRollups(
  ex: Executor,
  organizationId: number,
  call: RollupSubject,
  delta: RollupDelta,
): Promise<void> {
  // Net change per bucket of each histogram: a rewrite that keeps a value's bucket changes nothing.
  const buckets = new Map<HistogramName, Map<number, number>>();
  for (const [name, values] of Object.entries(delta.values ?? {}) as Array<
    [HistogramName, HistogramValues]
  >) {
    const byBucket = new Map<number, number>();
    for (const { value, n } of values) {
      const bucket = bucketOf(value);
      byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + n);
    }
    for (const [bucket, n] of byBucket) if (n === 0) byBucket.delete(bucket);
    if (byBucket.size > 0) buckets.set(name, byBucket);
  }
  const counters = Object.entries(delta.counts ?? {}).filter(([, n]) => n !== 0) as Array<[Counter, number]>;
  if (counters.length === 0 && buckets.size === 0 && !delta.cost) return;

  const counterColumns = counters.map(([name]) => sql.raw(COUNTERS[name]));
  const histogramNames = Object.keys(HISTOGRAMS) as HistogramName[];
  const histogramLiterals = histogramNames.map(
    (name) => sql`${histogramLiteral(buckets.get(name) ?? new Map())}::int[]`,
  );
  const rows = keyRows(organizationId, call).map(
    (key) =>
      sql`(${sql.join([key, ...counters.map(([, n]) => sql`${n}::int`), sql`${delta.cost ?? 0}::numeric`, ...histogramLiterals], sql`, `)})`,
  );
  const sets: SQL[] = [
    ...counterColumns.map((column) => sql`${column} = call_rollups.${column} + excluded.${column}`),
    sql`cost = call_rollups.cost + excluded.cost`,
  ];
  for (const [name, byBucket] of buckets) {
    const column = sql.raw(HISTOGRAMS[name]);
    for (const [bucket, n] of byBucket) {
      const index = sql.raw(String(bucket + 1));
      sets.push(sql`${column}[${index}] = coalesce(call_rollups.${column}[${index}], 0) + ${n}::int`);
    }
  }
  const columns = [
    ...counterColumns,
    sql.raw('cost'),
    ...histogramNames.map((name) => sql.raw(HISTOGRAMS[name])),
  ];
  await ex.execute(sql`
    insert into call_rollups (organization_id, hours, period_start, assistant_id, phone_number, ${sql.join(columns, sql`, `)})
    values ${sql.join(rows, sql`, `)}
    on conflict (organization_id, hours, period_start, assistant_id, phone_number) do update
    set ${sql.join(sets, sql`, `)}`);
}

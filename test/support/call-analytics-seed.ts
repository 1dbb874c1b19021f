/**
 * Calls for the call analytics tests, made through the platform's own write paths (the call record,
 * carrier statuses, turns, events) so the rollups are kept exactly as in production; and the naive
 * answer: the same figures computed from every call, turn and event row of the range, in plain code.
 */
import { DateTime } from 'luxon';
import type { CallStatus } from '../../src/db/schema/index.js';
import { Tenant } from '../../src/db/tenant.js';
import * as store from '../../src/domains/calls/store.js';
import type { TurnRecord } from '../../src/voice/turn-metrics.js';
import type { TestPlatform } from './harness.js';

export interface OurNumber {
  id: number;
  phoneNumber: string;
  assistantId: number;
}

export interface AnalyticsCall {
  number: OurNumber;
  /** The call's assistant (outbound calls may use another than the number's). */
  assistantId?: number;
  direction: 'inbound' | 'outbound';
  createdAt: Date;
  /** The final status, or undefined for a call still under way. */
  final?: CallStatus;
  durationSeconds?: number;
  answeredBy?: 'human' | 'machine';
  turns?: Array<Omit<TurnRecord, 'startedAt' | 'userText' | 'assistantText' | 'llmProvider' | 'marks'>>;
  events?: Array<{ type: string; data: Record<string, unknown> }>;
}

let serial = 0;

/** Records one call as the platform would over its life; answers its id. */
export async function makeCall(
  t: TestPlatform,
  organizationId: number,
  call: AnalyticsCall,
): Promise<number> {
  const n = ++serial;
  const tenant = new Tenant(organizationId);
  const { calls, callRecords } = t.platform.services;
  const customer = `+1646555${String(n % 10_000).padStart(4, '0')}`;
  const callSid = `CAanalytics${process.pid}x${n}`;
  let id: number;
  if (call.direction === 'outbound') {
    const row = await calls.recordOutbound(t.database.db, tenant, {
      assistantId: call.assistantId ?? call.number.assistantId,
      phoneNumberId: call.number.id,
      provider: 'carrier_a',
      from: call.number.phoneNumber,
      to: customer,
      callMeta: {},
    });
    id = row.id;
  } else {
    const row = await calls.startInbound(
      tenant,
      { ...call.number, provider: 'carrier_a' },
      { kind: 'inbound_call', callSid, from: customer, to: call.number.phoneNumber },
    );
    id = row!.id;
  }
  // When the call was created: what the rollups file it under (set before anything is counted).
  await t.database.executeSql('update calls set created_at = $1 where id = $2', [
    call.createdAt.toISOString(),
    id,
  ]);
  for (const [index, turn] of (call.turns ?? []).entries()) {
    await callRecords.recordTurn(tenant, id, {
      ...turn,
      startedAt: new Date(call.createdAt.getTime() + index * 1000),
      userText: 'question',
      assistantText: 'answer',
      llmProvider: null,
      marks: {},
    });
  }
  for (const event of call.events ?? [])
    await store.insertCallEvent(t.database.db, tenant, id, event.type, event.data);
  if (call.final === 'failed' && call.direction === 'outbound' && call.durationSeconds === undefined) {
    await calls.failUnplaced(tenant, id, 'refused');
  } else if (call.final) {
    if (call.final === 'completed')
      await calls.applyStatus(organizationId, id, { kind: 'call_status', callSid, status: 'in-progress' });
    await calls.applyStatus(organizationId, id, {
      kind: 'call_status',
      callSid,
      status: call.final,
      durationSeconds: call.durationSeconds ?? 0,
      ...(call.answeredBy ? { answeredBy: call.answeredBy } : {}),
    });
  }
  return id;
}

/** Exact nearest-rank percentile of `values` (0 < p ≤ 1), null when empty. */
export function exactPercentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]!;
}

interface RawCall {
  id: number;
  assistant_id: number | null;
  from_phone_number: string;
  direction: string;
  status: string;
  call_meta: Record<string, unknown>;
  duration: number | null;
  cost: number | null;
  created_at: string | Date;
}

/** Everything the analytics answer, computed from the raw rows of the range; percentiles exact. */
export async function naiveAnalytics(
  t: TestPlatform,
  organizationId: number,
  query: { from: Date; to: Date; timeZone: string; assistantId?: number; phoneNumber?: string },
) {
  const { rows } = await t.database.executeSql(
    `select id, assistant_id, from_phone_number, direction, status, call_meta, duration, cost::float8 as cost, created_at
     from calls where organization_id = $1 and created_at >= $2 and created_at < $3`,
    [organizationId, query.from.toISOString(), query.to.toISOString()],
  );
  const calls = (rows as unknown as RawCall[]).filter(
    (call) =>
      (query.assistantId === undefined || call.assistant_id === query.assistantId) &&
      (query.phoneNumber === undefined || call.from_phone_number === query.phoneNumber),
  );
  const ids = calls.map((call) => call.id);
  const turns = ids.length
    ? ((
        await t.database.executeSql(
          `select call_id, kind, interrupted, end_to_end_ms, llm_ttft_ms, tts_ttfb_ms, stt_delay_ms, platform_ms
           from call_turns where call_id = any($1::int[])`,
          [`{${ids.join(',')}}`],
        )
      ).rows as Array<Record<string, unknown>>)
    : [];
  const events = ids.length
    ? ((
        await t.database.executeSql(
          `select call_id, type, data from call_events where call_id = any($1::int[]) and type in ('call.tool', 'call.transferred')`,
          [`{${ids.join(',')}}`],
        )
      ).rows as Array<{ call_id: number; type: string; data: Record<string, unknown> }>)
    : [];

  const final = calls.filter((call) =>
    ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(call.status),
  );
  const outcome = (call: RawCall) =>
    call.status === 'completed' && call.call_meta.answered_by === 'machine' ? 'voicemail' : call.status;
  const answered = final.filter((call) => ['completed', 'voicemail'].includes(outcome(call)));
  const count = (list: RawCall[], what: string) => list.filter((call) => outcome(call) === what).length;
  const localDate = (call: RawCall) =>
    DateTime.fromJSDate(new Date(call.created_at), { zone: query.timeZone }).toISODate()!;
  const replies = turns.filter((turn) => turn.kind === 'reply');
  const latency = (column: string) =>
    replies.map((turn) => turn[column]).filter((v): v is number => v !== null);
  const byTool = new Map<string, { calls: number; failures: number }>();
  for (const event of events.filter((e) => e.type === 'call.tool' && typeof e.data.name === 'string')) {
    const entry = byTool.get(event.data.name as string) ?? { calls: 0, failures: 0 };
    entry.calls += 1;
    if (event.data.ok === false) entry.failures += 1;
    byTool.set(event.data.name as string, entry);
  }
  const perDay = new Map<string, { calls: number; completed: number; answered: number; duration: number }>();
  for (const call of final) {
    const day = perDay.get(localDate(call)) ?? { calls: 0, completed: 0, answered: 0, duration: 0 };
    day.calls += 1;
    if (outcome(call) === 'completed') day.completed += 1;
    if (answered.includes(call)) {
      day.answered += 1;
      day.duration += call.duration ?? 0;
    }
    perDay.set(localDate(call), day);
  }
  return {
    calls: final.length,
    answered: answered.length,
    byStatus: {
      completed: count(final, 'completed'),
      voicemail: count(final, 'voicemail'),
      busy: count(final, 'busy'),
      'no-answer': count(final, 'no-answer'),
      failed: count(final, 'failed'),
      canceled: count(final, 'canceled'),
    },
    inbound: final.filter((call) => call.direction === 'inbound').length,
    outbound: final.filter((call) => call.direction === 'outbound').length,
    durationTotal: answered.reduce((sum, call) => sum + (call.duration ?? 0), 0),
    durations: answered.map((call) => call.duration ?? 0),
    cost: final.reduce((sum, call) => sum + (call.cost ?? 0), 0),
    transfers: events.filter((event) => event.type === 'call.transferred').length,
    turns: turns.length,
    interrupted: turns.filter((turn) => turn.interrupted).length,
    latency: {
      end_to_end_ms: latency('end_to_end_ms'),
      llm_ttft_ms: latency('llm_ttft_ms'),
      tts_ttfb_ms: latency('tts_ttfb_ms'),
      stt_delay_ms: latency('stt_delay_ms'),
      platform_ms: latency('platform_ms'),
    },
    tools: byTool,
    perDay,
  };
}

/**
 * SQL of call turns: one row per turn the live runtime recorded (what was said and how long each
 * stage took), read back in turn order. The runtime writes a turn once it is over; a turn written
 * again at the same position (a retried write) replaces the first, so a retry never fails a call.
 */
import { asc, eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { calls, callTurns, type TurnKind } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import type { TurnMarks, TurnRecord } from '../../voice/turn-metrics.js';

export type CallTurnRow = typeof callTurns.$inferSelect;

// The runtime's kinds and the table's CHECK list must stay one set.
const sameKinds: [TurnRecord['kind'], TurnKind] extends [TurnKind, TurnRecord['kind']] ? true : never = true;
void sameKinds;

/** Whole milliseconds for the figure columns; null stays null. */
const wholeMs = (ms: number | null): number | null => (ms === null ? null : Math.round(ms));

/** The marks as stored: the moments that happened, to a tenth of a millisecond. */
export function roundedMarks(marks: TurnMarks): TurnMarks {
  const rounded: TurnMarks = {};
  for (const [name, at] of Object.entries(marks) as Array<[keyof TurnMarks, number | undefined]>) {
    if (at !== undefined) rounded[name] = Math.round(at * 10) / 10;
  }
  return rounded;
}

/**
 * Stores one turn of a call. Undefined when the call is not the organization's; the turn as stored
 * otherwise.
 */
export async function insertTurn(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  turn: TurnRecord,
): Promise<CallTurnRow | undefined> {
  const [call] = await ex
    .select({ id: calls.id })
    .from(calls)
    .where(tenant.where(calls, eq(calls.id, callId)));
  if (!call) return undefined;
  const { measurements } = turn;
  const values = {
    kind: turn.kind,
    startedAt: turn.startedAt,
    userText: turn.userText,
    assistantText: turn.assistantText,
    interrupted: turn.interrupted,
    llmProvider: turn.llmProvider,
    endToEndMs: wholeMs(measurements.endToEndMs),
    endpointingMs: wholeMs(measurements.endpointingMs),
    sttDelayMs: wholeMs(measurements.sttDelayMs),
    llmTtftMs: wholeMs(measurements.llmTtftMs),
    ttsTtfbMs: wholeMs(measurements.ttsTtfbMs),
    platformMs: wholeMs(measurements.platformMs),
    marks: roundedMarks(turn.marks),
  };
  const [row] = await ex
    .insert(callTurns)
    .values({ organizationId: tenant.organizationId, callId, position: turn.position, ...values })
    .onConflictDoUpdate({ target: [callTurns.callId, callTurns.position], set: values })
    .returning();
  return row;
}

/** A call's turns in the order they were taken. */
export async function turnsOf(ex: Executor, tenant: Tenant, callId: number): Promise<CallTurnRow[]> {
  return ex
    .select()
    .from(callTurns)
    .where(tenant.where(callTurns, eq(callTurns.callId, callId)))
    .orderBy(asc(callTurns.position));
}

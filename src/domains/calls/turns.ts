/**
 * SQL of call turns: one row per turn the live runtime recorded (what was said and how long each
 * stage took), read back in turn order. The runtime writes a turn once it is over; a turn written
 * again at the same position (a retried write) replaces the first, so a retry never fails a call.
 * Each write also keeps the call analytics rollups (rollups.ts) in step.
 */
import { and, asc, eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { callTurns, type TurnKind } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import type { TurnMarks, TurnRecord } from '../../voice/turn-metrics.js';
import { addToRollups, combine, rollupSubjectOf, turnDelta } from './rollups.js';

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

/** A turn's stored columns but its call and position: its texts, whole-millisecond figures and marks. */
export function turnColumns(turn: TurnRecord) {
  const { measurements } = turn;
  return {
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
    retrievalMs: wholeMs(measurements.retrievalMs ?? null),
    // Null when the answer had no knowledge to search; [] when it searched and used nothing.
    passages: turn.passages ?? null,
    marks: roundedMarks(turn.marks),
  };
}

/**
 * Stores one turn of a call, and counts it in the call analytics in the same transaction (a rewrite
 * takes the first write's figures back out). Undefined when the call is not the organization's; the
 * turn as stored otherwise.
 */
export async function insertTurn(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  turn: TurnRecord,
): Promise<CallTurnRow | undefined> {
  const values = turnColumns(turn);
  return ex.transaction(async (tx) => {
    const call = await rollupSubjectOf(tx, tenant, callId);
    if (!call) return undefined;
    const [inserted] = await tx
      .insert(callTurns)
      .values({ organizationId: tenant.organizationId, callId, position: turn.position, ...values })
      .onConflictDoNothing({ target: [callTurns.callId, callTurns.position] })
      .returning();
    if (inserted) {
      await addToRollups(tx, tenant.organizationId, call, turnDelta(inserted, 1));
      return inserted;
    }
    // Written before: once that write has committed (the insert above waited for it), replace it.
    const position = and(eq(callTurns.callId, callId), eq(callTurns.position, turn.position));
    const [previous] = await tx.select().from(callTurns).where(position).for('update');
    const [row] = await tx.update(callTurns).set(values).where(position).returning();
    await addToRollups(
      tx,
      tenant.organizationId,
      call,
      combine(turnDelta(previous!, -1), turnDelta(row!, 1)),
    );
    return row;
  });
}

/** A call's turns in the order they were taken. */
export async function turnsOf(ex: Executor, tenant: Tenant, callId: number): Promise<CallTurnRow[]> {
  return ex
    .select()
    .from(callTurns)
    .where(tenant.where(callTurns, eq(callTurns.callId, callId)))
    .orderBy(asc(callTurns.position));
}

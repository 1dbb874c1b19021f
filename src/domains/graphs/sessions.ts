/**
 * Conversation sessions: one conversation (usually one call) walking an assistant graph. The call
 * runtime starts a session at the graph's entry node, records every turn, moves it along the edges
 * the routing engine fires (each move is a `graph_transitions` row, the history analytics read),
 * merges what assistants write into its `context`, and ends it: `start`, then for each final user
 * utterance `recordStep` with the engine's `advance` step, `updateContext` for the context tool, and
 * `end`. The HTTP API only reads sessions (session-routes.ts). Every change of a session is one
 * atomic statement or runs under the session row's lock, so concurrent turns, transitions and
 * context writes apply in turn and never lose one another. The analytics rollups (rollups.ts) are
 * added to in the same transaction as each start, transition and end. Definitions: docs/graphs.md,
 * "Sessions and analytics".
 */
import { and, asc, desc, eq, getTableColumns, isNull, type SQL, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import {
  assistantGraphs,
  assistants,
  calls,
  graphEdges,
  graphNodes,
  graphSessions,
  graphTransitions,
} from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { applyContextUpdate } from './context.js';
import type { SessionState, Step } from './engine-types.js';
import { rollUpEnd, rollUpStart, rollUpTransition } from './rollups.js';

export type GraphSessionRow = typeof graphSessions.$inferSelect;
export type GraphTransitionRow = typeof graphTransitions.$inferSelect;

/** A session as the API shows it: with its graph's name and the name of its current node's assistant. */
export type GraphSessionDetails = GraphSessionRow & {
  graphName: string;
  /** Null when the current node is gone (a structure update replaced it). */
  currentAssistantName: string | null;
};

export interface StartSession {
  graphId: number;
  callSid?: string | null;
  callId?: number | null;
  /** The initial context (default `{}`). */
  context?: Record<string, unknown>;
  /** When the session started (default: the database's now). */
  at?: Date;
}

export interface TransitionInput {
  toNodeId: number;
  /** The edge that fired; null for a move no edge made (an operator's transfer). */
  edgeId: number | null;
  /** Why it fired (the engine's `Decision.reason`). */
  reason: string;
  /** When it happened (default: the database's now); never earlier than the current node was entered. */
  at?: Date;
  /**
   * The node the caller's decision was made at. When given and the session has moved on since (a
   * concurrent transition won), the transition is refused with 409 instead of chaining.
   */
  fromNodeId?: number;
}

export interface EndSession {
  /** How it ended: `exit`, `escalation`, `hangup`… */
  reason: string;
  /** When (default: the database's now); never earlier than the current node was entered. */
  at?: Date;
}

export interface ListSessions {
  skip: number;
  limit: number;
  /** Only sessions still going (ended_at null). */
  activeOnly: boolean;
}

const sessionNotFound = () => notFound('Session not found');
const sessionEnded = () => conflict('The session has ended');

/** Where a session stands, in the routing engine's terms (engine-types.ts). */
export function sessionStateOf(row: GraphSessionRow): SessionState {
  if (row.currentNodeId === null) throw new Error(`Graph session ${row.id} has no current node`);
  return {
    currentNodeId: row.currentNodeId,
    context: row.context,
    turnCount: row.turnCount,
    nodeTurnCount: row.nodeTurnCount,
    startedAt: row.startedAt,
    nodeEnteredAt: row.nodeEnteredAt,
  };
}

/** `at` as a timestamp parameter, or the database's clock. */
function timeOrNow(at: Date | undefined): SQL {
  if (at !== undefined && Number.isNaN(at.getTime())) throw badRequest('Invalid time');
  return at === undefined ? sql`now()` : sql`${at.toISOString()}::timestamptz`;
}

const sessionColumns = getTableColumns(graphSessions);

export class GraphSessionService {
  constructor(private readonly deps: { db: Db }) {}

  /**
   * Starts a session of one of the organization's graphs at its entry node. `ex` lets the caller
   * start it inside a transaction of its own (the call's).
   */
  async start(tenant: Tenant, input: StartSession, ex: Executor = this.deps.db): Promise<GraphSessionRow> {
    // The initial context passes the same checks as the context tool's writes.
    const context = applyContextUpdate({}, input.context ?? {});
    const [entry] = await ex
      .select({ graphId: assistantGraphs.id, nodeId: graphNodes.id })
      .from(assistantGraphs)
      .leftJoin(graphNodes, and(eq(graphNodes.graphId, assistantGraphs.id), eq(graphNodes.nodeType, 'entry')))
      .where(tenant.where(assistantGraphs, eq(assistantGraphs.id, input.graphId)))
      .orderBy(asc(graphNodes.ordinal), asc(graphNodes.id))
      .limit(1);
    if (!entry) throw notFound('Graph not found');
    if (entry.nodeId === null) throw conflict('The graph has no entry node');
    if (input.callId != null) {
      const [call] = await ex
        .select({ id: calls.id })
        .from(calls)
        .where(tenant.where(calls, eq(calls.id, input.callId)));
      if (!call) throw notFound('Call not found');
    }
    const at = timeOrNow(input.at);
    return ex.transaction(async (tx) => {
      const [row] = await tx
        .insert(graphSessions)
        .values({
          organizationId: tenant.organizationId,
          graphId: input.graphId,
          callSid: input.callSid ?? null,
          callId: input.callId ?? null,
          currentNodeId: entry.nodeId,
          context,
          startedAt: at,
          nodeEnteredAt: at,
        })
        .returning();
      await rollUpStart(tx, row!.id);
      return row!;
    });
  }

  /** The session, if it is the organization's. */
  async find(tenant: Tenant, sessionId: number, ex: Executor = this.deps.db) {
    const [row] = await ex
      .select()
      .from(graphSessions)
      .where(tenant.where(graphSessions, eq(graphSessions.id, sessionId)));
    return row;
  }

  /**
   * Moves the session to `toNodeId` (a node of its graph; `edgeId`, when given, an edge of its graph
   * leading there from the current node) and records the transition. Under the session's row lock:
   * concurrent transitions apply one after the other, each from where the previous one left it.
   * `ex` lets the caller run it inside a transaction of its own.
   */
  async transition(
    tenant: Tenant,
    sessionId: number,
    input: TransitionInput,
    ex: Executor = this.deps.db,
  ): Promise<{ session: GraphSessionRow; transition: GraphTransitionRow }> {
    return ex.transaction(async (tx) => {
      const locked = await this.#lockActive(tx, tenant, sessionId);
      const fromNodeId = locked.currentNodeId;
      if (fromNodeId === null) throw conflict('The session has no current node');
      if (input.fromNodeId !== undefined && input.fromNodeId !== fromNodeId) {
        throw conflict(`The session is no longer at node ${input.fromNodeId}`);
      }
      const [target] = await tx
        .select({ nodeId: graphNodes.id, edgeFrom: graphEdges.fromNodeId, edgeTo: graphEdges.toNodeId })
        .from(graphNodes)
        .leftJoin(
          graphEdges,
          and(eq(graphEdges.id, input.edgeId ?? 0), eq(graphEdges.graphId, graphNodes.graphId)),
        )
        .where(and(eq(graphNodes.id, input.toNodeId), eq(graphNodes.graphId, locked.graphId)));
      if (!target) throw badRequest(`Node ${input.toNodeId} is not a node of the session's graph`);
      if (input.edgeId !== null && (target.edgeFrom !== fromNodeId || target.edgeTo !== input.toNodeId)) {
        throw badRequest(
          `Edge ${input.edgeId} does not lead from node ${fromNodeId} to node ${input.toNodeId}`,
        );
      }
      const at = timeOrNow(input.at);
      // Counted before the move: the row still says where the session is and since when.
      await rollUpTransition(tx, locked.id, input.toNodeId, at);
      const [session] = await tx
        .update(graphSessions)
        .set({
          currentNodeId: input.toNodeId,
          nodeTurnCount: 0,
          nodeEnteredAt: sql`greatest(${at}, ${graphSessions.nodeEnteredAt})`,
        })
        .where(eq(graphSessions.id, locked.id))
        .returning();
      const [transition] = await tx
        .insert(graphTransitions)
        .values({
          organizationId: tenant.organizationId,
          sessionId: locked.id,
          graphId: locked.graphId,
          fromNodeId,
          toNodeId: input.toNodeId,
          edgeId: input.edgeId,
          reason: input.reason,
          transitionedAt: session!.nodeEnteredAt,
        })
        .returning();
      return { session: session!, transition: transition! };
    });
  }

  /**
   * Records one routed utterance, the engine's `advance` step (engine.ts): counts the turn and, when
   * an edge fired, makes its transition — all in one transaction under the session's row lock, so
   * the record is what `recordTurn` followed by `transition` would leave, or nothing. 409 when the
   * session has ended or is no longer at the node the decision was made at (a concurrent step or
   * transition won); 400 when the edge or its target is no longer in the session's graph.
   */
  async recordStep(
    tenant: Tenant,
    sessionId: number,
    step: Step,
  ): Promise<{ session: GraphSessionRow; transition: GraphTransitionRow | null }> {
    const decidedAt = step.transition?.fromNodeId ?? step.state.currentNodeId;
    return this.deps.db.transaction(async (tx) => {
      const locked = await this.#lockActive(tx, tenant, sessionId);
      if (locked.currentNodeId !== decidedAt) throw conflict(`The session is no longer at node ${decidedAt}`);
      const [counted] = await tx
        .update(graphSessions)
        .set({
          turnCount: sql`${graphSessions.turnCount} + 1`,
          nodeTurnCount: sql`${graphSessions.nodeTurnCount} + 1`,
        })
        .where(eq(graphSessions.id, locked.id))
        .returning();
      if (!step.transition) return { session: counted!, transition: null };
      const { toNodeId, edgeId, reason, at } = step.transition;
      return this.transition(tenant, sessionId, { toNodeId, edgeId, reason, at, fromNodeId: decidedAt }, tx);
    });
  }

  /** Counts one final user utterance: `turn_count` and `node_turn_count` go up by one. */
  async recordTurn(tenant: Tenant, sessionId: number): Promise<GraphSessionRow> {
    const [row] = await this.deps.db
      .update(graphSessions)
      .set({
        turnCount: sql`${graphSessions.turnCount} + 1`,
        nodeTurnCount: sql`${graphSessions.nodeTurnCount} + 1`,
      })
      .where(this.#active(tenant, sessionId))
      .returning();
    return row ?? this.#refused(tenant, sessionId);
  }

  /**
   * Merges `updates` into the session's context with the engine's `applyContextUpdate` (plain
   * objects merge key by key at any depth, dotted keys are paths, null removes a key, other values
   * replace), under the session's row lock, so concurrent writers keep each other's keys. An update
   * the engine refuses (forbidden key, too deep, context over 64 KB) throws its ContextUpdateError,
   * whose message the runtime hands back to the model.
   */
  async updateContext(
    tenant: Tenant,
    sessionId: number,
    updates: Record<string, unknown>,
  ): Promise<GraphSessionRow> {
    return this.deps.db.transaction(async (tx) => {
      const locked = await this.#lockActive(tx, tenant, sessionId);
      const [row] = await tx
        .update(graphSessions)
        .set({ context: applyContextUpdate(locked.context, updates) })
        .where(eq(graphSessions.id, locked.id))
        .returning();
      return row!;
    });
  }

  /**
   * Ends the session where it stands. Ending an ended session changes nothing and returns it as
   * it is (the first end wins: a hang-up reported after the exit node does not rewrite it).
   */
  async end(tenant: Tenant, sessionId: number, input: EndSession): Promise<GraphSessionRow> {
    const endedAt = timeOrNow(input.at);
    const row = await this.deps.db.transaction(async (tx) => {
      const [ended] = await tx
        .update(graphSessions)
        .set({ endedAt: sql`greatest(${endedAt}, ${graphSessions.nodeEnteredAt})`, endReason: input.reason })
        .where(this.#active(tenant, sessionId))
        .returning();
      if (ended) await rollUpEnd(tx, ended.id);
      return ended;
    });
    if (row) return row;
    const existing = await this.find(tenant, sessionId);
    if (!existing) throw sessionNotFound();
    return existing;
  }

  /** The transitions of a session, oldest first. */
  async transitions(tenant: Tenant, sessionId: number): Promise<GraphTransitionRow[]> {
    return this.deps.db
      .select()
      .from(graphTransitions)
      .where(tenant.where(graphTransitions, eq(graphTransitions.sessionId, sessionId)))
      .orderBy(asc(graphTransitions.transitionedAt), asc(graphTransitions.id));
  }

  /** A graph's sessions, most recently started first (total for X-Total-Count); 404 for another organization's graph. */
  async list(
    tenant: Tenant,
    graphId: number,
    options: ListSessions,
  ): Promise<{ rows: GraphSessionDetails[]; total: number }> {
    const graph = await this.#graph(tenant, graphId);
    const where = tenant.where(
      graphSessions,
      eq(graphSessions.graphId, graph.id),
      options.activeOnly ? isNull(graphSessions.endedAt) : undefined,
    );
    const [rows, [count]] = await Promise.all([
      this.#selectDetails()
        .where(where)
        .orderBy(desc(graphSessions.startedAt), desc(graphSessions.id))
        .limit(options.limit)
        .offset(options.skip),
      this.deps.db.select({ n: sql<number>`count(*)::int` }).from(graphSessions).where(where),
    ]);
    return { rows, total: Number(count?.n ?? 0) };
  }

  /** The session of a call SID (the latest started, should a call have had several); 404 when none is the organization's. */
  async byCallSid(tenant: Tenant, callSid: string): Promise<GraphSessionDetails> {
    const [row] = await this.#selectDetails()
      .where(tenant.where(graphSessions, eq(graphSessions.callSid, callSid)))
      .orderBy(desc(graphSessions.startedAt), desc(graphSessions.id))
      .limit(1);
    if (!row) throw sessionNotFound();
    return row;
  }

  async #graph(tenant: Tenant, graphId: number): Promise<{ id: number; name: string }> {
    const [graph] = await this.deps.db
      .select({ id: assistantGraphs.id, name: assistantGraphs.name })
      .from(assistantGraphs)
      .where(tenant.where(assistantGraphs, eq(assistantGraphs.id, graphId)));
    if (!graph) throw notFound('Graph not found');
    return graph;
  }

  #selectDetails() {
    return this.deps.db
      .select({
        ...sessionColumns,
        graphName: assistantGraphs.name,
        currentAssistantName: assistants.name,
      })
      .from(graphSessions)
      .innerJoin(
        assistantGraphs,
        and(
          eq(assistantGraphs.id, graphSessions.graphId),
          eq(assistantGraphs.organizationId, graphSessions.organizationId),
        ),
      )
      .leftJoin(
        graphNodes,
        and(eq(graphNodes.id, graphSessions.currentNodeId), eq(graphNodes.graphId, graphSessions.graphId)),
      )
      .leftJoin(assistants, eq(assistants.id, graphNodes.assistantId));
  }

  /** Locks the session's row (until the transaction ends); 404 when not the organization's, 409 when ended. */
  async #lockActive(tx: Executor, tenant: Tenant, sessionId: number): Promise<GraphSessionRow> {
    const [locked] = await tx
      .select()
      .from(graphSessions)
      .where(tenant.where(graphSessions, eq(graphSessions.id, sessionId)))
      .for('update');
    if (!locked) throw sessionNotFound();
    if (locked.endedAt !== null) throw sessionEnded();
    return locked;
  }

  #active(tenant: Tenant, sessionId: number): SQL {
    return tenant.where(graphSessions, eq(graphSessions.id, sessionId), isNull(graphSessions.endedAt));
  }

  /** Why an update of an active session found no row: it is not the organization's, or it has ended. */
  async #refused(tenant: Tenant, sessionId: number): Promise<never> {
    const existing = await this.find(tenant, sessionId);
    throw existing ? sessionEnded() : sessionNotFound();
  }
}

/** SQL of assistant graphs: the graph rows, their nodes and edges, and who uses a graph or an assistant. */
import { and, asc, eq, getTableColumns, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { assistantGraphs, assistants, graphEdges, graphNodes } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import { numbersRoutedTo } from '../phone-numbers/reads.js';

export type GraphRow = typeof assistantGraphs.$inferSelect;
export type GraphCounted = GraphRow & { totalNodes: number; totalEdges: number };
export type NodeRow = typeof graphNodes.$inferSelect & {
  assistantName: string;
  assistantDescription: string | null;
};
export type EdgeRow = typeof graphEdges.$inferSelect;

export type GraphValues = Pick<GraphRow, 'name' | 'description' | 'isActive' | 'configuration'>;
export type NodeValues = Pick<
  typeof graphNodes.$inferInsert,
  'assistantId' | 'nodeType' | 'position' | 'configuration'
>;
/** An edge whose ends are still indexes into the nodes being written. */
export type EdgeValues = Omit<
  typeof graphEdges.$inferInsert,
  'id' | 'organizationId' | 'graphId' | 'fromNodeId' | 'toNodeId' | 'ordinal' | 'createdAt' | 'updatedAt'
> & { fromIndex: number; toIndex: number };

// Qualified by hand: in a one-table select Drizzle writes columns unqualified, which inside the
// subquery would name the subquery's own table.
const nodeCount = sql<number>`(select count(*)::int from ${graphNodes} where ${graphNodes}."graph_id" = ${assistantGraphs}."id")`;
const edgeCount = sql<number>`(select count(*)::int from ${graphEdges} where ${graphEdges}."graph_id" = ${assistantGraphs}."id")`;
const counted = { ...getTableColumns(assistantGraphs), totalNodes: nodeCount, totalEdges: edgeCount };

export async function insertGraph(
  ex: Executor,
  tenant: Tenant,
  values: GraphValues & { createdByUserId: number },
): Promise<GraphRow> {
  const [row] = await ex
    .insert(assistantGraphs)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

export async function findGraph(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { forUpdate?: boolean } = {},
): Promise<GraphRow | undefined> {
  const query = ex
    .select()
    .from(assistantGraphs)
    .where(tenant.where(assistantGraphs, eq(assistantGraphs.id, id)))
    .limit(1);
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function listGraphs(
  ex: Executor,
  tenant: Tenant,
  options: { skip: number; limit: number; activeOnly: boolean },
): Promise<{ rows: GraphCounted[]; total: number }> {
  const where = tenant.where(
    assistantGraphs,
    options.activeOnly ? eq(assistantGraphs.isActive, true) : undefined,
  );
  const [rows, [count]] = await Promise.all([
    ex
      .select(counted)
      .from(assistantGraphs)
      .where(where)
      .orderBy(asc(assistantGraphs.id))
      .limit(options.limit)
      .offset(options.skip),
    ex.select({ n: sql<number>`count(*)::int` }).from(assistantGraphs).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

export async function updateGraph(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<GraphValues>,
): Promise<boolean> {
  const rows = await ex
    .update(assistantGraphs)
    .set(withUpdatedAt(changes))
    .where(tenant.where(assistantGraphs, eq(assistantGraphs.id, id)))
    .returning({ id: assistantGraphs.id });
  return rows.length === 1;
}

/** Deletes the graph (its nodes, edges and sessions cascade); false when it is not the tenant's. */
export async function deleteGraph(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const rows = await ex
    .delete(assistantGraphs)
    .where(tenant.where(assistantGraphs, eq(assistantGraphs.id, id)))
    .returning({ id: assistantGraphs.id });
  return rows.length === 1;
}

// The foreign key keeps a node's assistant inside the graph's organization: the join needs no tenant filter.
export async function nodesOf(ex: Executor, tenant: Tenant, graphId: number): Promise<NodeRow[]> {
  return ex
    .select({
      ...getTableColumns(graphNodes),
      assistantName: assistants.name,
      assistantDescription: assistants.description,
    })
    .from(graphNodes)
    .innerJoin(assistants, eq(assistants.id, graphNodes.assistantId))
    .where(tenant.where(graphNodes, eq(graphNodes.graphId, graphId)))
    .orderBy(asc(graphNodes.ordinal), asc(graphNodes.id));
}

export async function edgesOf(ex: Executor, tenant: Tenant, graphId: number): Promise<EdgeRow[]> {
  return ex
    .select()
    .from(graphEdges)
    .where(tenant.where(graphEdges, eq(graphEdges.graphId, graphId)))
    .orderBy(asc(graphEdges.ordinal), asc(graphEdges.id));
}

/**
 * Writes a graph's whole structure: removes the nodes and edges it had, then inserts `nodes` (in
 * order) and `edges` (their ends mapped from indexes to the new node ids). Run it inside a
 * transaction: a failure part-way (an assistant the foreign key refuses) must leave the old structure.
 */
export async function replaceStructure(
  ex: Executor,
  tenant: Tenant,
  graphId: number,
  nodes: NodeValues[],
  edges: EdgeValues[],
): Promise<void> {
  await ex.delete(graphEdges).where(tenant.where(graphEdges, eq(graphEdges.graphId, graphId)));
  await ex.delete(graphNodes).where(tenant.where(graphNodes, eq(graphNodes.graphId, graphId)));
  if (nodes.length === 0) return;
  const inserted = await ex
    .insert(graphNodes)
    .values(
      nodes.map((node, ordinal) => ({
        ...node,
        ordinal,
        graphId,
        organizationId: tenant.organizationId,
      })),
    )
    .returning({ id: graphNodes.id, ordinal: graphNodes.ordinal });
  const idAt = new Map(inserted.map((row) => [row.ordinal, row.id]));
  if (edges.length === 0) return;
  await ex.insert(graphEdges).values(
    edges.map(({ fromIndex, toIndex, ...edge }, ordinal) => ({
      ...edge,
      ordinal,
      graphId,
      organizationId: tenant.organizationId,
      fromNodeId: idAt.get(fromIndex)!,
      toNodeId: idAt.get(toIndex)!,
    })),
  );
}

/** Of `ids`, the assistants the organization has. */
export async function existingAssistants(ex: Executor, tenant: Tenant, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await ex
    .select({ id: assistants.id })
    .from(assistants)
    .where(tenant.where(assistants, inArray(assistants.id, ids)));
  return new Set(rows.map((row) => row.id));
}

/** The numbers routed to a graph (for the 409 that protects it from deletion): phone-numbers' query. */
export function numbersOfGraph(
  ex: Executor,
  tenant: Tenant,
  graphId: number,
): Promise<Array<{ id: number; phoneNumber: string }>> {
  return numbersRoutedTo(ex, tenant, { graphId });
}

/** The graphs with a node that uses an assistant, and those nodes (for the assistant's deletion 409). */
export async function graphsUsingAssistant(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<Array<{ graphId: number; graphName: string; nodeIds: number[] }>> {
  const rows = await ex
    .select({ graphId: assistantGraphs.id, graphName: assistantGraphs.name, nodeId: graphNodes.id })
    .from(graphNodes)
    .innerJoin(assistantGraphs, eq(assistantGraphs.id, graphNodes.graphId))
    .where(tenant.where(graphNodes, eq(graphNodes.assistantId, assistantId)))
    .orderBy(asc(assistantGraphs.id), asc(graphNodes.ordinal), asc(graphNodes.id));
  const graphs = new Map<number, { graphId: number; graphName: string; nodeIds: number[] }>();
  for (const row of rows) {
    const graph = graphs.get(row.graphId) ?? { graphId: row.graphId, graphName: row.graphName, nodeIds: [] };
    graph.nodeIds.push(row.nodeId);
    graphs.set(row.graphId, graph);
  }
  return [...graphs.values()];
}

/** The assistant of a graph's entry node (a graph-routed number's calls start with it). */
export async function entryAssistantOf(
  ex: Executor,
  tenant: Tenant,
  graphId: number,
): Promise<number | undefined> {
  const [row] = await ex
    .select({ assistantId: graphNodes.assistantId })
    .from(graphNodes)
    .where(and(tenant.owns(graphNodes), eq(graphNodes.graphId, graphId), eq(graphNodes.nodeType, 'entry')))
    .orderBy(asc(graphNodes.ordinal))
    .limit(1);
  return row?.assistantId;
}

/**
 * The routing engine's input read from the database: one organization's graph, its nodes and its
 * edges in the engine's shape (engine-types.ts). The simulate endpoint and the call runtime load a
 * graph only through `loadEngineGraph`, so both route over exactly the same picture of it.
 */
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { EngineEdge, EngineGraph, EngineNode } from './engine-types.js';
import * as store from './store.js';

/** An engine node with its assistant's name, for what is shown or logged about the walk. */
export type LoadedNode = EngineNode & { assistantName: string };

export interface LoadedGraph extends EngineGraph {
  nodes: LoadedNode[];
}

/**
 * The graph `graphId` of the organization, undefined when it has no such graph. Read in one
 * snapshot: a structure replaced at the same moment is seen wholly before or wholly after, never
 * edges of the new structure with nodes of the old.
 */
export async function loadEngineGraph(
  db: Db,
  tenant: Tenant,
  graphId: number,
): Promise<LoadedGraph | undefined> {
  return db.transaction(
    async (tx) => {
      if (!(await store.findGraph(tx, tenant, graphId))) return undefined;
      const nodes = await store.nodesOf(tx, tenant, graphId);
      const edges = await store.edgesOf(tx, tenant, graphId);
      return toEngineGraph(nodes, edges);
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** The engine's shape of stored rows: only the fields routing reads (and the assistants' names). */
function toEngineGraph(nodes: store.NodeRow[], edges: store.EdgeRow[]): LoadedGraph {
  return {
    nodes: nodes.map(
      (node): LoadedNode => ({
        id: node.id,
        nodeType: node.nodeType,
        assistantId: node.assistantId,
        assistantName: node.assistantName,
        configuration: node.configuration,
      }),
    ),
    edges: edges.map(
      (edge): EngineEdge => ({
        id: edge.id,
        fromNodeId: edge.fromNodeId,
        toNodeId: edge.toNodeId,
        conditionType: edge.conditionType,
        intentPattern: edge.intentPattern,
        naturalLanguageTrigger: edge.naturalLanguageTrigger,
        mathematicalExpression: edge.mathematicalExpression,
        stateVariableCondition: edge.stateVariableCondition,
        conditionLogic: edge.conditionLogic,
        priority: edge.priority,
        isActive: edge.isActive,
        handoffSentence: edge.handoffSentence,
      }),
    ),
  };
}

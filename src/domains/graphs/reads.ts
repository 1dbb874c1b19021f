/** What other domains may read of assistant graphs (tenant-scoped); graphs are written only here. */
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { entryAssistantOf } from './store.js';

export { entryAssistantOf, findGraph, graphsUsingAssistant } from './store.js';

/**
 * The assistant that answers a number and speaks from it: the number's own, else the entry assistant
 * of the graph it is routed to; null when it is routed to neither.
 */
export async function assistantForNumber(
  ex: Executor,
  tenant: Tenant,
  number: { assistantId: number | null; graphId: number | null },
): Promise<number | null> {
  if (number.assistantId !== null) return number.assistantId;
  if (number.graphId === null) return null;
  return (await entryAssistantOf(ex, tenant, number.graphId)) ?? null;
}

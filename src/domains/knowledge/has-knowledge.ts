/**
 * Whether an assistant has anything to retrieve: one indexed look-up (knowledge_chunks by assistant),
 * asked once when a live call starts (voice/knowledge-setup.ts), so that an assistant with
 * `rag_settings.enabled` but no processed passages pays nothing on each turn.
 */
import { eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { knowledgeChunks } from '../../db/schema/knowledge.js';
import type { Tenant } from '../../db/tenant.js';

export async function hasKnowledge(ex: Executor, tenant: Tenant, assistantId: number): Promise<boolean> {
  const [row] = await ex
    .select({ id: knowledgeChunks.id })
    .from(knowledgeChunks)
    .where(tenant.where(knowledgeChunks, eq(knowledgeChunks.assistantId, assistantId)))
    .limit(1);
  return row !== undefined;
}

/** SQL of an organization's LLM presets. */
import { asc, eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { llmPresets } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type PresetRow = typeof llmPresets.$inferSelect;
type PresetValues = Pick<PresetRow, 'name' | 'provider' | 'model' | 'apiKeySealed' | 'baseUrl' | 'settings'>;

export async function listPresets(ex: Executor, tenant: Tenant): Promise<PresetRow[]> {
  return ex.select().from(llmPresets).where(tenant.owns(llmPresets)).orderBy(asc(llmPresets.id));
}

export async function findPreset(ex: Executor, tenant: Tenant, id: number): Promise<PresetRow | undefined> {
  const [row] = await ex
    .select()
    .from(llmPresets)
    .where(tenant.where(llmPresets, eq(llmPresets.id, id)))
    .limit(1);
  return row;
}

/** Undefined when the name is taken in this organization. */
export async function insertPreset(
  ex: Executor,
  tenant: Tenant,
  values: PresetValues & { createdByUserId: number },
): Promise<PresetRow | undefined> {
  const [row] = await ex
    .insert(llmPresets)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function updatePreset(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<PresetValues>,
): Promise<PresetRow | undefined> {
  const [row] = await ex
    .update(llmPresets)
    .set(withUpdatedAt(changes))
    .where(tenant.where(llmPresets, eq(llmPresets.id, id)))
    .returning();
  return row;
}

export async function deletePreset(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const rows = await ex
    .delete(llmPresets)
    .where(tenant.where(llmPresets, eq(llmPresets.id, id)))
    .returning({ id: llmPresets.id });
  return rows.length === 1;
}

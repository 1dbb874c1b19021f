/** The JSON of an assistant: its row and its configuration, every setting present (the schema is AssistantOut in schemas.ts). */
import { iso } from '../../lib/schema.js';
import { CONFIG_FIELDS } from './schemas.js';
import type { AssistantView } from './service.js';

export function assistantView({ row, config }: AssistantView) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    user_id: row.userId,
    name: row.name,
    description: row.description,
    is_active: row.isActive,
    llm_provider: row.llmProvider,
    // Every field is present: settings without a value (webhook_url, carrier_b_config…) are null.
    ...Object.fromEntries(CONFIG_FIELDS.map((field) => [field, config[field] ?? null])),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

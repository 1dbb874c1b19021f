/** The JSON of an LLM preset: the TypeBox schema and the function that fills it (the caller decides how its key shows). */
import { Type } from 'typebox';
import { iso, Timestamp } from '../../lib/schema.js';
import type { PresetRow } from './store.js';

export const PresetOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    name: Type.String(),
    provider: Type.String(),
    model: Type.String(),
    api_key: Type.Union([Type.String(), Type.Null()], {
      description: 'Masked (****1234), except from apply',
    }),
    base_url: Type.Union([Type.String(), Type.Null()]),
    settings: Type.Object({}, { additionalProperties: true }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'LlmPreset' },
);

export function presetView(row: PresetRow, apiKey: string | null) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    name: row.name,
    provider: row.provider,
    model: row.model,
    api_key: apiKey,
    base_url: row.baseUrl,
    settings: row.settings,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

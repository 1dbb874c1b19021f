/** The JSON of an API key (platform-api.md "User API key (metadata)"): the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { iso, literalUnion, NullableTimestamp, Timestamp } from '../../lib/schema.js';
import { LEVELS } from '../identity/principal.js';
import type { ApiKeyRow } from './store.js';

export const Level = literalUnion(LEVELS);

export const ApiKeyOut = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer(),
    organization_id: Type.Integer(),
    name: Type.String(),
    key_prefix: Type.String(),
    last_used_at: NullableTimestamp,
    usage_count: Type.Integer(),
    is_active: Type.Boolean(),
    permissions: Type.Object({}, { additionalProperties: Level }),
    rate_limit: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'ApiKey' },
);

export function apiKeyView(row: ApiKeyRow) {
  return {
    id: row.id,
    user_id: row.userId,
    organization_id: row.organizationId,
    name: row.name,
    key_prefix: row.keyPrefix,
    last_used_at: iso(row.lastUsedAt),
    usage_count: row.usageCount,
    is_active: row.isActive,
    permissions: row.permissions,
    rate_limit: row.rateLimit,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

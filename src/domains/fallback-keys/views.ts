/** The JSON of a fallback key, metadata only: the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { iso, Timestamp } from '../../lib/schema.js';
import type { FallbackKeyRow } from './store.js';

export const FallbackKeyOut = Type.Object(
  {
    id: Type.Integer(),
    provider: Type.String(),
    name: Type.String(),
    key_hint: Type.String({ description: 'The key masked: ****1234' }),
    enabled: Type.Boolean(),
    concurrent_limit: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'FallbackKey' },
);

/** `keyHint` is the key masked (the service decrypts it, so it is passed in). */
export function fallbackKeyView(row: FallbackKeyRow, keyHint: string) {
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    key_hint: keyHint,
    enabled: row.enabled,
    concurrent_limit: row.concurrentLimit,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

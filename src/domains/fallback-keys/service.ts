/**
 * Fallback keys: an organization's spare vendor keys, used when an assistant's own key fails or is
 * at its limit. Sealed at rest; answers carry metadata and a masked hint only.
 */
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import { isMasked, maskSecret, type SecretBox } from '../../lib/secrets.js';
import { conflict, notFound } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import * as store from './store.js';

export interface FallbackKeyInput {
  name: string;
  apiKey: string;
  enabled: boolean;
  concurrentLimit: number | null;
}

export class FallbackKeyService {
  constructor(private readonly deps: { db: Db; secrets: SecretBox }) {}

  list(principal: Principal, provider: string): Promise<store.FallbackKeyRow[]> {
    return store.listFallbackKeys(this.deps.db, principal.tenant, provider);
  }

  async create(
    principal: Principal,
    provider: string,
    input: FallbackKeyInput,
  ): Promise<store.FallbackKeyRow> {
    const row = await store.insertFallbackKey(this.deps.db, principal.tenant, {
      provider,
      name: input.name,
      apiKeySealed: this.deps.secrets.seal(input.apiKey),
      enabled: input.enabled,
      concurrentLimit: input.concurrentLimit,
    });
    if (!row) throw conflict(`A ${provider} fallback key with this name already exists`);
    return row;
  }

  /**
   * Changes the named fields; the key itself changes only when a non-empty, unmasked value is sent.
   * A key cannot follow an endpoint elsewhere: its provider is part of its address and never changes.
   */
  async update(
    principal: Principal,
    provider: string,
    id: number,
    input: Partial<FallbackKeyInput>,
  ): Promise<store.FallbackKeyRow> {
    const changes: Parameters<typeof store.updateFallbackKey>[4] = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.concurrentLimit !== undefined ? { concurrentLimit: input.concurrentLimit } : {}),
      ...(input.apiKey && !isMasked(input.apiKey)
        ? { apiKeySealed: this.deps.secrets.seal(input.apiKey) }
        : {}),
    };
    try {
      const row = await store.updateFallbackKey(this.deps.db, principal.tenant, provider, id, changes);
      if (!row) throw notFound('Fallback key not found');
      return row;
    } catch (error) {
      if (isUniqueViolation(error))
        throw conflict(`A ${provider} fallback key with this name already exists`);
      throw error;
    }
  }

  async remove(principal: Principal, provider: string, id: number): Promise<void> {
    if (!(await store.deleteFallbackKey(this.deps.db, principal.tenant, provider, id))) {
      throw notFound('Fallback key not found');
    }
  }

  hintOf(row: store.FallbackKeyRow): string {
    return maskSecret(this.deps.secrets.open(row.apiKeySealed)) ?? '****';
  }
}

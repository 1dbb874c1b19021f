/**
 * User API keys. The secret (`sk_` + 40 base62 characters, ~238 bits) is shown once at creation;
 * only its SHA-256 is stored. Any change takes effect at once on every process (IdentityChanges).
 */
import type { Db } from '../../db/client.js';
import { randomBase62, sha256Hex } from '../../lib/crypto.js';
import { notFound } from '../errors.js';
import type { Permissions, Principal } from '../identity/principal.js';
import type { IdentityChanges } from '../identity/principal-cache.js';
import * as store from './store.js';
import type { ApiKeyUsage } from './usage.js';

export const API_KEY_PREFIX_LENGTH = 12;

export function generateApiKeySecret(): string {
  return `sk_${randomBase62(40)}`;
}

export interface ApiKeyChanges {
  name?: string;
  permissions?: Permissions;
  rateLimit?: number | null;
  isActive?: boolean;
}

export class ApiKeyService {
  constructor(private readonly deps: { db: Db; usage: ApiKeyUsage; changes: IdentityChanges }) {}

  async list(principal: Principal): Promise<store.ApiKeyRow[]> {
    await this.deps.usage.flush(); // so the counts include this process's latest requests
    return store.listKeys(this.deps.db, principal.tenant, principal.user.id);
  }

  async create(
    principal: Principal,
    input: { name: string; permissions: Permissions; rateLimit: number | null },
  ): Promise<{ row: store.ApiKeyRow; secret: string }> {
    const secret = generateApiKeySecret();
    const row = await store.insertKey(this.deps.db, principal.tenant, {
      userId: principal.user.id,
      name: input.name,
      keyPrefix: secret.slice(0, API_KEY_PREFIX_LENGTH),
      keyHash: sha256Hex(secret),
      permissions: input.permissions,
      rateLimit: input.rateLimit,
    });
    return { row, secret };
  }

  async update(principal: Principal, keyId: number, changes: ApiKeyChanges): Promise<store.ApiKeyRow> {
    const row = await store.updateKey(this.deps.db, principal.tenant, principal.user.id, keyId, changes);
    if (!row) throw notFound('API key not found');
    await this.deps.changes.userChanged(principal.user.id);
    return row;
  }

  async remove(principal: Principal, keyId: number): Promise<void> {
    const deleted = await store.deleteKey(this.deps.db, principal.tenant, principal.user.id, keyId);
    if (!deleted) throw notFound('API key not found');
    await this.deps.changes.userChanged(principal.user.id);
  }
}

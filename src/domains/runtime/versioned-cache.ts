/**
 * Answers resolved from an organization's configuration (carrier credentials, the sending number,
 * SMS compliance), kept in memory per organization and key, each with the organization's
 * configuration version it was resolved at.
 *
 * The version (`sms_sending_versions`, migration 0019) is bumped by triggers on every table these
 * answers come from — organizations' settings, provider_credentials, assistants' config,
 * phone_numbers, sms_compliance — whoever writes it (another process, the CLI, an operator's SQL).
 * Whoever keeps an entry reads the version *before* the data it resolves: a change committed in
 * between leaves the entry older than its data, never newer, so comparing versions later catches it.
 * How the version is compared is the user's: an SMS send checks it in its own statement
 * (domains/sms/senders.ts), a carrier callback reads it with the call it concerns
 * (domains/runtime/credential-cache.ts). The triggers also NOTIFY `CONFIG_CHANGED_CHANNEL`, so every
 * process drops the organization's entries as soon as it hears, before it pays for a stale one.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Database, Executor } from '../../db/client.js';
import { smsSendingVersions } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

/** The channel the triggers of migration 0019 notify, with the organization's id as payload. */
export const CONFIG_CHANGED_CHANNEL = 'switchboard_sms_sending_changed';

/** The organization's configuration version now (0 before its first change). */
export async function configVersion(ex: Executor, tenant: Tenant): Promise<number> {
  const [row] = await ex
    .select({ version: smsSendingVersions.version })
    .from(smsSendingVersions)
    .where(tenant.owns(smsSendingVersions));
  return Number(row?.version ?? 0);
}

/**
 * The configuration version of the organization owning the row a one-table select reads from
 * `table`, as a column of that same statement: a carrier callback reads its call or message and the
 * version it verifies the signature at in one round trip. The table is named in full because in a
 * one-table select Drizzle leaves columns unqualified, and an unqualified organization_id would be
 * the subquery's own.
 */
export function configVersionOfRowIn(table: 'calls' | 'messages'): SQL<number> {
  return sql<number>`coalesce((select v.version from ${smsSendingVersions} v
    where v.organization_id = ${sql.identifier(table)}."organization_id"), 0)`.mapWith(Number);
}

export interface Versioned<V> {
  value: V;
  /** The organization's configuration version the value was resolved at. */
  version: number;
}

export class VersionedCache<V> {
  /** organization id → key → entry */
  readonly #entries = new Map<number, Map<string, Versioned<V> & { expiresAt: number }>>();
  #size = 0;

  /**
   * `ttlMs`: entries live this long at most (they hold opened credentials); the version does the
   * rest. `maxEntries`: past it, everything is dropped (a rare refill beats tracking recency).
   */
  constructor(private readonly limits: { ttlMs: number; maxEntries: number }) {}

  /** Listens for changes announced by the triggers (a real LISTEN on a server, PGlite's own otherwise). */
  async start(database: Database): Promise<void> {
    await database.listen(CONFIG_CHANGED_CHANNEL, (payload) => {
      const organizationId = Number(payload);
      if (Number.isInteger(organizationId)) this.forget(organizationId);
    });
  }

  /** The entry kept for the key, unless it expired. */
  get(organizationId: number, key: string): Versioned<V> | undefined {
    const entry = this.#entries.get(organizationId)?.get(key);
    return entry && entry.expiresAt > Date.now() ? entry : undefined;
  }

  set(organizationId: number, key: string, entry: Versioned<V>): void {
    if (this.#size >= this.limits.maxEntries) {
      this.#entries.clear();
      this.#size = 0;
    }
    const keys = this.#entries.get(organizationId) ?? new Map();
    if (!keys.has(key)) this.#size += 1;
    keys.set(key, { ...entry, expiresAt: Date.now() + this.limits.ttlMs });
    this.#entries.set(organizationId, keys);
  }

  /** Drops the organization's entries. */
  forget(organizationId: number): void {
    const keys = this.#entries.get(organizationId);
    if (!keys) return;
    this.#size -= keys.size;
    this.#entries.delete(organizationId);
  }
}

/**
 * The value for `key` at the organization's configuration version: from `cache` while the entry's
 * version is current, else from `resolve` (kept). `version`: read already by the caller (with the
 * record it concerns); when not given it is read now — before `resolve` reads the data (see above).
 */
export async function atCurrentVersion<V>(
  cache: VersionedCache<V>,
  ex: Executor,
  tenant: Tenant,
  key: string,
  resolve: () => Promise<V>,
  version?: number,
): Promise<V> {
  const current = version ?? (await configVersion(ex, tenant));
  const entry = cache.get(tenant.organizationId, key);
  if (entry && entry.version === current) return entry.value;
  const value = await resolve();
  cache.set(tenant.organizationId, key, { value, version: current });
  return value;
}

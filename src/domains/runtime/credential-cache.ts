/**
 * The carrier credentials a callback verifies its signature with, kept in memory per organization,
 * provider and assistant at the organization's configuration version (versioned-cache.ts): a
 * callback that brings the current version (read with the call it concerns, in one statement) costs
 * no statement and no decryption; one whose version moved resolves them again, so a credential
 * rotated by any process is used — and the old one refused — by the very next callback everywhere.
 * Absent credentials are kept too: adding some bumps the version like any other change.
 */
import type { Database, Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { isCarrierId } from '../../providers/carriers/index.js';
import type { ConfigResolver, TelephonyCredentials } from './resolve-config.js';
import { atCurrentVersion, VersionedCache } from './versioned-cache.js';

export class TelephonyCredentialCache {
  readonly #entries = new VersionedCache<TelephonyCredentials>({ ttlMs: 10 * 60_000, maxEntries: 20_000 });

  constructor(private readonly deps: { db: Db; resolver: ConfigResolver }) {}

  /** Listens for changes announced by the triggers (drops stale entries early; not needed for correctness). */
  start(database: Database): Promise<void> {
    return this.#entries.start(database);
  }

  /**
   * The credentials for `provider` (the assistant's own carrier config first, then the
   * organization's). `version`: the organization's configuration version read before this call —
   * with the record the callback concerns; when not given it is read now.
   */
  async credentials(
    tenant: Tenant,
    options: { provider: string; assistantId?: number | null },
    version?: number,
  ): Promise<TelephonyCredentials> {
    const { db, resolver } = this.deps;
    // A SIP trunk's credentials include the organization's sip_trunk_config: resolved each time (the
    // version covers that column only since migration 0021).
    if (!isCarrierId(options.provider)) return resolver.telephonyCredentials(tenant, options);
    const key = `${options.provider}:${options.assistantId ?? ''}`;
    const resolve = () => resolver.telephonyCredentials(tenant, options);
    return atCurrentVersion(this.#entries, db, tenant, key, resolve, version);
  }
}

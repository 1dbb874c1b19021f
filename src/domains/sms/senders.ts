/**
 * What every send reads before it writes — the sending number, its carrier credentials, and whether
 * SMS compliance lets it send — resolved once and kept in memory per organization and number, so
 * that a send costs one statement.
 *
 * Correctness does not rest on hearing about changes: an entry carries the organization's
 * configuration version (runtime/versioned-cache.ts), read before the answers themselves; the send
 * statement writes nothing unless that version is still current, and a stale entry is resolved
 * again. Entries are also dropped as soon as the triggers' NOTIFY is heard. Refusals (no such
 * number, compliance, no credentials) are not kept: they are rare, and must lift at once.
 */
import type { Database, Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { isCarrierId } from '../../providers/carriers/index.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { CONFIG_CHANGED_CHANNEL, configVersion, VersionedCache } from '../runtime/versioned-cache.js';
import { canSendOutbound } from '../sms-compliance/service.js';

/** The channel the triggers of migration 0019 notify, with the organization's id as payload. */
export const SENDING_CHANGED_CHANNEL = CONFIG_CHANGED_CHANNEL;

/** A number that may send, with what a send needs of it. */
export interface ReadySender {
  /** The organization's sending version this was resolved at. */
  version: number;
  phoneNumberId: number;
  assistantId: number;
  provider: CarrierId;
  credentials: Record<string, string>;
}

export class SenderCache {
  /** Entries live 10 minutes at most (they hold opened credentials); the version check does the rest. */
  readonly #entries = new VersionedCache<ReadySender>({ ttlMs: 10 * 60_000, maxEntries: 20_000 });

  constructor(private readonly deps: { db: Db; resolver: ConfigResolver }) {}

  /** Listens for changes announced by the triggers. */
  start(database: Database): Promise<void> {
    return this.#entries.start(database);
  }

  /** Drops the organization's entries. */
  forget(organizationId: number): void {
    this.#entries.forget(organizationId);
  }

  /**
   * The number `from` of the tenant, ready to send: from memory when resolved before, else resolved
   * now. Throws the send's refusals (404 no assistant, 400 SIP trunk or no credentials, 403 SMS
   * compliance).
   */
  async sender(tenant: Tenant, from: string): Promise<ReadySender> {
    const entry = this.#entries.get(tenant.organizationId, from);
    if (entry) return entry.value;
    const sender = await this.#resolve(tenant, from);
    this.#entries.set(tenant.organizationId, from, { value: sender, version: sender.version });
    return sender;
  }

  async #resolve(tenant: Tenant, from: string): Promise<ReadySender> {
    const { db, resolver } = this.deps;
    // First the version, then what it stands for: a change committed in between makes the entry
    // older than its data, never newer, so the send statement's check catches it.
    const version = await configVersion(db, tenant);
    const sender = await resolver.sender(tenant, { phoneNumber: from });
    const number = sender?.number;
    if (!sender || !number?.assistantId) throw notFound(`No assistant for the phone number ${from}`);
    if (!isCarrierId(number.provider))
      throw badRequest('Numbers of a SIP trunk cannot send SMS; use a carrier number');
    const provider: CarrierId = number.provider;
    const organization = await resolver.organizationSettings(tenant);
    if (organization.enforce_sms_compliance === true) {
      const verdict = await canSendOutbound(db, tenant, number.id);
      if (!verdict.can_send) throw forbidden(`SMS compliance: ${verdict.reason}`);
    }
    if (!sender.credentials)
      throw badRequest(`No ${provider} credentials: add them to the organization or the assistant`);
    return {
      version,
      phoneNumberId: number.id,
      assistantId: number.assistantId,
      provider,
      credentials: sender.credentials,
    };
  }
}

/**
 * What every send reads before it writes — the sending number, its carrier credentials, and whether
 * SMS compliance lets it send — resolved once and kept in memory per organization and number, so
 * that a send costs one statement.
 *
 * Correctness does not rest on hearing about changes: an entry carries the organization's sending
 * version (`sms_sending_versions`, bumped by triggers on every table these answers come from,
 * whoever writes it: another process, the CLI), read before the answers themselves; the send
 * statement writes nothing unless that version is still current, and a stale entry is resolved
 * again. The triggers also NOTIFY `SENDING_CHANGED_CHANNEL`, so every process drops the
 * organization's entries as soon as it hears and does not pay for a stale attempt. Refusals (no
 * such number, compliance, no credentials) are not kept: they are rare, and must lift at once.
 */
import type { Database, Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { isCarrierId } from '../../providers/carriers/index.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { canSendOutbound } from '../sms-compliance/service.js';
import { sendingVersion } from './send-store.js';

/** The channel the triggers of migration 0019 notify, with the organization's id as payload. */
export const SENDING_CHANGED_CHANNEL = 'switchboard_sms_sending_changed';

/** A number that may send, with what a send needs of it. */
export interface ReadySender {
  /** The organization's sending version this was resolved at. */
  version: number;
  phoneNumberId: number;
  assistantId: number;
  provider: CarrierId;
  credentials: Record<string, string>;
}

/** Entries live this long at most (they hold opened credentials); the version check does the rest. */
const ENTRY_TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 20_000;

export class SenderCache {
  /** organization id → sending number (E.164) → entry */
  readonly #entries = new Map<number, Map<string, { sender: ReadySender; expiresAt: number }>>();
  #size = 0;

  constructor(private readonly deps: { db: Db; resolver: ConfigResolver }) {}

  /** Listens for changes announced by the triggers (a real LISTEN on a server, PGlite's own otherwise). */
  async start(database: Database): Promise<void> {
    await database.listen(SENDING_CHANGED_CHANNEL, (payload) => {
      const organizationId = Number(payload);
      if (Number.isInteger(organizationId)) this.forget(organizationId);
    });
  }

  /** Drops the organization's entries. */
  forget(organizationId: number): void {
    const numbers = this.#entries.get(organizationId);
    if (!numbers) return;
    this.#size -= numbers.size;
    this.#entries.delete(organizationId);
  }

  /**
   * The number `from` of the tenant, ready to send: from memory when resolved before, else resolved
   * now. Throws the send's refusals (404 no assistant, 400 SIP trunk or no credentials, 403 SMS
   * compliance).
   */
  async sender(tenant: Tenant, from: string): Promise<ReadySender> {
    const entry = this.#entries.get(tenant.organizationId)?.get(from);
    if (entry && entry.expiresAt > Date.now()) return entry.sender;
    const sender = await this.#resolve(tenant, from);
    if (this.#size >= MAX_ENTRIES) {
      this.#entries.clear();
      this.#size = 0;
    }
    const numbers = this.#entries.get(tenant.organizationId) ?? new Map();
    if (!numbers.has(from)) this.#size += 1;
    numbers.set(from, { sender, expiresAt: Date.now() + ENTRY_TTL_MS });
    this.#entries.set(tenant.organizationId, numbers);
    return sender;
  }

  async #resolve(tenant: Tenant, from: string): Promise<ReadySender> {
    const { db, resolver } = this.deps;
    // First the version, then what it stands for: a change committed in between makes the entry
    // older than its data, never newer, so the send statement's check catches it.
    const version = await sendingVersion(db, tenant);
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

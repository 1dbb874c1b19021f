/**
 * The caller's organization: creation (with the one-time trial credits), settings, provider
 * credentials (sealed at rest, masked when shown), and how ready it is to take calls.
 */
import { isIP } from 'node:net';
import type { Db, Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { randomBase62 } from '../../lib/crypto.js';
import type { SecretBox } from '../../lib/secrets.js';
import { isTimeZone } from '../../lib/time.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import { ProviderError } from '../../providers/errors.js';
import {
  CARRIERS,
  KEYED_VENDORS,
  type KeyedVendor,
  kindOfVendor,
  type ProviderKind,
} from '../../providers/ids.js';
import { assistantKeySources } from '../assistants/reads.js';
import type { BillingService } from '../billing/service.js';
import { badRequest, conflict, invalidField, notFound, upstreamFailed } from '../errors.js';
import { listFallbackKeys } from '../fallback-keys/reads.js';
import type { Principal } from '../identity/principal.js';
import { type Credential, maskCredential, mergeCredential } from './credentials.js';
import * as store from './store.js';
import { sipTrunkStatus } from './trunk-status.js';

export const BYO_INACTIVE_REASON =
  'settings.hipaa_enabled is true and no business associate agreement is recorded (settings.baa_signed): ' +
  'bring-your-own keys are saved but not used';

export interface OrganizationDetails {
  row: store.OrganizationRow;
  /** Opened credentials by provider. */
  credentials: Map<string, Credential>;
  /** Why the organization's own vendor keys are not used, if they are not. */
  byoInactiveReason: string | null;
}

export interface OrganizationUpdate {
  name?: string;
  settings?: Record<string, unknown>;
  apiKeys?: Record<string, { api_key: string } | null>;
  sipTrunkConfig?: {
    sip_domain?: string;
    inbound_enabled?: boolean;
    username?: string;
    password?: string;
    port?: number;
    transport?: 'udp' | 'tcp' | 'tls';
    inbound_addresses?: string[];
    register?: boolean;
  } | null;
  carriers?: Partial<Record<(typeof CARRIERS)[number], Credential | null>>;
  /** The cloud account function tools run in ({access_key, secret_key, region?}); null removes it. */
  cloudFunctions?: Credential | null;
}

/** An IPv4/IPv6 address, or a CIDR block (`203.0.113.0/24`, `2001:db8::/32`). */
function isAddressBlock(text: string): boolean {
  const [address = '', prefix, ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return base || 'org';
}

/** The fields a carrier's credentials cannot do without. */
const REQUIRED_CARRIER_FIELDS: Record<CarrierId, string[]> = {
  carrier_a: ['account_sid', 'auth_token'],
  carrier_b: ['api_key', 'connection_id'],
  carrier_c: ['application_id', 'private_key'],
};

export function byoInactiveReason(settings: Record<string, unknown>): string | null {
  return settings.hipaa_enabled === true && settings.baa_signed !== true ? BYO_INACTIVE_REASON : null;
}

/**
 * What creating an organization changes in identity's tables (users and memberships), through the
 * identity domain: its creator becomes an admin member, and may claim the one-time trial credits.
 */
export interface OrganizationFounders {
  addFounder(ex: Executor, userId: number, organizationId: number): Promise<void>;
  /** True only the first time for a user, even under concurrency. */
  claimTrialCredits(ex: Executor, userId: number): Promise<boolean>;
}

export class OrganizationService {
  constructor(
    private readonly deps: {
      db: Db;
      secrets: SecretBox;
      billing: BillingService;
      trialCredits: number;
      carriers: Carriers;
      founders: OrganizationFounders;
    },
  ) {}

  /**
   * Asks the carrier whether credentials work: the ones given (a masked secret stands for the stored
   * one), else the stored ones. Nothing is saved.
   */
  async validateCarrier(principal: Principal, carrier: CarrierId, given?: Credential) {
    const details = await this.#details(this.deps.db, principal);
    const stored = details.credentials.get(carrier);
    let credentials = stored;
    if (given) {
      const { credential, refused } = mergeCredential(carrier, given, stored);
      if (refused) throw invalidField(['body', ...refused.location], refused.msg);
      credentials = credential;
    }
    if (!credentials)
      throw badRequest(`No ${carrier} credentials are stored; send them in the body to check them first`);
    for (const field of REQUIRED_CARRIER_FIELDS[carrier]) {
      if (typeof credentials[field] !== 'string' || credentials[field] === '')
        throw invalidField(['body', field], `${carrier} credentials need ${field}`, 'missing');
    }
    try {
      const check = await this.deps.carriers[carrier].validateCredentials(credentials);
      return { provider: carrier, valid: check.valid, detail: check.detail, account: check.account ?? null };
    } catch (error) {
      if (error instanceof ProviderError)
        throw upstreamFailed(`${carrier} could not check the credentials: ${error.message}`);
      throw error;
    }
  }

  /**
   * Creates an organization whose admin is `userId`. The slug is the given one (409 when taken) or
   * derived from the name. The user's first own organization receives the trial credits.
   */
  async create(
    ex: Executor,
    userId: number,
    values: { name: string; slug?: string; description?: string | null; domain?: string | null },
  ): Promise<store.OrganizationRow> {
    let row: store.OrganizationRow | undefined;
    if (values.slug) {
      row = await store.insertOrganization(ex, { ...values, slug: values.slug });
      if (!row) throw conflict('An organization with this slug already exists');
    } else {
      while (!row) {
        row = await store.insertOrganization(ex, {
          ...values,
          slug: `${slugify(values.name)}-${randomBase62(6).toLowerCase()}`,
        });
      }
    }
    await this.deps.founders.addFounder(ex, userId, row.id);
    if (this.deps.trialCredits > 0 && (await this.deps.founders.claimTrialCredits(ex, userId))) {
      await this.deps.billing.apply(
        {
          organizationId: row.id,
          amount: this.deps.trialCredits,
          kind: 'trial_credit',
          description: 'Trial credits',
        },
        ex,
      );
    }
    return row;
  }

  async createForUser(
    principal: Principal,
    values: { name: string; slug: string; description?: string | null; domain?: string | null },
  ): Promise<store.OrganizationRow> {
    return this.deps.db.transaction((tx) => this.create(tx, principal.user.id, values));
  }

  async current(principal: Principal): Promise<OrganizationDetails> {
    return this.#details(this.deps.db, principal);
  }

  async update(principal: Principal, update: OrganizationUpdate): Promise<OrganizationDetails> {
    if (
      typeof update.settings?.default_timezone === 'string' &&
      !isTimeZone(update.settings.default_timezone)
    ) {
      throw invalidField(['body', 'settings', 'default_timezone'], 'Unknown time zone');
    }
    return this.deps.db.transaction(async (tx) => {
      // Settings merge and masked secrets read before they write: hold the row so that concurrent
      // updates take turns instead of overwriting each other.
      const before = await this.#details(tx, principal, { lock: true });
      const changes: Parameters<typeof store.updateOrganization>[2] = {};
      if (update.name !== undefined) changes.name = update.name;
      if (update.settings !== undefined) {
        // Settings merge: named keys change, `null` removes a key, others stay.
        const merged = { ...before.row.settings };
        for (const [key, value] of Object.entries(update.settings)) {
          if (value === null) delete merged[key];
          else merged[key] = value;
        }
        changes.settings = merged;
      }

      const credentialChanges = new Map<string, Credential | null>();
      for (const [vendor, value] of Object.entries(update.apiKeys ?? {}))
        credentialChanges.set(vendor, value);
      for (const [carrier, value] of Object.entries(update.carriers ?? {}))
        credentialChanges.set(carrier, value ?? null);
      if (update.cloudFunctions !== undefined)
        credentialChanges.set('cloud_functions', update.cloudFunctions);
      if (update.sipTrunkConfig !== undefined) {
        const { username, password, ...plain } = update.sipTrunkConfig ?? {};
        (plain.inbound_addresses ?? []).forEach((address, index) => {
          if (!isAddressBlock(address))
            throw invalidField(
              ['body', 'sip_trunk_config', 'inbound_addresses', index],
              'Not an IPv4 or IPv6 address, or a CIDR block of one',
            );
        });
        changes.sipTrunkConfig = update.sipTrunkConfig === null ? null : plain;
        const secret = Object.fromEntries(
          Object.entries({ username, password }).filter(([, v]) => v !== undefined),
        ) as Credential;
        // username and password change independently: a field not sent keeps its stored value, as if
        // sent back masked — so a password not sent is checked against a new sip_domain like one that is.
        const storedTrunk = before.credentials.get('sip_trunk');
        if (update.sipTrunkConfig === null) credentialChanges.set('sip_trunk', null);
        else if (Object.keys(secret).length > 0 || storedTrunk) {
          credentialChanges.set('sip_trunk', {
            ...(storedTrunk ? maskCredential('sip_trunk', storedTrunk) : {}),
            ...secret,
          });
        }
      }
      for (const [provider, incoming] of credentialChanges) {
        if (incoming === null) {
          await store.deleteCredential(tx, principal.tenant, provider);
          continue;
        }
        // The trunk's password is bound to its sip_domain, which is stored beside the credential.
        const endpoint =
          provider === 'sip_trunk'
            ? { next: changes.sipTrunkConfig ?? undefined, previous: before.row.sipTrunkConfig ?? undefined }
            : {};
        const { credential, refused } = mergeCredential(
          provider,
          incoming,
          before.credentials.get(provider),
          endpoint,
        );
        if (refused) {
          const where =
            provider === 'sip_trunk'
              ? ['sip_trunk_config']
              : KEYED_VENDORS.includes(provider as never)
                ? ['api_keys', provider]
                : [provider];
          throw invalidField(['body', ...where, ...refused.location], refused.msg);
        }
        await store.upsertCredential(tx, principal.tenant, provider, this.deps.secrets.sealJson(credential));
      }
      if (Object.keys(changes).length > 0 || credentialChanges.size > 0) {
        await store.updateOrganization(tx, principal.tenant, changes);
      }
      return this.#details(tx, principal);
    });
  }

  /**
   * Per provider kind: which providers have usable credentials, which are inactive and why; and the
   * SIP trunk's health when the organization has one.
   */
  async configurationStatus(principal: Principal) {
    const details = await this.#details(this.deps.db, principal);
    const fallbacks = await listFallbackKeys(this.deps.db, principal.tenant);
    type Usable = { provider: string; sources: string[] };
    type Inactive = { provider: string; source: string; reason: string };
    const kinds: Record<ProviderKind, { usable: Map<string, Usable>; inactive: Inactive[] }> = {
      telephony: { usable: new Map(), inactive: [] },
      llm: { usable: new Map(), inactive: [] },
      stt: { usable: new Map(), inactive: [] },
      tts: { usable: new Map(), inactive: [] },
    };
    const use = (kind: ProviderKind, provider: string, source: string) => {
      const entry = kinds[kind].usable.get(provider) ?? { provider, sources: [] };
      if (!entry.sources.includes(source)) entry.sources.push(source);
      kinds[kind].usable.set(provider, entry);
    };
    for (const carrier of CARRIERS)
      if (details.credentials.has(carrier)) use('telephony', carrier, 'organization');
    const sipDomain = details.row.sipTrunkConfig?.sip_domain;
    if (typeof sipDomain === 'string' && sipDomain !== '') use('telephony', 'sip_trunk', 'organization');
    for (const vendor of KEYED_VENDORS) {
      if (!details.credentials.has(vendor)) continue;
      if (details.byoInactiveReason) {
        kinds[kindOfVendor(vendor)].inactive.push({
          provider: vendor,
          source: 'organization',
          reason: details.byoInactiveReason,
        });
      } else {
        use(kindOfVendor(vendor), vendor, 'organization');
      }
    }
    // Keys an assistant carries itself count for the providers it uses.
    for (const row of await assistantKeySources(this.deps.db, principal.tenant)) {
      if (row.carrierA) use('telephony', 'carrier_a', 'assistant');
      if (row.carrierB) use('telephony', 'carrier_b', 'assistant');
      const own: Array<[boolean, KeyedVendor | 'custom']> = [
        [row.llmKey || (row.llmProvider === 'custom' && row.customUrl), row.llmProvider as KeyedVendor],
        [row.sttKey, 'stt_a'],
        [row.ttsKey, (row.ttsProvider ?? 'tts_a') as KeyedVendor],
      ];
      for (const [present, vendor] of own) {
        if (!present) continue;
        const kind = vendor === 'custom' ? 'llm' : kindOfVendor(vendor);
        const listed = kinds[kind].inactive.some((i) => i.provider === vendor && i.source === 'assistant');
        if (!details.byoInactiveReason) use(kind, vendor, 'assistant');
        else if (!listed)
          kinds[kind].inactive.push({
            provider: vendor,
            source: 'assistant',
            reason: details.byoInactiveReason,
          });
      }
    }
    for (const key of fallbacks) {
      const kind = kindOfVendor(key.provider as (typeof KEYED_VENDORS)[number]);
      // Fallback keys are the organization's own keys too: the HIPAA rule applies to them alike.
      const reason = !key.enabled ? `fallback key "${key.name}" is disabled` : details.byoInactiveReason;
      if (reason) kinds[kind].inactive.push({ provider: key.provider, source: 'fallback', reason });
      else use(kind, key.provider, 'fallback');
    }
    const MISSING: Record<ProviderKind, string> = {
      telephony:
        'telephony: no carrier credentials (organization or assistant carrier_a, carrier_b, carrier_c) and no SIP trunk domain',
      llm: 'llm: no usable key for any language model (assistant, api_keys or fallback keys for llm_a … llm_e)',
      stt: 'stt: no usable speech-to-text key (assistant, api_keys or fallback keys for stt_a)',
      tts: 'tts: no usable text-to-speech key (assistant, api_keys or fallback keys for tts_a … tts_d)',
    };
    const providers = Object.fromEntries(
      (Object.keys(kinds) as ProviderKind[]).map((kind) => [
        kind,
        {
          ready: kinds[kind].usable.size > 0,
          usable: [...kinds[kind].usable.values()],
          inactive: kinds[kind].inactive,
        },
      ]),
    ) as Record<ProviderKind, { ready: boolean; usable: Usable[]; inactive: Inactive[] }>;
    const missing = (Object.keys(kinds) as ProviderKind[])
      .filter((k) => !providers[k].ready)
      .map((k) => MISSING[k]);
    const trunk = details.row.sipTrunkConfig;
    const sip_trunk =
      trunk && typeof sipDomain === 'string' && sipDomain !== ''
        ? sipTrunkStatus(this.deps.carriers.sip_trunk, details.row.id, trunk)
        : undefined;
    return { ready: missing.length === 0, missing, providers, ...(sip_trunk ? { sip_trunk } : {}) };
  }

  async updateConcurrency(
    principal: Principal,
    settings: Record<string, Record<string, { enabled: boolean; concurrent_limit: number }>>,
  ): Promise<store.OrganizationRow> {
    const row = await store.updateOrganization(this.deps.db, principal.tenant, {
      concurrencySettings: settings,
    });
    if (!row) throw notFound('Organization not found');
    return row;
  }

  async #details(
    ex: Executor,
    principal: Principal,
    options: { lock?: boolean } = {},
  ): Promise<OrganizationDetails> {
    const row = await store.findOwnOrganization(ex, principal.tenant, { forUpdate: options.lock });
    if (!row) throw notFound('Organization not found');
    const credentials = new Map<string, Credential>();
    for (const stored of await store.listCredentials(ex, principal.tenant)) {
      credentials.set(stored.provider, this.deps.secrets.openJson<Credential>(stored.sealed));
    }
    return { row, credentials, byoInactiveReason: byoInactiveReason(row.settings) };
  }

  // ---- the webhook signing secret, kept on the organization's row for the webhooks domain ----

  /** Stores the sealed secret only if the organization has none yet; true when it was stored. */
  keepWebhookSecretIfNone(ex: Executor, tenant: Tenant, sealed: string): Promise<boolean> {
    return store.storeWebhookSecretIfMissing(ex, tenant, sealed);
  }

  /** Replaces the sealed secret; false when the organization does not exist. */
  replaceWebhookSecret(ex: Executor, tenant: Tenant, sealed: string): Promise<boolean> {
    return store.replaceWebhookSecret(ex, tenant, sealed);
  }
}

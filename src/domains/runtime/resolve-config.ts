/**
 * What a call or a message will really use. An assistant's own settings win over the organization's
 * defaults: for each vendor the key comes from the assistant, else the organization's `api_keys`,
 * else its first enabled fallback key, and the remaining enabled fallback keys stand behind it —
 * except where the assistant names its own address for the vendor (a language model's `base_url`):
 * there only its own key goes. The
 * telephony provider is the phone number's; its credentials are the assistant's carrier config, else
 * the organization's. Every later capability (calls, SMS, campaigns, the call runtime) asks here,
 * also for the two answers they share: which number a call or message goes out from with which
 * credentials (`resolveSender`), and which assistant a number is answered by (`assistantForNumber`,
 * graphs/reads.ts).
 * Function tools run in the organization's cloud account (`cloudFunctions`).
 */
import type { Database, Db, Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { isTollFree } from '../../lib/phone.js';
import { openPaths } from '../../lib/secret-paths.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { KeyedVendor } from '../../providers/ids.js';
import { findAssistant } from '../assistants/reads.js';
import { type AssistantSettings, SECRET_PATHS } from '../assistants/schemas.js';
import { listFallbackKeys } from '../fallback-keys/reads.js';
import { assistantForNumber } from '../graphs/reads.js';
import type { Credential } from '../organizations/credentials.js';
import { findOwnOrganization, listCredentials } from '../organizations/reads.js';
import { byoInactiveReason } from '../organizations/service.js';
import { findByNumber, firstNumberOfAssistant, type PhoneNumberRow } from '../phone-numbers/reads.js';
import { defaultSmsRate } from '../phone-numbers/service.js';
import { atCurrentVersion, VersionedCache } from './versioned-cache.js';

type Json = Record<string, unknown>;

export type KeySource = 'assistant' | 'organization' | 'fallback';

export interface KeyChoice {
  apiKey: string;
  source: KeySource;
  /** The fallback key's name, when the key is one. */
  name?: string;
  /** How many calls may hold this key at once, cluster-wide (domains/leases); absent: no limit. */
  limit?: KeyLimit;
}

/** A limited key of the organization: which one (`organization` or `fallback:<id>`), and its limit. */
export interface KeyLimit {
  keyRef: string;
  max: number;
}

export interface VendorChoice {
  provider: string;
  /** The key to use first; null when there is none (or none may be used). */
  key: KeyChoice | null;
  /** Enabled fallback keys of the same provider, in order, for when `key` fails or is at its limit. */
  backups: KeyChoice[];
}

export interface TelephonyChoice {
  phoneNumberId: number;
  phoneNumber: string;
  provider: string;
  /** carrier_a {account_sid, auth_token}, carrier_b {api_key, connection_id}, carrier_c
   * {application_id, private_key}, sip_trunk {sip_domain, username?, password?, …}; null if none. */
  credentials: Credential | null;
  source: 'assistant' | 'organization' | null;
  smsRatePerSecond: number;
  isTollFree: boolean;
}

export interface ResolvedConfig {
  assistant: { id: number; name: string; isActive: boolean; llmProvider: string };
  /** The assistant's settings as stored, secrets in clear. */
  settings: AssistantSettings;
  llm: VendorChoice & { model: string | null; baseUrl: string | null };
  /** The assistant's own fallback models (llm_fallback_providers), when enabled and usable. */
  llmFallbacks: Array<{ provider: string; apiKey: string; model: string | null; baseUrl: string | null }>;
  stt: VendorChoice & { model: string | null; language: string | null };
  tts: VendorChoice & { providerConfig: Json };
  /** null when no phone number is given or routed to the assistant. */
  telephony: TelephonyChoice | null;
  /** The organization's cloud account, where function tools run; null when it has stored none. */
  cloudFunctions: CloudFunctionsChoice | null;
  /** Why a part above cannot work, one line per part; empty when everything is usable. */
  missing: string[];
}

export interface CloudFunctionsChoice {
  accessKeyId: string;
  secretAccessKey: string;
  /** The credential's region, when it names one (a tool may name its own). */
  region: string | null;
}

export interface ResolveOptions {
  assistantId: number;
  /** The number the call or message goes out from (E.164); default: the first routed to the assistant. */
  phoneNumber?: string;
}

export interface SenderOptions {
  /** The number to send from (E.164); default: the first number routed to `assistantId`. */
  phoneNumber?: string;
  /** The assistant it goes out for (its carrier config before the organization's); default: the number's. */
  assistantId?: number;
}

/** A provider's carrier credentials and whose they are; null credentials when there are none. */
export interface TelephonyCredentials {
  credentials: Credential | null;
  source: TelephonyChoice['source'];
}

export interface Sender {
  number: PhoneNumberRow;
  /** The carrier credentials for the number's provider; null when there are none. */
  credentials: Credential | null;
  source: TelephonyChoice['source'];
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/** A nested part of the settings, or an empty one where it is absent (or, in older data, no object). */
const part = <T extends object>(value: T | null | undefined): Partial<T> => (isObject(value) ? value : {});

/** The assistant's stored configuration with its secrets opened (validated when it was written). */
function openSettings(config: Json, secrets: SecretBox): AssistantSettings {
  return openPaths(config, SECRET_PATHS, secrets) as AssistantSettings;
}

/** Resolves the configuration; undefined when the assistant is not the tenant's. */
export async function resolveConfig(
  ex: Executor,
  secrets: SecretBox,
  tenant: Tenant,
  options: ResolveOptions,
): Promise<ResolvedConfig | undefined> {
  const assistant = await findAssistant(ex, tenant, options.assistantId);
  if (!assistant) return undefined;
  const [organization, credentialRows, fallbackRows, number] = await Promise.all([
    findOwnOrganization(ex, tenant),
    listCredentials(ex, tenant),
    listFallbackKeys(ex, tenant),
    senderNumber(ex, tenant, { phoneNumber: options.phoneNumber, assistantId: assistant.id }),
  ]);
  const settings = openSettings(assistant.config, secrets);
  const credentials = new Map(
    credentialRows.map((row) => [row.provider, secrets.openJson<Credential>(row.sealed)]),
  );
  // Under HIPAA without a business associate agreement no bring-your-own key is used: not the
  // organization's, not its fallback keys, not an assistant's own.
  const byoBlocked = byoInactiveReason(organization?.settings ?? {});
  const missing: string[] = [];

  /** `ownOnly`: the assistant sends this vendor's requests to an address of its own choosing. */
  const choose = (vendor: string, own: string | null, ownOnly = false): VendorChoice => {
    if (byoBlocked) return { provider: vendor, key: null, backups: [] };
    // The organization's and its fallback keys are given for the vendor's own address: they never go
    // to an address an assistant names (whoever edits the assistant would otherwise receive them).
    if (ownOnly)
      return { provider: vendor, key: own ? { apiKey: own, source: 'assistant' } : null, backups: [] };
    const backups: KeyChoice[] = fallbackRows
      .filter((row) => row.provider === vendor && row.enabled)
      .map((row) => ({
        apiKey: secrets.open(row.apiKeySealed),
        source: 'fallback',
        name: row.name,
        ...(row.concurrentLimit !== null
          ? { limit: { keyRef: `fallback:${row.id}`, max: row.concurrentLimit } }
          : {}),
      }));
    const organizationKey = text(credentials.get(vendor as KeyedVendor)?.api_key);
    const organizationLimit = concurrencyLimit(organization?.concurrencySettings, vendor);
    const candidates: KeyChoice[] = [
      ...(own ? [{ apiKey: own, source: 'assistant' as const }] : []),
      ...(organizationKey
        ? [
            {
              apiKey: organizationKey,
              source: 'organization' as const,
              ...(organizationLimit !== null
                ? { limit: { keyRef: 'organization', max: organizationLimit } }
                : {}),
            },
          ]
        : []),
      ...backups,
    ];
    const [key = null, ...rest] = candidates;
    return { provider: vendor, key, backups: key?.source === 'fallback' ? rest : backups };
  };

  const providerConfig = part(settings.llm_provider_config);
  const llmBaseUrl = text(providerConfig.base_url);
  const llm = {
    ...choose(assistant.llmProvider, text(providerConfig.api_key), llmBaseUrl !== null),
    model: text(providerConfig.model),
    baseUrl: llmBaseUrl,
  };
  // A custom model at its own URL (a local server) may need no key at all.
  if (!llm.key && !(assistant.llmProvider === 'custom' && llm.baseUrl && !byoBlocked)) {
    missing.push(
      llm.baseUrl && !byoBlocked
        ? `llm: ${assistant.llmProvider} at the assistant's llm_provider_config.base_url needs the assistant's own key (llm_provider_config.api_key); organization and fallback keys go only to the vendor's address`
        : noKey('llm', assistant.llmProvider, 'llm_provider_config.api_key', byoBlocked),
    );
  }
  const fallbackSettings = part(settings.llm_fallback_providers);
  const llmFallbacks =
    fallbackSettings.enabled === true && Array.isArray(fallbackSettings.fallbacks) && !byoBlocked
      ? fallbackSettings.fallbacks.map((f) => ({
          provider: String(f.provider),
          apiKey: String(f.api_key),
          model: text(f.model),
          baseUrl: text(f.base_url),
        }))
      : [];

  const sttSettings = part(settings.stt_settings);
  const stt = {
    ...choose('stt_a', text(sttSettings.api_key)),
    model: text(sttSettings.model),
    language: text(sttSettings.language),
  };
  if (!stt.key) missing.push(noKey('stt', 'stt_a', 'stt_settings.api_key', byoBlocked));

  const ttsSettings = part(settings.tts_settings);
  const ttsProvider = text(ttsSettings.provider) ?? 'tts_a';
  const ttsProviderConfig: Json = isObject(ttsSettings.provider_config) ? ttsSettings.provider_config : {};
  const tts = {
    ...choose(ttsProvider, text(ttsSettings.api_key) ?? text(ttsProviderConfig.api_key)),
    providerConfig: ttsProviderConfig,
  };
  if (!tts.key) missing.push(noKey('tts', ttsProvider, 'tts_settings.api_key', byoBlocked));

  let telephony: TelephonyChoice | null = null;
  if (!number) {
    missing.push(
      options.phoneNumber !== undefined
        ? `telephony: ${options.phoneNumber} is not a phone number of this organization`
        : 'telephony: no phone number is routed to this assistant',
    );
  } else {
    const { credentials: chosen, source } = carrierCredentials(
      number.provider,
      settings,
      credentials,
      organization,
    );
    telephony = {
      phoneNumberId: number.id,
      phoneNumber: number.phoneNumber,
      provider: number.provider,
      credentials: chosen,
      source,
      smsRatePerSecond: number.smsRatePerSecond ?? defaultSmsRate(number.phoneNumber),
      isTollFree: isTollFree(number.phoneNumber),
    };
    if (!chosen) {
      missing.push(
        number.provider === 'sip_trunk'
          ? 'telephony: sip_trunk needs the organization sip_trunk_config.sip_domain'
          : `telephony: no ${number.provider} credentials (the assistant's ${number.provider}_config or the organization's ${number.provider})`,
      );
    }
  }

  const cloud = credentials.get('cloud_functions');
  const cloudFunctions =
    cloud && text(cloud.access_key) && text(cloud.secret_key)
      ? { accessKeyId: cloud.access_key!, secretAccessKey: cloud.secret_key!, region: text(cloud.region) }
      : null;

  return {
    assistant: {
      id: assistant.id,
      name: assistant.name,
      isActive: assistant.isActive,
      llmProvider: assistant.llmProvider,
    },
    settings,
    llm,
    llmFallbacks,
    stt,
    tts,
    telephony,
    cloudFunctions,
    missing,
  };
}

/**
 * The organization's `concurrency_settings` limit for its own key of `vendor` (tts or stt); null when
 * none is set or it is not enabled.
 */
function concurrencyLimit(
  settings: Record<string, Record<string, { enabled: boolean; concurrent_limit: number }>> | undefined,
  vendor: string,
): number | null {
  const setting = settings?.tts?.[vendor] ?? settings?.stt?.[vendor];
  return setting?.enabled === true && Number.isInteger(setting.concurrent_limit)
    ? setting.concurrent_limit
    : null;
}

function noKey(kind: string, provider: string, assistantField: string, byoBlocked: string | null): string {
  return byoBlocked
    ? `${kind}: ${provider} keys are not used: ${byoBlocked}`
    : `${kind}: no key for ${provider} (assistant ${assistantField}, organization api_keys.${provider}, or an enabled fallback key)`;
}

/** The phone number's carrier credentials: the assistant's own config first, then the organization's. */
function carrierCredentials(
  provider: string,
  settings: AssistantSettings,
  credentials: Map<string, Credential>,
  organization: { sipTrunkConfig: Json | null } | undefined,
): { credentials: Credential | null; source: TelephonyChoice['source'] } {
  const own =
    provider === 'carrier_a'
      ? settings.carrier_a_config
      : provider === 'carrier_b'
        ? settings.carrier_b_config
        : undefined;
  if (isObject(own)) {
    return { credentials: { ...(own as Credential) }, source: 'assistant' };
  }
  if (provider === 'sip_trunk') {
    const trunk = organization?.sipTrunkConfig ?? null;
    if (!trunk || !text(trunk.sip_domain)) return { credentials: null, source: null };
    const plain = Object.fromEntries(Object.entries(trunk).map(([k, v]) => [k, String(v)]));
    return { credentials: { ...plain, ...(credentials.get('sip_trunk') ?? {}) }, source: 'organization' };
  }
  const stored = credentials.get(provider);
  return stored
    ? { credentials: { ...stored }, source: 'organization' }
    : { credentials: null, source: null };
}

/**
 * Only the carrier credentials for `provider`: the assistant's own config when it has one for the
 * provider, else the organization's. Webhook verification uses this (an inbound message to a
 * number routed to no assistant still has an organization and its credentials).
 */
export async function resolveTelephonyCredentials(
  ex: Executor,
  secrets: SecretBox,
  tenant: Tenant,
  options: { provider: string; assistantId?: number | null },
): Promise<TelephonyCredentials> {
  const [organization, credentialRows, assistant] = await Promise.all([
    findOwnOrganization(ex, tenant),
    listCredentials(ex, tenant),
    options.assistantId ? findAssistant(ex, tenant, options.assistantId) : undefined,
  ]);
  const wanted = credentialRows.filter((row) => row.provider === options.provider);
  const credentials = new Map(wanted.map((row) => [row.provider, secrets.openJson<Credential>(row.sealed)]));
  const settings = assistant ? openSettings(assistant.config, secrets) : {};
  return carrierCredentials(options.provider, settings, credentials, organization);
}

/** The number a call or message goes out from: the one given, else the first routed to the assistant. */
function senderNumber(
  ex: Executor,
  tenant: Tenant,
  options: SenderOptions,
): Promise<PhoneNumberRow | undefined> {
  if (options.phoneNumber !== undefined) return findByNumber(ex, tenant, options.phoneNumber);
  if (options.assistantId !== undefined) return firstNumberOfAssistant(ex, tenant, options.assistantId);
  return Promise.resolve(undefined);
}

/**
 * The number a call or message goes out from (see SenderOptions) and the carrier credentials it
 * goes with; undefined when the organization has no such number. Whether the number may be used —
 * a carrier's, routed to an assistant — is the caller's to say, in its own words.
 */
export async function resolveSender(
  ex: Executor,
  secrets: SecretBox,
  tenant: Tenant,
  options: SenderOptions,
): Promise<Sender | undefined> {
  const number = await senderNumber(ex, tenant, options);
  if (!number) return undefined;
  const { credentials, source } = await resolveTelephonyCredentials(ex, secrets, tenant, {
    provider: number.provider,
    assistantId: options.assistantId ?? number.assistantId,
  });
  return { number, credentials, source };
}

/** The resolver as a service, for the composition root. */
export class ConfigResolver {
  /** Configurations resolved for calls, at their organization's version (versioned-cache.ts). */
  readonly #current = new VersionedCache<ResolvedConfig | null>({ ttlMs: 60_000, maxEntries: 5_000 });

  constructor(private readonly deps: { db: Db; secrets: SecretBox }) {}

  /** Listens for configuration changes (drops stale entries early; not needed for correctness). */
  start(database: Database): Promise<void> {
    return this.#current.start(database);
  }

  resolve(tenant: Tenant, options: ResolveOptions, ex: Executor = this.deps.db) {
    return resolveConfig(ex, this.deps.secrets, tenant, options);
  }

  /**
   * `resolve` as it stands now, from memory while the organization's configuration version has not
   * moved: one statement instead of five for each call that starts, none when the caller read the
   * version already (`version`, with the call it concerns). A copy: callers may change it.
   */
  async resolveCurrent(
    tenant: Tenant,
    options: ResolveOptions,
    version?: number,
  ): Promise<ResolvedConfig | undefined> {
    const key = `${options.assistantId}:${options.phoneNumber ?? ''}`;
    const resolve = async () => (await this.resolve(tenant, options)) ?? null;
    const resolved = await atCurrentVersion(this.#current, this.deps.db, tenant, key, resolve, version);
    return resolved ? structuredClone(resolved) : undefined;
  }

  /** The organization's settings (`enforce_sms_compliance`, `hipaa_enabled`, …). */
  async organizationSettings(tenant: Tenant): Promise<Record<string, unknown>> {
    return (await findOwnOrganization(this.deps.db, tenant))?.settings ?? {};
  }

  telephonyCredentials(tenant: Tenant, options: { provider: string; assistantId?: number | null }) {
    return resolveTelephonyCredentials(this.deps.db, this.deps.secrets, tenant, options);
  }

  sender(tenant: Tenant, options: SenderOptions, ex: Executor = this.deps.db) {
    return resolveSender(ex, this.deps.secrets, tenant, options);
  }

  assistantForNumber(
    tenant: Tenant,
    number: { assistantId: number | null; graphId: number | null },
    ex: Executor = this.deps.db,
  ) {
    return assistantForNumber(ex, tenant, number);
  }
}

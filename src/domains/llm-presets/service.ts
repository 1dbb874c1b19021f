/**
 * LLM presets: named model configurations an organization reuses across assistants. The API key
 * is sealed at rest and masked in every answer except the admin-only `apply`.
 */
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { OutboundTargets } from '../../lib/outbound-target.js';
import { restoreMasked, type SecretField } from '../../lib/secret-paths.js';
import { isMasked, maskSecret, type SecretBox } from '../../lib/secrets.js';
import { refusedSettings } from '../../providers/llm/parameters.js';
import { conflict, invalidField, notFound, ValidationFailed } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import * as store from './store.js';

/** The preset's key goes to its provider, at its base URL when it has one. */
const PRESET_SECRETS: readonly SecretField[] = [{ path: 'api_key', boundTo: ['provider', 'base_url'] }];

export interface PresetInput {
  name: string;
  provider: string;
  model: string;
  apiKey?: string | null;
  baseUrl?: string | null;
  settings?: Record<string, unknown>;
}

export class LlmPresetService {
  constructor(private readonly deps: { db: Db; secrets: SecretBox; targets: OutboundTargets }) {}

  list(principal: Principal): Promise<store.PresetRow[]> {
    return store.listPresets(this.deps.db, principal.tenant);
  }

  async create(principal: Principal, input: PresetInput): Promise<store.PresetRow> {
    checkBaseUrl(input.provider, input.baseUrl ?? null);
    checkSettings(input.provider, input.model, input.settings ?? {});
    await this.#checkTarget(input.baseUrl);
    const row = await store.insertPreset(this.deps.db, principal.tenant, {
      name: input.name,
      provider: input.provider,
      model: input.model,
      apiKeySealed: input.apiKey ? this.deps.secrets.seal(input.apiKey) : null,
      baseUrl: input.baseUrl ?? null,
      settings: input.settings ?? {},
      createdByUserId: principal.user.id,
    });
    if (!row) throw conflict('A preset with this name already exists');
    return row;
  }

  /**
   * Changes the named fields. `api_key`: a new value replaces the key, null removes it, an empty or
   * masked (`****…`) value keeps it — but only while `provider` and `base_url` stay: the stored key
   * is never sent to another provider or address without being sent again (422 otherwise).
   */
  async update(principal: Principal, id: number, input: Partial<PresetInput>): Promise<store.PresetRow> {
    const current = await store.findPreset(this.deps.db, principal.tenant, id);
    if (!current) throw notFound('Preset not found');
    const provider = input.provider ?? current.provider;
    const baseUrl = input.baseUrl === undefined ? current.baseUrl : input.baseUrl;
    checkBaseUrl(provider, baseUrl);
    if (input.provider !== undefined || input.model !== undefined || input.settings !== undefined) {
      checkSettings(provider, input.model ?? current.model, input.settings ?? current.settings ?? {});
    }
    await this.#checkTarget(input.baseUrl);
    const changes: Parameters<typeof store.updatePreset>[3] = {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.provider !== undefined ? { provider: input.provider } : {}),
      ...(input.model !== undefined ? { model: input.model } : {}),
      ...(input.baseUrl !== undefined ? { baseUrl: input.baseUrl } : {}),
      ...(input.settings !== undefined ? { settings: input.settings } : {}),
    };
    if (input.apiKey === null) changes.apiKeySealed = null;
    else if (input.apiKey && !isMasked(input.apiKey))
      changes.apiKeySealed = this.deps.secrets.seal(input.apiKey);
    else if (current.apiKeySealed) this.#checkKeyStays(current, { provider, base_url: baseUrl });
    try {
      const row = await store.updatePreset(this.deps.db, principal.tenant, id, changes);
      if (!row) throw notFound('Preset not found');
      return row;
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('A preset with this name already exists');
      throw error;
    }
  }

  /** The stored key is kept (not sent, or sent masked): `restoreMasked` decides whether it may. */
  #checkKeyStays(current: store.PresetRow, next: { provider: string; base_url: string | null }): void {
    const stored = this.apiKeyOf(current) ?? '';
    const { refused } = restoreMasked(
      { ...next, api_key: maskSecret(stored) ?? '****' },
      { provider: current.provider, base_url: current.baseUrl, api_key: stored },
      PRESET_SECRETS,
    );
    if (refused) throw invalidField(['body', ...refused.location], refused.msg);
  }

  async remove(principal: Principal, id: number): Promise<void> {
    if (!(await store.deletePreset(this.deps.db, principal.tenant, id))) throw notFound('Preset not found');
  }

  /** The preset with its API key in clear, for copying into an assistant (admin only). */
  async apply(principal: Principal, id: number): Promise<{ row: store.PresetRow; apiKey: string | null }> {
    const row = await store.findPreset(this.deps.db, principal.tenant, id);
    if (!row) throw notFound('Preset not found');
    return { row, apiKey: row.apiKeySealed ? this.deps.secrets.open(row.apiKeySealed) : null };
  }

  apiKeyOf(row: store.PresetRow): string | null {
    return row.apiKeySealed ? this.deps.secrets.open(row.apiKeySealed) : null;
  }

  /** A base URL being written must be one the outbound-target policy allows (a model is fetched there). */
  async #checkTarget(baseUrl: string | null | undefined): Promise<void> {
    if (baseUrl) await this.deps.targets.assertAllowed([{ loc: ['body', 'base_url'], url: baseUrl }]);
  }
}

/** A preset's settings its provider cannot honour are refused, as an assistant's llm_settings are. */
function checkSettings(provider: string, model: string, settings: Record<string, unknown>): void {
  const refused = refusedSettings(provider, model, settings);
  if (refused.length > 0) {
    throw new ValidationFailed(
      refused.map((r) => ({ loc: ['body', 'settings', r.field], msg: r.msg, type: 'value_error' })),
    );
  }
}

function checkBaseUrl(provider: string, baseUrl: string | null): void {
  if (provider === 'custom' && !baseUrl) {
    throw invalidField(['body', 'base_url'], 'base_url is required when provider is custom', 'missing');
  }
}

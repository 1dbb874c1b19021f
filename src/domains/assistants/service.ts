/**
 * Assistants: validation beyond what the schema can say, folding of the flat secret fields into
 * the objects they belong to, and secrets sealed at rest and masked in answers.
 */
import { Ajv } from 'ajv';
import type { Db, Executor, Tx } from '../../db/client.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../db/errors.js';
import type { Tenant } from '../../db/tenant.js';
import type { OutboundTargets } from '../../lib/outbound-target.js';
import { NOT_E164_MESSAGE, toE164 } from '../../lib/phone.js';
import { maskOpenedPaths, maskPaths, openPaths, restoreMasked, sealPaths } from '../../lib/secret-paths.js';
import type { SecretBox } from '../../lib/secrets.js';
import { refusedSettings } from '../../providers/llm/parameters.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { unfinishedCampaignsOfAssistant } from '../campaigns/reads.js';
import { conflict, invalidField, notFound, ValidationFailed, type ValidationIssue } from '../errors.js';
import { graphsUsingAssistant } from '../graphs/reads.js';
import type { Principal } from '../identity/principal.js';
import { numbersRoutedTo } from '../phone-numbers/reads.js';
import { customToolIssues } from './custom-tools.js';
import {
  CONFIG_FIELDS,
  SECRET_PATHS,
  SECRETS,
  TTS_A_DEFAULTS,
  takesKeyterms,
  takesKeywords,
} from './schemas.js';
import * as store from './store.js';
import { targetFieldsOf } from './target-fields.js';

type Json = Record<string, unknown>;

// addUsedSchema: false — user schemas with the same $id must not collide in this shared instance.
const jsonSchemaChecker = new Ajv({
  strict: false,
  allErrors: true,
  validateSchema: true,
  addUsedSchema: false,
});

/** Why `schema` is no usable JSON Schema, or undefined when it is one. */
function jsonSchemaProblem(schema: object): string | undefined {
  if (!jsonSchemaChecker.validateSchema(schema))
    return jsonSchemaChecker.errorsText(jsonSchemaChecker.errors, { dataVar: 'schema' });
  try {
    jsonSchemaChecker.compile(schema);
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

function inUse(users: string[]) {
  const shown = users.slice(0, 5).join(', ') + (users.length > 5 ? ` and ${users.length - 5} more` : '');
  return conflict(`The assistant is in use by ${shown}; route those elsewhere first`);
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface AssistantView {
  row: store.AssistantRow;
  /** The configuration with secrets masked. */
  config: Json;
}

/**
 * What an assistant's knowledge base (domains/knowledge) must hear, in the assistant's own
 * transaction: this domain never writes the knowledge tables itself.
 */
export interface AssistantKnowledge {
  /** rag_settings were written (`config` is the new configuration): documents may need re-processing. */
  ragSettingsChanged(
    tx: Tx,
    jobs: JobEnqueuer,
    tenant: Tenant,
    assistantId: number,
    config: Json,
  ): Promise<void>;
  /** The assistant is being deleted; the returned function runs once that committed (stored files go). */
  assistantDeleting(tx: Tx, tenant: Tenant, assistantId: number): Promise<() => Promise<void>>;
}

export class AssistantService {
  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      secrets: SecretBox;
      targets: OutboundTargets;
      knowledge?: AssistantKnowledge;
    },
  ) {}

  async create(principal: Principal, body: Json): Promise<AssistantView> {
    await this.deps.targets.assertAllowed(targetFieldsOf(body));
    const config = this.#prepare(
      body,
      { config: {}, llmProvider: null },
      (body.llm_provider as string | null) ?? 'llm_a',
    );
    const row = await store.insertAssistant(this.deps.db, principal.tenant, {
      userId: principal.user.id,
      name: String(body.name).trim(),
      description: (body.description as string | null | undefined) ?? null,
      isActive: (body.is_active as boolean | null | undefined) ?? true,
      llmProvider: (body.llm_provider as string | null | undefined) ?? 'llm_a',
      config: sealPaths(config, SECRET_PATHS, this.deps.secrets),
    });
    if (!row) throw conflict('An assistant with this name already exists');
    return this.#view(row);
  }

  async get(principal: Principal, id: number): Promise<AssistantView> {
    const row = await store.findAssistant(this.deps.db, principal.tenant, id);
    if (!row) throw notFound('Assistant not found');
    return this.#view(row);
  }

  async list(principal: Principal, options: { skip: number; limit: number; activeOnly: boolean }) {
    const { rows, total } = await store.listAssistants(this.deps.db, principal.tenant, options);
    return { assistants: rows.map((row) => this.#view(row)), total };
  }

  /** Changes the fields the body names; a nested object given replaces the stored one. */
  async update(principal: Principal, id: number, body: Json): Promise<AssistantView> {
    // Before the row is locked: resolving a name may take a while.
    await this.deps.targets.assertAllowed(targetFieldsOf(body));
    try {
      return await this.deps.queue.transaction(async (tx, jobs) => {
        const current = await store.findAssistant(tx, principal.tenant, id, { forUpdate: true });
        if (!current) throw notFound('Assistant not found');
        const stored = openPaths(current.config, SECRET_PATHS, this.deps.secrets);
        const provider =
          body.llm_provider === undefined || body.llm_provider === null
            ? current.llmProvider
            : String(body.llm_provider);
        const config = this.#prepare(body, { config: stored, llmProvider: current.llmProvider }, provider);
        const row = await store.updateAssistant(tx, principal.tenant, id, {
          ...(body.name !== undefined ? { name: String(body.name).trim() } : {}),
          ...(body.description !== undefined ? { description: body.description as string | null } : {}),
          ...(body.is_active !== undefined && body.is_active !== null
            ? { isActive: Boolean(body.is_active) }
            : {}),
          ...(body.llm_provider !== undefined && body.llm_provider !== null ? { llmProvider: provider } : {}),
          config: sealPaths(config, SECRET_PATHS, this.deps.secrets),
        });
        if (!row) throw notFound('Assistant not found');
        if (body.rag_settings !== undefined)
          await this.deps.knowledge?.ragSettingsChanged(tx, jobs, principal.tenant, id, config);
        return this.#view(row);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('An assistant with this name already exists');
      throw error;
    }
  }

  /** Deletes an assistant nothing uses; otherwise 409 naming what uses it. */
  async remove(principal: Principal, id: number): Promise<void> {
    let afterCommit: (() => Promise<void>) | undefined;
    try {
      await this.deps.db.transaction(async (tx) => {
        // Locked before the check: a campaign's key to the assistant is set null on delete (a finished
        // campaign keeps its history), so no foreign key error would report a campaign that started
        // using it meanwhile; the lock makes such a write wait for the delete, and then fail.
        if (!(await store.findAssistant(tx, principal.tenant, id, { forUpdate: true })))
          throw notFound('Assistant not found');
        const users = await this.#usersOf(tx, principal, id);
        if (users.length > 0) throw inUse(users);
        afterCommit = await this.deps.knowledge?.assistantDeleting(tx, principal.tenant, id);
        await store.deleteAssistant(tx, principal.tenant, id);
      });
    } catch (error) {
      // A number or graph node started using it between the check and the delete.
      if (isForeignKeyViolation(error)) throw inUse(await this.#usersOf(this.deps.db, principal, id));
      throw error;
    }
    await afterCommit?.();
  }

  /**
   * What uses the assistant, as "phone number +1… (id 3)", "graph "Support" (id 4, nodes 7, 9)" and
   * "campaign "Renewals" (id 5, draft)" phrases; finished campaigns do not count.
   */
  async #usersOf(ex: Executor, principal: Principal, id: number): Promise<string[]> {
    const numbers = await numbersRoutedTo(ex, principal.tenant, { assistantId: id });
    const graphs = await graphsUsingAssistant(ex, principal.tenant, id);
    const campaigns = await unfinishedCampaignsOfAssistant(ex, principal.tenant, id);
    return [
      ...numbers.map((n) => `phone number ${n.phoneNumber} (id ${n.id})`),
      ...graphs.map(
        (g) =>
          `graph ${JSON.stringify(g.graphName)} (id ${g.graphId}, ${g.nodeIds.length === 1 ? 'node' : 'nodes'} ${g.nodeIds.join(', ')})`,
      ),
      ...campaigns.map((c) => `campaign ${JSON.stringify(c.name)} (id ${c.id}, ${c.status})`),
    ];
  }

  #view(row: store.AssistantRow): AssistantView {
    return { row, config: maskPaths(row.config, SECRET_PATHS, this.deps.secrets) };
  }

  /**
   * The full configuration to store: the stored one (opened) with the body's fields over it, flat
   * secret fields folded in, masked secrets restored, tts_a's extras defaulted; then every rule
   * checked. What the body leaves out starts masked, so that every stored secret the result keeps —
   * sent back masked or not sent at all — is kept by `restoreMasked`, which refuses to keep one whose
   * provider or address changes.
   */
  #prepare(body: Json, stored: { config: Json; llmProvider: string | null }, llmProvider: string): Json {
    const kept = maskOpenedPaths(stored.config, SECRET_PATHS);
    const changes: Json = {};
    for (const field of CONFIG_FIELDS)
      if (body[field] !== undefined) changes[field] = structuredClone(body[field]);
    const nested = (field: string): Json => {
      const value = changes[field] ?? kept[field] ?? {};
      changes[field] = isObject(value) ? { ...value } : {};
      return changes[field] as Json;
    };
    if (typeof body.llm_a_api_key === 'string') nested('llm_provider_config').api_key = body.llm_a_api_key;
    if (typeof body.custom_llm_url === 'string') nested('llm_provider_config').base_url = body.custom_llm_url;
    if (typeof body.stt_api_key === 'string') nested('stt_settings').api_key = body.stt_api_key;
    if (typeof body.tts_a_api_key === 'string') nested('tts_settings').api_key = body.tts_a_api_key;
    if (typeof body.carrier_a_account_sid === 'string')
      nested('carrier_a_config').account_sid = body.carrier_a_account_sid;
    if (typeof body.carrier_a_auth_token === 'string')
      nested('carrier_a_config').auth_token = body.carrier_a_auth_token;

    const { result: config, refused } = restoreMasked({ ...kept, ...changes }, stored.config, SECRETS, {
      next: { llm_provider: llmProvider },
      previous: { llm_provider: stored.llmProvider },
    });
    if (refused) throw invalidField(['body', ...refused.location], refused.msg);
    const tts = config.tts_settings;
    if (changes.tts_settings !== undefined && isObject(tts) && tts.provider === 'tts_a') {
      for (const [field, value] of Object.entries(TTS_A_DEFAULTS)) tts[field] ??= value;
    }
    const issues = this.#check(
      config,
      llmProvider,
      new Set(Object.keys(changes)),
      body.llm_provider_config !== undefined,
      llmProvider !== stored.llmProvider,
    );
    if (issues.length > 0) throw new ValidationFailed(issues);
    return config;
  }

  /**
   * Rules across fields. Only the fields being written are reported, so old data never blocks a
   * change — except that a new `llm_provider` must be able to honour the stored `llm_settings`.
   */
  #check(
    config: Json,
    llmProvider: string,
    written: Set<string>,
    configGiven: boolean,
    providerChanged: boolean,
  ): ValidationIssue[] {
    const issues: ValidationIssue[] = [];
    const issue = (loc: Array<string | number>, msg: string, type = 'value_error') =>
      issues.push({ loc: ['body', ...loc], msg, type });

    const llm = config.llm_provider_config;
    if (written.has('llm_provider_config') || llmProvider === 'custom') {
      // Required when the caller gives the object; a bare custom_llm_url (a local model) needs no key.
      if (configGiven && isObject(llm) && typeof llm.api_key !== 'string') {
        issue(
          ['llm_provider_config', 'api_key'],
          'api_key is required when llm_provider_config is given',
          'missing',
        );
      }
      if (llmProvider === 'custom' && !(isObject(llm) && typeof llm.base_url === 'string')) {
        issue(
          ['llm_provider_config', 'base_url'],
          'base_url is required when llm_provider is custom',
          'missing',
        );
      }
    }
    // A sampling parameter the vendor has no such thing for is refused here, not found out in a call
    // (llm_fallback_providers carry no settings: a fallback answers with those its vendor takes).
    const settings = config.llm_settings;
    if (
      isObject(settings) &&
      (written.has('llm_settings') || written.has('llm_provider_config') || providerChanged)
    ) {
      const model = isObject(llm) && typeof llm.model === 'string' ? llm.model : undefined;
      for (const refused of refusedSettings(llmProvider, model, settings)) {
        issue(['llm_settings', refused.field], refused.msg);
      }
    }
    const fallbacks = (config.llm_fallback_providers as Json | undefined)?.fallbacks;
    if (written.has('llm_fallback_providers') && Array.isArray(fallbacks)) {
      fallbacks.forEach((fallback: Json, index) => {
        if (fallback.provider === 'custom' && typeof fallback.base_url !== 'string') {
          issue(
            ['llm_fallback_providers', 'fallbacks', index, 'base_url'],
            'base_url is required for a custom fallback',
            'missing',
          );
        }
      });
    }

    // The flat carrier fields fold into carrier_a_config one at a time: the result must be whole.
    const carrierFields: Record<string, string[]> = {
      carrier_a_config: ['account_sid', 'auth_token'],
      carrier_b_config: ['api_key', 'connection_id'],
    };
    for (const [field, required] of Object.entries(carrierFields)) {
      const carrier = config[field];
      if (!written.has(field) || !isObject(carrier)) continue;
      for (const name of required) {
        if (typeof carrier[name] !== 'string' || carrier[name] === '')
          issue([field, name], `${field} needs ${required.join(' and ')}`, 'missing');
      }
    }

    const stt = config.stt_settings;
    if (written.has('stt_settings') && isObject(stt)) {
      const model = String(stt.model);
      if (Array.isArray(stt.keywords) && stt.keywords.length > 0 && !takesKeywords(model)) {
        issue(
          ['stt_settings', 'keywords'],
          `keywords work only with older speech models (nova-2, nova, enhanced, base), not ${model}; use keyterms`,
        );
      }
      if (Array.isArray(stt.keyterms) && stt.keyterms.length > 0 && !takesKeyterms(model)) {
        issue(
          ['stt_settings', 'keyterms'],
          `keyterms work only with the newest speech model (nova-3), not ${model}; use keywords`,
        );
      }
    }

    const tts = config.tts_settings;
    if (written.has('tts_settings') && isObject(tts)) {
      const providerConfig = (tts.provider_config ?? {}) as Json;
      if (tts.provider !== 'tts_a') {
        for (const field of Object.keys(TTS_A_DEFAULTS)) {
          if (tts[field] !== undefined)
            issue(['tts_settings', field], `${field} applies only to tts_a`, 'extra_forbidden');
        }
      }
      if (tts.provider === 'tts_d' && typeof providerConfig.project_uuid !== 'string') {
        issue(
          ['tts_settings', 'provider_config', 'project_uuid'],
          'tts_d needs provider_config.project_uuid',
          'missing',
        );
      }
      if (
        tts.provider === 'tts_c' &&
        providerConfig.language !== undefined &&
        !/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(String(providerConfig.language))
      ) {
        issue(
          ['tts_settings', 'provider_config', 'language'],
          'provider_config.language must be a language code such as en-US',
        );
      }
    }

    const transfer = (config.tools_settings as Json | undefined)?.transfer_call as Json | undefined;
    if (written.has('tools_settings') && Array.isArray(transfer?.transfer_numbers)) {
      transfer.transfer_numbers = (transfer.transfer_numbers as string[]).map((number, index) => {
        const e164 = toE164(number);
        if (!e164) issue(['tools_settings', 'transfer_call', 'transfer_numbers', index], NOT_E164_MESSAGE);
        return e164 ?? number;
      });
    }

    const rag = config.rag_settings;
    if (written.has('rag_settings') && isObject(rag) && Number(rag.chunk_overlap) >= Number(rag.chunk_size)) {
      issue(['rag_settings', 'chunk_overlap'], 'chunk_overlap must be smaller than chunk_size');
    }

    const schema = (config.custom_settings as Json | undefined)?.structured_data_schema;
    if (written.has('custom_settings') && schema !== undefined) {
      const problem = jsonSchemaProblem(schema as object);
      if (problem)
        issue(['custom_settings', 'structured_data_schema'], `Not a valid JSON Schema: ${problem}`);
    }
    if (written.has('tools_settings')) {
      const tools = (config.tools_settings as Json | undefined)?.custom_tools;
      issues.push(...customToolIssues(tools, jsonSchemaProblem));
    }
    return issues;
  }
}

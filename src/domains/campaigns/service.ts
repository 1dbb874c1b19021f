/**
 * Campaigns: outreach to imported contacts through one assistant, with Jinja2-style templates
 * (lib/templates.ts) checked when saved. A campaign starts as a draft; it may be changed or deleted
 * in every state but `running`. Contacts, schedules and the executor live beside this.
 */
import type { Db, Executor } from '../../db/client.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { CampaignStatus, CampaignType } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import type { Page } from '../../lib/page.js';
import {
  compileTemplate,
  renderTemplate,
  TemplateError,
  type TemplateVariables,
} from '../../lib/templates.js';
import { findAssistant } from '../assistants/reads.js';
import { conflict, invalidField, notFound, ValidationFailed, type ValidationIssue } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import * as store from './store.js';

/**
 * What every campaign's templates can use before any contact is imported: the standard contact
 * fields and the built-in `assistant_name`. A contact import adds the custom fields it sees.
 */
export const STANDARD_VARIABLES = ['name', 'company', 'email', 'phone_number', 'assistant_name'] as const;

/** The variable filled from the campaign's assistant, never from a contact. */
export const BUILT_IN_VARIABLES = ['assistant_name'] as const;

/** The contact fields a template variable can be mapped to (besides `custom_fields.<key>`). */
export const CONTACT_FIELDS = ['name', 'company', 'email', 'phone_number'] as const;

export const DEFAULTS = { maxAttempts: 3, retryDelayMinutes: 30, concurrencyLimit: 5 } as const;

export const TEMPLATE_FIELDS = [
  'welcome_message_template',
  'agenda_template',
  'end_call_message_template',
  'sms_message_template',
] as const;
type TemplateField = (typeof TEMPLATE_FIELDS)[number];

const COLUMN_OF: Record<TemplateField, keyof store.CampaignValues> = {
  welcome_message_template: 'welcomeMessageTemplate',
  agenda_template: 'agendaTemplate',
  end_call_message_template: 'endCallMessageTemplate',
  sms_message_template: 'smsMessageTemplate',
};

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CUSTOM_FIELD = /^custom_fields\.(\S(.*\S)?)$/s;
const MAX_CUSTOM_FIELD_LENGTH = 100;

export interface CampaignInput {
  name?: string;
  description?: string | null;
  campaign_type?: CampaignType;
  assistant_id?: number;
  welcome_message_template?: string | null;
  agenda_template?: string | null;
  end_call_message_template?: string | null;
  sms_message_template?: string | null;
  /** Variable name → a string, number, boolean or null (the schema says so). */
  fallback_values?: object;
  /** Variable name → contact field, strings (the schema says so). */
  variable_mappings?: object;
  max_attempts?: number;
  retry_delay_minutes?: number;
  concurrency_limit?: number;
}

export interface CampaignCreateInput extends CampaignInput {
  name: string;
  campaign_type: CampaignType;
  assistant_id: number;
}

export interface PreviewInput {
  template: string;
  variables?: object;
  fallback_values?: object;
}

export interface CampaignWithMetrics {
  row: store.CampaignRow;
  metrics: store.CampaignMetrics;
}

export class CampaignService {
  constructor(private readonly deps: { db: Db }) {}

  async create(principal: Principal, input: CampaignCreateInput): Promise<CampaignWithMetrics> {
    const values = await this.#values(this.deps.db, principal.tenant, input);
    const id = await this.#write(() =>
      store.insertCampaign(this.deps.db, principal.tenant, {
        ...(values as store.CampaignValues),
        maxAttempts: values.maxAttempts ?? DEFAULTS.maxAttempts,
        retryDelayMinutes: values.retryDelayMinutes ?? DEFAULTS.retryDelayMinutes,
        concurrencyLimit: values.concurrencyLimit ?? DEFAULTS.concurrencyLimit,
        availableVariables: [...STANDARD_VARIABLES],
        createdByUserId: principal.user.id,
      }),
    );
    return this.get(principal, id);
  }

  async get(principal: Principal, id: number): Promise<CampaignWithMetrics> {
    const row = await store.findCampaign(this.deps.db, principal.tenant, id);
    if (!row) throw notFound('Campaign not found');
    const metrics = await store.metricsOf(this.deps.db, principal.tenant, [row.id]);
    return { row, metrics: metrics.get(row.id) ?? store.NO_METRICS };
  }

  /** A page of campaigns, newest first, each with its metrics. */
  async list(
    principal: Principal,
    page: Page,
    filters: store.CampaignFilters,
  ): Promise<{ campaigns: CampaignWithMetrics[]; total: number }> {
    const { rows, total } = await store.listCampaigns(this.deps.db, principal.tenant, page, filters);
    const metrics = await store.metricsOf(
      this.deps.db,
      principal.tenant,
      rows.map((row) => row.id),
    );
    return {
      campaigns: rows.map((row) => ({ row, metrics: metrics.get(row.id) ?? store.NO_METRICS })),
      total,
    };
  }

  /** Changes the fields the body names; refused (409) while the campaign runs. */
  async update(principal: Principal, id: number, input: CampaignInput): Promise<CampaignWithMetrics> {
    const changes = await this.#values(this.deps.db, principal.tenant, input);
    const updated = await this.#write(() =>
      store.updateIdleCampaign(this.deps.db, principal.tenant, id, changes),
    );
    if (!updated) throw await this.#refusal(principal.tenant, id, 'changed');
    return this.get(principal, id);
  }

  /** Deletes a campaign with its schedule, contacts and executions; refused (409) while it runs. */
  async remove(principal: Principal, id: number): Promise<void> {
    if (!(await store.deleteIdleCampaign(this.deps.db, principal.tenant, id)))
      throw await this.#refusal(principal.tenant, id, 'deleted');
  }

  /** Renders a template as a campaign would, with the caller's variables and fallbacks. */
  preview(input: PreviewInput): { rendered: string } {
    try {
      return {
        rendered: renderTemplate(
          input.template,
          (input.variables ?? {}) as TemplateVariables,
          (input.fallback_values ?? {}) as TemplateVariables,
        ).text,
      };
    } catch (error) {
      if (error instanceof TemplateError) throw new ValidationFailed([templateIssue('template', error)]);
      throw error;
    }
  }

  /** Why a conditional write found no row: the campaign runs (409), or is not the tenant's (404). */
  async #refusal(tenant: Tenant, id: number, what: 'changed' | 'deleted') {
    const status: CampaignStatus | undefined = await store.statusOf(this.deps.db, tenant, id);
    if (status === undefined) return notFound('Campaign not found');
    return conflict(`The campaign is running and cannot be ${what}; pause or stop it first`);
  }

  /** The column values the input names, every rule checked (all problems reported at once). */
  async #values(ex: Executor, tenant: Tenant, input: CampaignInput): Promise<Partial<store.CampaignValues>> {
    const values: Partial<store.CampaignValues> = {};
    const issues: ValidationIssue[] = [];
    const issue = (loc: Array<string | number>, msg: string, type = 'value_error') =>
      issues.push({ loc: ['body', ...loc], msg, type });

    if (input.name !== undefined) {
      const name = input.name.trim();
      if (name === '') issue(['name'], 'name must not be blank', 'string_too_short');
      values.name = name;
    }
    if (input.description !== undefined) values.description = input.description?.trim() || null;
    if (input.campaign_type !== undefined) values.campaignType = input.campaign_type;
    for (const field of TEMPLATE_FIELDS) {
      const template = input[field];
      if (template === undefined) continue;
      const text = template === null || template.trim() === '' ? null : template;
      if (text !== null) {
        try {
          compileTemplate(text);
        } catch (error) {
          if (!(error instanceof TemplateError)) throw error;
          issues.push(templateIssue(field, error));
        }
      }
      (values as Record<string, unknown>)[COLUMN_OF[field]] = text;
    }
    if (input.fallback_values !== undefined) {
      for (const key of Object.keys(input.fallback_values)) {
        if (!VARIABLE_NAME.test(key))
          issue(['fallback_values', key], `"${key}" is not a variable name (letters, digits, _)`);
      }
      values.fallbackValues = input.fallback_values as Record<string, unknown>;
    }
    if (input.variable_mappings !== undefined) {
      const mappings = input.variable_mappings as Record<string, string>;
      for (const [key, field] of Object.entries(mappings)) {
        if (!VARIABLE_NAME.test(key)) {
          issue(['variable_mappings', key], `"${key}" is not a variable name (letters, digits, _)`);
        } else if ((BUILT_IN_VARIABLES as readonly string[]).includes(key)) {
          issue(
            ['variable_mappings', key],
            `${key} is built in (the campaign's assistant) and cannot be mapped`,
          );
        } else if (!isContactField(field)) {
          issue(
            ['variable_mappings', key],
            `"${field}" is not a contact field: use ${CONTACT_FIELDS.join(', ')} or custom_fields.<key>`,
          );
        }
      }
      values.variableMappings = mappings;
    }
    if (input.max_attempts !== undefined) values.maxAttempts = input.max_attempts;
    if (input.retry_delay_minutes !== undefined) values.retryDelayMinutes = input.retry_delay_minutes;
    if (input.concurrency_limit !== undefined) values.concurrencyLimit = input.concurrency_limit;
    if (input.assistant_id !== undefined) {
      if (!(await findAssistant(ex, tenant, input.assistant_id))) issues.push(unknownAssistant().issues[0]!);
      values.assistantId = input.assistant_id;
    }
    if (issues.length > 0) throw new ValidationFailed(issues);
    return values;
  }

  /** Runs a write, answering an assistant deleted since the check like one never there. */
  async #write<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isForeignKeyViolation(error)) throw unknownAssistant();
      throw error;
    }
  }
}

function isContactField(field: string): boolean {
  if ((CONTACT_FIELDS as readonly string[]).includes(field)) return true;
  const custom = CUSTOM_FIELD.exec(field);
  return custom !== null && custom[1]!.length <= MAX_CUSTOM_FIELD_LENGTH;
}

function templateIssue(field: string, error: TemplateError): ValidationIssue {
  return {
    loc: ['body', field],
    msg: `${error.message} at position ${error.position}`,
    type: 'template_syntax',
  };
}

function unknownAssistant(): ValidationFailed {
  return invalidField(['body', 'assistant_id'], 'No assistant with this id in your organization');
}

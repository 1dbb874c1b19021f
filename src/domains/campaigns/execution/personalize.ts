/**
 * What a contact's attempt says: the campaign's templates rendered with the contact's variables
 * (standard fields, custom fields, `variable_mappings`, the built-in `assistant_name`) and the
 * campaign's `fallback_values`. Compiled templates are kept per campaign version, so a dispatch of
 * thousands of contacts parses each template once.
 */
import { compileTemplate, type RenderResult, type TemplateVariables } from '../../../lib/templates.js';
import type { CampaignRecord, ContactRecord } from './store.js';

export interface PersonalizedTexts {
  welcomeMessage?: string;
  agenda?: string;
  endCallMessage?: string;
  sms?: string;
  /** Every variable a rendered template read, with the value that went in (fallbacks included). */
  variablesUsed: Record<string, unknown>;
}

type Compiled = ReturnType<typeof compileTemplate>;
const compiledCache = new Map<string, Compiled>();
const MAX_CACHED = 500;

function compiled(template: string): Compiled {
  let entry = compiledCache.get(template);
  if (!entry) {
    if (compiledCache.size >= MAX_CACHED) compiledCache.clear();
    entry = compileTemplate(template);
    compiledCache.set(template, entry);
  }
  return entry;
}

/** A contact's template variables; empty values are left out so fallbacks apply to them. */
export function contactVariables(
  contact: Pick<ContactRecord, 'name' | 'company' | 'email' | 'phoneNumber' | 'customFields'>,
  campaign: Pick<CampaignRecord, 'variableMappings'>,
  assistantName: string,
): TemplateVariables {
  const fields: Record<string, unknown> = {
    name: contact.name,
    company: contact.company,
    email: contact.email,
    phone_number: contact.phoneNumber,
  };
  const variables: TemplateVariables = { ...contact.customFields };
  for (const [key, value] of Object.entries(fields)) variables[key] = value;
  for (const [variable, field] of Object.entries(campaign.variableMappings ?? {})) {
    variables[variable] = field.startsWith('custom_fields.')
      ? contact.customFields[field.slice('custom_fields.'.length)]
      : fields[field];
  }
  variables.assistant_name = assistantName;
  for (const [key, value] of Object.entries(variables)) {
    if (value === null || value === undefined || value === '') delete variables[key];
  }
  return variables;
}

/** Renders the campaign's templates that are set. Throws TemplateError for a template that fails. */
export function personalize(
  campaign: Pick<
    CampaignRecord,
    | 'welcomeMessageTemplate'
    | 'agendaTemplate'
    | 'endCallMessageTemplate'
    | 'smsMessageTemplate'
    | 'fallbackValues'
  >,
  variables: TemplateVariables,
  channel: 'call' | 'sms',
): PersonalizedTexts {
  const fallbacks = (campaign.fallbackValues ?? {}) as TemplateVariables;
  const used: Record<string, unknown> = {};
  const render = (template: string | null): string | undefined => {
    if (!template) return undefined;
    const result: RenderResult = compiled(template)(variables, fallbacks);
    Object.assign(used, result.used);
    return result.text;
  };
  if (channel === 'sms') return { sms: render(campaign.smsMessageTemplate), variablesUsed: used };
  return {
    welcomeMessage: render(campaign.welcomeMessageTemplate),
    agenda: render(campaign.agendaTemplate),
    endCallMessage: render(campaign.endCallMessageTemplate),
    variablesUsed: used,
  };
}

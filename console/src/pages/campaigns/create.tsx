/**
 * Creating a campaign: every field of the API's create body, with its default and limits as help,
 * each error shown at its field. Fallback values and variable mappings are typed as `key = value`
 * lines, since both are flat maps of a variable to a value or a contact field.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { navigate } from '../../lib/router.js';
import { Button, FormError, SelectField, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { type CampaignType, TEMPLATES, type TemplateField, TYPES } from './model.js';

const EMPTY = {
  name: '',
  description: '',
  campaign_type: 'call' as CampaignType,
  assistant_id: '',
  welcome_message_template: '',
  agenda_template: '',
  end_call_message_template: '',
  sms_message_template: '',
  fallback_values: '',
  variable_mappings: '',
  max_attempts: '3',
  retry_delay_minutes: '30',
  concurrency_limit: '5',
};
type Fields = typeof EMPTY;

/** `key = value` lines into a map; blank lines are skipped. */
export function pairs(text: string): Record<string, string> {
  const map: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (line.trim() === '') continue;
    const key = (at < 0 ? line : line.slice(0, at)).trim();
    map[key] = at < 0 ? '' : line.slice(at + 1).trim();
  }
  return map;
}

/** A number field's value for the API: the typed number, or the text itself so the API names it. */
function integer(text: string): number {
  return text.trim() === '' ? Number.NaN : Number(text);
}

function body(fields: Fields) {
  const templates: Partial<Record<TemplateField, string | null>> = {};
  for (const t of TEMPLATES) templates[t.field] = fields[t.field].trim() ? fields[t.field] : null;
  return {
    name: fields.name,
    description: fields.description.trim() || null,
    campaign_type: fields.campaign_type,
    assistant_id: Number(fields.assistant_id),
    ...templates,
    fallback_values: pairs(fields.fallback_values),
    variable_mappings: pairs(fields.variable_mappings),
    max_attempts: integer(fields.max_attempts),
    retry_delay_minutes: integer(fields.retry_delay_minutes),
    concurrency_limit: integer(fields.concurrency_limit),
  };
}

export function CreateCampaign() {
  const [fields, setFields] = useState(EMPTY);
  const set = (key: keyof Fields) => (value: string) => setFields((f) => ({ ...f, [key]: value }));
  const assistants = useLoad(
    () => ok(api.GET('/api/v1/assistants', { params: { query: { limit: 1000 } } })),
    [],
  );
  const form = useSubmit(async () => {
    const created = await ok(api.POST('/api/v1/campaigns', { body: body(fields) }));
    navigate(`/campaigns/${created.id}`);
  });
  const options = [
    { value: '', label: assistants.data ? 'Choose an assistant' : 'Loading assistants…' },
    ...(assistants.data ?? []).map((a) => ({ value: String(a.id), label: a.name })),
  ];
  return (
    <form onSubmit={form.submit} noValidate aria-label="Create a campaign">
      <FormError error={form.error ?? assistants.error} />
      <TextField label="Name" value={fields.name} onValue={set('name')} required error={form.at('name')} />
      <TextArea
        label="Description"
        rows={2}
        value={fields.description}
        onValue={set('description')}
        error={form.at('description')}
      />
      <SelectField
        label="Type"
        value={fields.campaign_type}
        onValue={set('campaign_type')}
        options={TYPES}
        help="Calls are placed from, and SMS sent from, a number routed to the assistant."
        error={form.at('campaign_type')}
      />
      <SelectField
        label="Assistant"
        value={fields.assistant_id}
        onValue={set('assistant_id')}
        options={options}
        help="Who talks in the calls (and whose number sends the messages)."
        error={form.at('assistant_id')}
      />
      {TEMPLATES.filter((t) => (t.forType as readonly string[]).includes(fields.campaign_type)).map((t) => (
        <TextArea
          key={t.field}
          label={t.label}
          rows={2}
          value={fields[t.field]}
          onValue={set(t.field)}
          help="Optional. Variables like {{ name }}, {{ name | title_case }}, {{ plan | default(&quot;basic&quot;) }}."
          error={form.at(t.field)}
        />
      ))}
      <TextArea
        label="Fallback values"
        rows={2}
        value={fields.fallback_values}
        onValue={set('fallback_values')}
        help="One per line, variable = value: used when a contact has no value (e.g. company = Acme)."
        error={form.at('fallback_values')}
      />
      <TextArea
        label="Variable mappings"
        rows={2}
        value={fields.variable_mappings}
        onValue={set('variable_mappings')}
        help="One per line, variable = contact field: name, company, email, phone_number or custom_fields.<key> (e.g. plan = custom_fields.plan)."
        error={form.at('variable_mappings')}
      />
      <div class="row">
        <TextField
          label="Attempts per contact"
          type="number"
          inputMode="numeric"
          min={1}
          max={10}
          value={fields.max_attempts}
          onValue={set('max_attempts')}
          help="1 to 10 (default 3)."
          error={form.at('max_attempts')}
        />
        <TextField
          label="Minutes between attempts"
          type="number"
          inputMode="numeric"
          min={0}
          max={10080}
          value={fields.retry_delay_minutes}
          onValue={set('retry_delay_minutes')}
          help="0 to 10080, a week (default 30)."
          error={form.at('retry_delay_minutes')}
        />
        <TextField
          label="Attempts at once"
          type="number"
          inputMode="numeric"
          min={1}
          max={100}
          value={fields.concurrency_limit}
          onValue={set('concurrency_limit')}
          help="1 to 100 (default 5)."
          error={form.at('concurrency_limit')}
        />
      </div>
      <Button type="submit" kind="primary" busy={form.busy}>
        Create the campaign
      </Button>
    </form>
  );
}

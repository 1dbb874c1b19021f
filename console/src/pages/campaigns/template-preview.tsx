/**
 * Previewing a campaign's templates: each template (the campaign's, editable here to try a change
 * before saving it) is rendered by `POST /api/v1/campaigns/template-preview` with a sample contact's
 * variables and the campaign's fallback values, as an attempt would render it — or the API's error
 * (the position that does not parse) shown at that template.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { Button, TextArea, useSubmit } from '../../ui/form.js';
import { pairs } from './create.js';
import { type Campaign, TEMPLATES } from './model.js';

const SAMPLE = 'name = jane doe\ncompany = Acme\nemail = jane@example.com\nphone_number = +14155550100';

/**
 * The variables an attempt would have: the contact's fields and custom fields by name, the
 * assistant's name, then the campaign's mappings (variable → contact field) applied.
 */
export function sampleVariables(campaign: Campaign, contact: Record<string, string>): Record<string, string> {
  const variables: Record<string, string> = { ...contact };
  if (campaign.assistant_name) variables.assistant_name = campaign.assistant_name;
  for (const [variable, field] of Object.entries(campaign.variable_mappings)) {
    const value = contact[field.replace(/^custom_fields\./, '')];
    if (value !== undefined) variables[variable] = value;
  }
  return variables;
}

type Rendered = { field: string; label: string; text?: string; error?: string };

export function TemplatePreview(props: { campaign: Campaign }) {
  const { campaign } = props;
  const [sample, setSample] = useState(SAMPLE);
  const [results, setResults] = useState<Rendered[] | undefined>();
  const templates = TEMPLATES.filter(
    (t) => campaign[t.field] || (t.forType as readonly string[]).includes(campaign.campaign_type),
  );
  const [texts, setTexts] = useState<Record<string, string>>(() =>
    Object.fromEntries(templates.map((t) => [t.field, campaign[t.field] ?? ''])),
  );
  const form = useSubmit(async () => {
    const variables = sampleVariables(campaign, pairs(sample));
    const rendered = await Promise.all(
      templates
        .filter((t) => texts[t.field]?.trim())
        .map(async (t): Promise<Rendered> => {
          try {
            const answer = await ok(
              api.POST('/api/v1/campaigns/template-preview', {
                body: {
                  template: texts[t.field] ?? '',
                  variables,
                  fallback_values: campaign.fallback_values,
                },
              }),
            );
            return { field: t.field, label: t.label, text: answer.rendered };
          } catch (caught) {
            if (caught instanceof ApiError && caught.status === 422)
              return { field: t.field, label: t.label, error: caught.problems[0]?.message ?? caught.message };
            throw caught;
          }
        }),
    );
    setResults(rendered);
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="Preview the templates">
      {templates.map((t) => (
        <TextArea
          key={t.field}
          label={t.label}
          rows={2}
          value={texts[t.field] ?? ''}
          onValue={(value) => setTexts((all) => ({ ...all, [t.field]: value }))}
          error={results?.find((r) => r.field === t.field)?.error}
        />
      ))}
      <TextArea
        label="Sample contact"
        rows={4}
        value={sample}
        onValue={setSample}
        help="One per line, field = value: name, company, email, phone_number and any custom field (plan = gold)."
      />
      <Button type="submit" busy={form.busy}>
        Preview
      </Button>
      {form.error ? (
        <p class="form-error" role="alert">
          {form.error.message}
        </p>
      ) : null}
      {results ? (
        <dl class="template-preview" aria-live="polite">
          {results.map((result) => (
            <div key={result.field}>
              <dt>{result.label}</dt>
              <dd>
                {result.error ? (
                  `Cannot be rendered: ${result.error}`
                ) : (
                  <blockquote>{result.text}</blockquote>
                )}
              </dd>
            </div>
          ))}
        </dl>
      ) : null}
    </form>
  );
}

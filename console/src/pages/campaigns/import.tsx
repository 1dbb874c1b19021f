/**
 * Importing contacts into a campaign: a CSV or JSON file chosen (or pasted), its columns and first
 * rows shown, each column mapped to a contact field, a custom field or nothing (or left to the API's
 * own header recognition), then `POST …/import-data`. The API's report follows: the counts, and each
 * refused row with its number and reason.
 */
import { useId, useState } from 'preact/hooks';
import type { components } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';
import { Button, FormError, SelectField, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { previewTable, TARGETS, type TablePreview } from './table-file.js';

type Report = components['schemas']['ContactImportReport'];

/** The mapping select's values: '' lets the API recognise the header, 'skip' leaves it out. */
const AUTOMATIC = '';
const SKIP = 'skip';
const CUSTOM = 'custom';

function mappingOptions(column: string) {
  return [
    { value: AUTOMATIC, label: 'Recognised by its header' },
    ...TARGETS.map((target) => ({ value: target, label: target })),
    { value: CUSTOM, label: `Custom field "${column}"` },
    { value: SKIP, label: 'Leave it out' },
  ];
}

/** The `column_mappings` form field: only the columns the user decided. */
export function columnMappings(choices: Record<string, string>): Record<string, string | null> {
  const mappings: Record<string, string | null> = {};
  for (const [column, choice] of Object.entries(choices)) {
    if (choice === AUTOMATIC) continue;
    mappings[column] = choice === SKIP ? null : choice === CUSTOM ? `custom_fields.${column}` : choice;
  }
  return mappings;
}

function FilePicker(props: { onText(name: string, text: string): void; error?: string | undefined }) {
  const id = useId();
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={id}>Contacts file (CSV or JSON)</label>
      <input
        id={id}
        type="file"
        accept=".csv,.json,.txt,text/csv,application/json"
        aria-describedby={`${id}-help${props.error ? ` ${id}-error` : ''}`}
        aria-invalid={props.error ? true : undefined}
        onChange={async (event) => {
          const file = event.currentTarget.files?.[0];
          if (file) props.onText(file.name, await file.text());
        }}
      />
      <p class="help" id={`${id}-help`}>
        CSV with a header row (comma, semicolon or tab), or a JSON array of objects. At most 50 MiB.
      </p>
      {props.error ? (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      ) : null}
    </div>
  );
}

function PreviewTable(props: { preview: TablePreview }) {
  const { columns, rows, rowCount } = props.preview;
  return (
    <div class="table-scroll">
      <table>
        <caption>
          The file: {columns.length} columns, {rowCount} rows
          {rowCount > rows.length ? ` (the first ${rows.length} shown)` : ''}
        </caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column}>
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={index}>
              {columns.map((column, at) => (
                <td key={column}>{row[at] ?? ''}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ImportReport(props: { report: Report }) {
  const { imported, duplicates, invalid, errors } = props.report;
  return (
    <div class="import-report">
      <p role="status">
        {imported} imported, {duplicates} duplicates, {invalid} invalid.
      </p>
      {errors.length > 0 ? (
        <table>
          <caption>Rows not imported</caption>
          <thead>
            <tr>
              <th scope="col" class="number">
                Row
              </th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {errors.map((error) => (
              <tr key={error.row}>
                <td class="number">{error.row}</td>
                <td>{error.detail}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

export function ContactsImport(props: { campaignId: number; onImported(): void }) {
  const [name, setName] = useState('contacts.csv');
  const [text, setText] = useState('');
  const [choices, setChoices] = useState<Record<string, string>>({});
  const [region, setRegion] = useState('');
  const [report, setReport] = useState<Report | undefined>();
  let preview: TablePreview | undefined;
  let unreadable: string | undefined;
  try {
    preview = text.trim() ? previewTable(text) : undefined;
  } catch (caught) {
    unreadable = (caught as Error).message;
  }
  const form = useSubmit(async () => {
    setReport(undefined);
    const upload = new FormData();
    const type = text.trim().startsWith('[') ? 'application/json' : 'text/csv';
    upload.append('column_mappings', JSON.stringify(columnMappings(choices)));
    if (region.trim()) upload.append('default_region', region.trim().toUpperCase());
    upload.append('file', new Blob([text], { type }), name);
    const answer = await ok(
      api.POST('/api/v1/campaigns/{campaign_id}/import-data', {
        params: { path: { campaign_id: props.campaignId } },
        // The form goes as it is: the browser writes the multipart body and its boundary.
        body: upload as unknown as components['schemas']['ContactImportForm'],
        bodySerializer: (body) => body as unknown as FormData,
      }),
    );
    setReport(answer);
    props.onImported();
  });
  const choose = (fileName: string, content: string) => {
    setName(fileName);
    setText(content);
    setChoices({});
    setReport(undefined);
  };
  return (
    <form onSubmit={form.submit} noValidate aria-label="Import contacts">
      <FormError error={form.error} />
      <FilePicker onText={choose} error={form.at('file')} />
      <TextArea
        label="Or paste the contacts"
        rows={4}
        value={text}
        onValue={(value) => {
          setText(value);
          setName(value.trim().startsWith('[') ? 'contacts.json' : 'contacts.csv');
        }}
        help="The same formats as a file: a CSV header row first, or a JSON array."
        error={unreadable}
      />
      {preview ? (
        <>
          <PreviewTable preview={preview} />
          <fieldset class="column-mapping">
            <legend>Column mapping</legend>
            <p class="help">
              What each column becomes. Columns not recognised by their header become custom fields, which
              templates can use as variables.
            </p>
            <FormError
              error={form.at('column_mappings') ? new Error(form.at('column_mappings')) : undefined}
            />
            {preview.columns.map((column) => (
              <SelectField
                key={column}
                label={`Column "${column}"`}
                value={choices[column] ?? AUTOMATIC}
                onValue={(value) => setChoices((all) => ({ ...all, [column]: value }))}
                options={mappingOptions(column)}
                error={form.at(`column_mappings.${column}`)}
              />
            ))}
          </fieldset>
        </>
      ) : null}
      <TextField
        label="Region of numbers without a country code"
        value={region}
        onValue={setRegion}
        placeholder="US"
        help="Two letters (default US): how 415 555 0100 is read."
        error={form.at('default_region')}
      />
      <Button type="submit" kind="primary" busy={form.busy} disabled={!preview}>
        Import the contacts
      </Button>
      {report ? <ImportReport report={report} /> : null}
    </form>
  );
}

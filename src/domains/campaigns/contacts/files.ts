/**
 * Reading contact files: CSV (any common delimiter, header row first) and JSON (an array of
 * objects), streamed from disk one row at a time. Column names are recognised (`Phone Number`,
 * `mobile`, `E-mail`, `first_name` + `last_name`…), `column_mappings` overrides them, and every other
 * column becomes a custom field. A row comes out as raw values for `contacts.ts` to check; a file
 * that cannot be read fails as a 422 at `["body", "file"]`.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { CsvSyntaxError, readCsv, sniffDelimiter } from '../../../lib/csv.js';
import { JsonArraySyntaxError, JsonElementError, readJsonArray } from '../../../lib/json-array.js';
import { nulIssues } from '../../../lib/nul.js';
import { invalidField, ValidationFailed, type ValidationIssue } from '../../errors.js';

/** The longest custom field name. */
export const MAX_CUSTOM_KEY_LENGTH = 100;

/** The standard contact fields a column can fill; `first_name` and `last_name` make up `name`. */
export const CONTACT_COLUMNS = [
  'phone_number',
  'name',
  'first_name',
  'last_name',
  'email',
  'company',
] as const;
export type ContactColumn = (typeof CONTACT_COLUMNS)[number];

/** Header names recognised for each field, compared after `columnKey` (so `E-mail` is `e_mail`). */
export const HEADER_ALIASES: Record<ContactColumn, readonly string[]> = {
  phone_number: [
    'phone_number',
    'phone',
    'phonenumber',
    'phone_no',
    'mobile',
    'mobile_number',
    'mobile_phone',
    'cell',
    'cell_phone',
    'cellphone',
    'telephone',
    'telephone_number',
    'tel',
    'number',
    'contact_number',
    'msisdn',
  ],
  name: ['name', 'full_name', 'fullname', 'contact_name', 'contact'],
  first_name: ['first_name', 'firstname', 'first', 'given_name'],
  last_name: ['last_name', 'lastname', 'last', 'surname', 'family_name'],
  email: ['email', 'e_mail', 'email_address', 'e_mail_address', 'mail'],
  company: [
    'company',
    'company_name',
    'organization',
    'organisation',
    'organization_name',
    'organisation_name',
    'org',
    'business',
    'business_name',
    'employer',
  ],
};

const ALIAS = new Map<string, ContactColumn>(
  Object.entries(HEADER_ALIASES).flatMap(([field, names]) => names.map((n) => [n, field as ContactColumn])),
);

/** Where one column (or JSON key) of a file goes. */
export type Target = { field: ContactColumn } | { custom: string } | { ignore: true };

export interface UploadedFile {
  /** A temporary file holding the upload. */
  path: string;
  filename: string;
  mimetype: string;
}

/** A field of a file row or an API contact, before checking. */
export interface RawContact {
  phone?: unknown;
  name?: unknown;
  firstName?: unknown;
  lastName?: unknown;
  email?: unknown;
  company?: unknown;
  custom: Array<[string, unknown]>;
  /** Why the row cannot be a contact, found while reading it. */
  problem?: string;
}

/** A row (1-based) as raw values, or why it could not be read. */
export type SourceRow = { row: number; raw: RawContact } | { row: number; error: string };

/**
 * The key a header stands for: trimmed, lower-cased, every run of characters other than letters and
 * digits made one `_` (`Phone Number` → `phone_number`, `E-mail` → `e_mail`). Custom fields are
 * stored under it, so templates can say `{{account_plan}}` for a column `Account Plan`.
 */
export function columnKey(header: string): string {
  return header
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '');
}

/** The `column_mappings` field: `{"<column or key in the file>": "<field>" | null}`. */
export function parseColumnMappings(raw: string | undefined): Map<string, Target> {
  const mappings = new Map<string, Target>();
  if (raw === undefined || raw.trim() === '') return mappings;
  const loc = ['body', 'column_mappings'];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidField(loc, 'column_mappings must be a JSON object', 'json_invalid');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidField(loc, 'column_mappings must be a JSON object: {"<column>": "<field>"}', 'dict_type');
  const issues: ValidationIssue[] = [];
  const claimed = new Map<ContactColumn, string>();
  for (const [column, value] of Object.entries(parsed)) {
    const target = mappingTarget(value);
    if (!target) {
      issues.push({
        loc: [...loc, column],
        msg: `"${String(value)}" is not a contact field: use ${CONTACT_COLUMNS.join(', ')}, custom_fields.<name>, or null to leave the column out`,
        type: 'value_error',
      });
      continue;
    }
    if ('field' in target) {
      const other = claimed.get(target.field);
      if (other !== undefined) {
        issues.push({
          loc: [...loc, column],
          msg: `Columns "${other}" and "${column}" are both mapped to ${target.field}`,
          type: 'value_error',
        });
        continue;
      }
      claimed.set(target.field, column);
    }
    mappings.set(column.trim().toLowerCase(), target);
  }
  if (issues.length > 0) throw new ValidationFailed(issues);
  return mappings;
}

function mappingTarget(value: unknown): Target | undefined {
  if (value === null || value === 'ignore') return { ignore: true };
  if (typeof value !== 'string') return undefined;
  const custom = /^custom_fields\.(.+)$/s.exec(value.trim());
  if (custom) {
    const key = custom[1]!.trim();
    return key.length > 0 && key.length <= MAX_CUSTOM_KEY_LENGTH ? { custom: key } : undefined;
  }
  const field = ALIAS.get(columnKey(value));
  return field ? { field } : undefined;
}

/**
 * Where each column goes: the mapping the caller gave, else the first column whose header names a
 * field takes it, else a custom field named by `columnKey` (a `custom_fields.x` header keeps `x`).
 * A CSV header is one `Columns`; every object of a JSON file is one (keys differ between objects).
 */
class ColumnPlan {
  readonly #mappedFields = new Set<ContactColumn>();
  readonly #keys = new Map<string, string>();

  constructor(private readonly mappings: Map<string, Target>) {
    for (const target of mappings.values()) if ('field' in target) this.#mappedFields.add(target.field);
  }

  /** The mapping for `header`, when the caller gave one. */
  mapped(header: string): Target | undefined {
    return this.mappings.size === 0 ? undefined : this.mappings.get(header.trim().toLowerCase());
  }

  /** Claims for one header row or one object: fields taken so far and custom names used. */
  columns(): Columns {
    return { claimed: new Set(this.#mappedFields), customKeys: new Set() };
  }

  targetOf(header: string, position: number, columns: Columns): Target {
    const mapped = this.mapped(header);
    if (mapped) return 'custom' in mapped ? custom(mapped.custom, columns) : mapped;
    const exported = /^custom_fields\.(.+)$/s.exec(header.trim());
    if (exported) return custom(exported[1]!.trim(), columns);
    const key = this.#key(header);
    const field = ALIAS.get(key);
    if (field && !columns.claimed.has(field)) {
      columns.claimed.add(field);
      return { field };
    }
    if (key === '' && header.trim() === '') return { ignore: true };
    return custom(key || `column_${position}`, columns);
  }

  /** `columnKey`, remembered for the keys JSON objects repeat (within reason). */
  #key(header: string): string {
    let key = this.#keys.get(header);
    if (key === undefined) {
      key = columnKey(header);
      if (this.#keys.size < 1000) this.#keys.set(header, key);
    }
    return key;
  }
}

interface Columns {
  claimed: Set<ContactColumn>;
  customKeys: Set<string>;
}

/** A custom field named `key`, or `key_2`, `key_3`… when two columns would share a name. */
function custom(key: string, columns: Columns): Target {
  let unique = key;
  for (let n = 2; columns.customKeys.has(unique); n++) unique = `${key}_${n}`;
  columns.customKeys.add(unique);
  return { custom: unique };
}

function place(raw: RawContact, target: Target, value: unknown): void {
  if ('ignore' in target) return;
  if ('custom' in target) {
    raw.custom.push([target.custom, value]);
    return;
  }
  switch (target.field) {
    case 'phone_number':
      raw.phone = value;
      break;
    case 'name':
      raw.name = value;
      break;
    case 'first_name':
      raw.firstName = value;
      break;
    case 'last_name':
      raw.lastName = value;
      break;
    case 'email':
      raw.email = value;
      break;
    case 'company':
      raw.company = value;
      break;
  }
}

/** The rows of a CSV file; the first record is the header. */
async function* csvRows(
  file: string,
  delimiter: string,
  mappings: Map<string, Target>,
): AsyncGenerator<SourceRow> {
  let targets: Target[] | undefined;
  let row = 0;
  try {
    let header: string[] = [];
    for await (const record of readCsv(createReadStream(file), { delimiter })) {
      refuseNul(record, (cell) => ['body', 'file', targets ? row + 1 : 0, header[cell]?.trim() || cell + 1]);
      if (!targets) {
        header = record;
        targets = planColumns(record, mappings);
        continue;
      }
      row += 1;
      const raw: RawContact = { custom: [] };
      for (let i = 0; i < targets.length && i < record.length; i++) place(raw, targets[i]!, record[i]);
      yield { row, raw };
    }
  } catch (error) {
    if (error instanceof CsvSyntaxError) {
      throw fileProblem(
        `The file is not valid CSV${error.line ? ` (line ${error.line})` : ''}: ${error.message}`,
      );
    }
    throw error;
  }
  if (!targets) throw fileProblem('The file is empty: the first line must name the columns');
}

/**
 * A NUL character cannot be stored (see http/nul.ts): a cell holding one makes the file unreadable,
 * so nothing is imported and the answer names the row (0 for the header) and the column.
 */
function refuseNul(record: string[], locOf: (cell: number) => Array<string | number>): void {
  const cell = record.findIndex((value) => value.includes('\u0000'));
  if (cell >= 0) throw new ValidationFailed(nulIssues(record[cell], locOf(cell)));
}

/** Targets of the header's columns; 422 when no column holds phone numbers or a mapping names no column. */
function planColumns(header: string[], mappings: Map<string, Target>): Target[] {
  const plan = new ColumnPlan(mappings);
  const present = new Set(header.map((h) => h.trim().toLowerCase()));
  const unknown = [...mappings.keys()].filter((column) => !present.has(column));
  if (unknown.length > 0) {
    throw new ValidationFailed(
      unknown.map((column) => ({
        loc: ['body', 'column_mappings', column],
        msg: `The file has no column "${column}" (its columns: ${header.map((h) => h.trim()).join(', ')})`,
        type: 'value_error',
      })),
    );
  }
  const columns = plan.columns();
  const targets = header.map((column, i) => plan.targetOf(column, i + 1, columns));
  if (!targets.some((t) => 'field' in t && t.field === 'phone_number')) {
    throw fileProblem(
      `No column holds phone numbers: name one ${HEADER_ALIASES.phone_number.slice(0, 8).join(', ')}…, or map one with column_mappings ({"<column>": "phone_number"})`,
    );
  }
  return targets;
}

/** The rows of a JSON file: an array of objects whose keys are read like CSV headers. */
async function* jsonRows(file: string, mappings: Map<string, Target>): AsyncGenerator<SourceRow> {
  const plan = new ColumnPlan(mappings);
  let row = 0;
  try {
    for await (const element of readJsonArray(createReadStream(file))) {
      row += 1;
      if (element instanceof JsonElementError) {
        yield { row, error: `Not valid JSON: ${element.message}` };
        continue;
      }
      if (typeof element !== 'object' || element === null || Array.isArray(element)) {
        yield { row, error: 'Each element must be an object ({"phone_number": …})' };
        continue;
      }
      const nul = nulIssues(element, ['body', 'file', row]);
      if (nul.length > 0) throw new ValidationFailed(nul);
      const raw: RawContact = { custom: [] };
      const columns = plan.columns();
      let position = 0;
      for (const [key, value] of Object.entries(element)) {
        position += 1;
        if (key === 'custom_fields' && !plan.mapped(key)) {
          if (typeof value === 'object' && value !== null && !Array.isArray(value))
            for (const [customKey, customVal] of Object.entries(value))
              raw.custom.push([customKey, customVal]);
          else if (value !== null) raw.problem = 'custom_fields must be an object';
          continue;
        }
        place(raw, plan.targetOf(key, position, columns), value);
      }
      yield { row, raw };
    }
  } catch (error) {
    if (error instanceof JsonArraySyntaxError)
      throw fileProblem(`The file is not a JSON array (element ${error.element}): ${error.message}`);
    throw error;
  }
}

function fileProblem(message: string): ValidationFailed {
  return invalidField(['body', 'file'], message);
}

/**
 * The rows of an uploaded file, checked up to its first row: `column_mappings` parsed, the format
 * (and a CSV's delimiter) found. The file is opened when the rows are first read.
 */
export async function fileRows(
  file: UploadedFile,
  columnMappings: string | undefined,
): Promise<AsyncIterable<SourceRow>> {
  const mappings = parseColumnMappings(columnMappings);
  const sample = await readSample(file.path);
  return formatOf(file, sample) === 'csv'
    ? csvRows(file.path, sniffDelimiter(sample), mappings)
    : jsonRows(file.path, mappings);
}

async function readSample(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead).toString('latin1');
  } finally {
    await handle.close();
  }
}

/** CSV or JSON, from the file's name and type, else its first character; 422 for anything else. */
function formatOf(file: UploadedFile, sample: string): 'csv' | 'json' {
  if (sample.startsWith('PK\u0003\u0004') || sample.startsWith('\u00d0\u00cf\u0011\u00e0'))
    throw fileProblem('Spreadsheet workbooks are not read: save the sheet as CSV (UTF-8) and upload that');
  if (sample.startsWith('\u00ff\u00fe') || sample.startsWith('\u00fe\u00ff'))
    throw fileProblem('The file is UTF-16 text: save it as CSV UTF-8');
  const body = sample.replace(/^\u00ef\u00bb\u00bf/, '').trimStart();
  if (body === '') throw fileProblem('The file is empty');
  const name = file.filename.toLowerCase();
  if (name.endsWith('.json') || /[/+]json\b/.test(file.mimetype)) return 'json';
  if (/\.(csv|tsv|txt)$/.test(name) || /^text\//.test(file.mimetype)) return 'csv';
  return body.startsWith('[') ? 'json' : 'csv';
}

/**
 * Campaign contacts: adding them as JSON, importing them from a CSV or JSON file, and listing them.
 *
 * Every way in ends in one pipeline. Rows are read one at a time (files stream from disk), each is
 * turned into a contact — the phone number normalised to E.164 with a default region, the other
 * fields checked — or refused as invalid; valid contacts are inserted 1,000 at a time with
 * `ON CONFLICT DO NOTHING`, so a number the campaign already has (or that came earlier in the same
 * file) counts as a duplicate. The whole import is one transaction that holds the campaign row: it
 * applies completely or not at all, `total_contacts` always equals the number of contacts, and the
 * campaign cannot start half-way through an import. Contacts may be added while the campaign is
 * draft, scheduled or paused.
 */
import type { CountryCode } from 'libphonenumber-js';
import { isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { Db } from '../../../db/client.js';
import type { CampaignStatus, ContactStatus } from '../../../db/schema/index.js';
import type { Page } from '../../../lib/page.js';
import { conflict, invalidField, notFound } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import { announceProgress } from '../events.js';
import {
  fileRows,
  MAX_CUSTOM_KEY_LENGTH,
  type RawContact,
  type SourceRow,
  type UploadedFile,
} from './files.js';
import * as store from './store.js';

/** Campaign states that take new contacts. Running ones pick contacts as they go; finished ones are history. */
export const EDITABLE_STATUSES = ['draft', 'scheduled', 'paused'] as const satisfies CampaignStatus[];
/** Contacts per INSERT statement. */
export const BATCH_SIZE = 1000;
/** The `errors` list of a report names at most this many rows (the counts are always complete). */
export const MAX_REPORTED_ERRORS = 100;

export const LIMITS = {
  name: 200,
  company: 200,
  email: 254,
  phoneText: 64,
  customFields: 50,
  customKey: MAX_CUSTOM_KEY_LENGTH,
  customValue: 2000,
} as const;

export interface ImportError {
  row: number;
  detail: string;
}

export interface ImportReport {
  imported: number;
  duplicates: number;
  invalid: number;
  errors: ImportError[];
}

export interface ContactInput {
  phone_number: string;
  name?: string | null;
  email?: string | null;
  company?: string | null;
  custom_fields?: Record<string, string | number | boolean | null>;
}

export interface ImportOptions {
  /** The `column_mappings` form field as sent (JSON text). */
  columnMappings?: string;
  /** The `default_region` form field. */
  defaultRegion?: string;
}

/**
 * `input` as an E.164 number, read in `region` unless it has a country code; also `14155552671`
 * style numbers whose `+` a spreadsheet dropped. Undefined when it is not a valid number.
 */
export function normalisePhone(input: string, region: CountryCode): string | undefined {
  const text = input.trim();
  if (!/^\+?[\d\s().\-/]+$/.test(text)) return undefined;
  const parsed = parsePhoneNumberFromString(text, { defaultCountry: region });
  if (parsed?.isValid()) return parsed.number;
  const digits = text.replace(/\D/g, '');
  if (!text.startsWith('+') && digits.length >= 8 && digits.length <= 15) {
    const international = parsePhoneNumberFromString(`+${digits}`);
    if (international?.isValid()) return international.number;
  }
  return undefined;
}

/** The region code of a request, or a 422 naming `loc`. */
export function regionOf(value: string | undefined, fallback: CountryCode, loc: string[]): CountryCode {
  if (value === undefined || value.trim() === '') return fallback;
  const region = value.trim().toUpperCase();
  if (!isSupportedCountry(region))
    throw invalidField(loc, `"${value}" is not a region code (two letters, such as US or GB)`);
  return region;
}

export class CampaignContactService {
  constructor(private readonly deps: { db: Db; defaultRegion: CountryCode }) {}

  /** 404 unless the campaign is the caller's; 409 unless it takes contacts now. */
  async assertEditable(principal: Principal, campaignId: number): Promise<void> {
    assertEditableStatus(await store.campaignStatus(this.deps.db, principal.tenant, campaignId));
  }

  /** `POST …/contacts`: the contacts of a JSON body; row numbers are their positions (from 1). */
  add(
    principal: Principal,
    campaignId: number,
    input: { contacts: ContactInput[]; default_region?: string },
  ): Promise<ImportReport> {
    const region = regionOf(input.default_region, this.deps.defaultRegion, ['body', 'default_region']);
    async function* rows(): AsyncGenerator<SourceRow> {
      for (const [index, contact] of input.contacts.entries()) {
        const { phone_number, name, email, company, custom_fields } = contact;
        yield {
          row: index + 1,
          raw: { phone: phone_number, name, email, company, custom: Object.entries(custom_fields ?? {}) },
        };
      }
    }
    return this.#import(principal, campaignId, rows(), region);
  }

  /** `POST …/import-data`: a CSV or JSON file, read as a stream. */
  async importFile(
    principal: Principal,
    campaignId: number,
    file: UploadedFile,
    options: ImportOptions,
  ): Promise<ImportReport> {
    const region = regionOf(options.defaultRegion, this.deps.defaultRegion, ['body', 'default_region']);
    const rows = await fileRows(file, options.columnMappings);
    return this.#import(principal, campaignId, rows, region);
  }

  async list(
    principal: Principal,
    campaignId: number,
    page: Page,
    status: ContactStatus | undefined,
  ): Promise<{ rows: store.ContactRow[]; total: number }> {
    const [found, list] = await Promise.all([
      store.campaignStatus(this.deps.db, principal.tenant, campaignId),
      store.listContacts(this.deps.db, principal.tenant, campaignId, page, status),
    ]);
    if (!found) throw notFound('Campaign not found');
    return list;
  }

  /** The pipeline every import runs, in one transaction that holds the campaign row. */
  #import(
    principal: Principal,
    campaignId: number,
    rows: AsyncIterable<SourceRow>,
    region: CountryCode,
  ): Promise<ImportReport> {
    const { tenant } = principal;
    return this.deps.db.transaction(async (tx) => {
      const campaign = await store.lockCampaign(tx, tenant, campaignId);
      assertEditableStatus(campaign?.status);
      const report = new Report();
      const variables = new Set(campaign!.availableVariables);
      let batch: Array<{ row: number; contact: store.NewContact }> = [];
      const inBatch = new Set<string>();

      const flush = async () => {
        const inserted = await store.insertContacts(
          tx,
          tenant,
          campaignId,
          batch.map((b) => b.contact),
        );
        const skipped = batch.filter((b) => !inserted.has(b.contact.phoneNumber));
        // Which skipped numbers came earlier in this import only matters for the messages.
        const earlier = report.full()
          ? new Set<string>()
          : await store.insertedInThisTransaction(
              tx,
              campaignId,
              skipped.map((b) => b.contact.phoneNumber),
            );
        for (const { contact } of batch) {
          if (!inserted.has(contact.phoneNumber)) continue;
          for (const key of Object.keys(contact.customFields)) variables.add(key);
        }
        report.imported += inserted.size;
        for (const { row, contact } of skipped) {
          report.duplicate(
            row,
            earlier.has(contact.phoneNumber)
              ? `Duplicate phone number ${contact.phoneNumber}: it appears earlier in this import`
              : `Duplicate phone number ${contact.phoneNumber}: already a contact of this campaign`,
          );
        }
        report.endBatch();
        batch = [];
        inBatch.clear();
      };

      for await (const source of rows) {
        const checked = 'error' in source ? source : toContact(source.raw, region);
        if ('error' in checked) {
          report.invalidRow(source.row, checked.error);
          continue;
        }
        const { contact } = checked;
        if (inBatch.has(contact.phoneNumber)) {
          report.duplicate(
            source.row,
            `Duplicate phone number ${contact.phoneNumber}: it appears earlier in this import`,
          );
          continue;
        }
        inBatch.add(contact.phoneNumber);
        batch.push({ row: source.row, contact });
        if (batch.length >= BATCH_SIZE) await flush();
      }
      await flush();
      if (report.imported > 0) {
        await store.finishImport(tx, tenant, campaignId, [...variables].sort());
        // Watchers of the campaign's progress see the new contacts (the count is part of it).
        await announceProgress(tx, tenant.organizationId, campaignId);
      }
      return report.result();
    });
  }
}

function assertEditableStatus(status: CampaignStatus | undefined): void {
  if (status === undefined) throw notFound('Campaign not found');
  if (!(EDITABLE_STATUSES as readonly string[]).includes(status)) {
    throw conflict(
      `The campaign is ${status}: contacts can be added while it is ${EDITABLE_STATUSES.join(', ')}`,
    );
  }
}

/**
 * Counts and the rows to report, in row order and at most MAX_REPORTED_ERRORS of them. Rows of the
 * batch being filled wait in `pending` (its duplicates are known only when it is inserted); every
 * row of a batch comes before every row of the next, so sorting a batch's rows at its end keeps the
 * whole list in order. `pending` never holds more than the list still has room for.
 */
class Report {
  imported = 0;
  duplicates = 0;
  invalid = 0;
  readonly #errors: ImportError[] = [];
  #pendingInvalid: ImportError[] = [];
  #pendingDuplicates: ImportError[] = [];

  full(): boolean {
    return this.#errors.length >= MAX_REPORTED_ERRORS;
  }

  invalidRow(row: number, detail: string): void {
    this.invalid += 1;
    this.#hold(this.#pendingInvalid, { row, detail });
  }

  duplicate(row: number, detail: string): void {
    this.duplicates += 1;
    this.#hold(this.#pendingDuplicates, { row, detail });
  }

  endBatch(): void {
    const room = MAX_REPORTED_ERRORS - this.#errors.length;
    const merged = [...this.#pendingInvalid, ...this.#pendingDuplicates].sort((a, b) => a.row - b.row);
    this.#errors.push(...merged.slice(0, Math.max(room, 0)));
    this.#pendingInvalid = [];
    this.#pendingDuplicates = [];
  }

  result(): ImportReport {
    return {
      imported: this.imported,
      duplicates: this.duplicates,
      invalid: this.invalid,
      errors: this.#errors,
    };
  }

  #hold(list: ImportError[], error: ImportError): void {
    // Each kind arrives in row order, so the first `room` of each include the first `room` overall.
    if (list.length < MAX_REPORTED_ERRORS - this.#errors.length) list.push(error);
  }
}

/** Checks and normalises one row; the message of the first problem found when it cannot be a contact. */
function toContact(raw: RawContact, region: CountryCode): { contact: store.NewContact } | { error: string } {
  if (raw.problem) return { error: raw.problem };
  const phoneText = text(raw.phone);
  if (typeof phoneText === 'object') return { error: `phone_number ${phoneText.problem}` };
  if (phoneText === undefined) return { error: 'Missing phone number' };
  const phoneNumber = phoneText.length <= LIMITS.phoneText ? normalisePhone(phoneText, region) : undefined;
  if (!phoneNumber) return { error: `Invalid phone number "${clip(phoneText)}" (default region ${region})` };

  const fields: Record<'name' | 'firstName' | 'lastName' | 'email' | 'company', string | undefined> = {
    name: undefined,
    firstName: undefined,
    lastName: undefined,
    email: undefined,
    company: undefined,
  };
  for (const key of Object.keys(fields) as Array<keyof typeof fields>) {
    const value = text(raw[key]);
    if (typeof value === 'object') return { error: `${FIELD_NAMES[key]} ${value.problem}` };
    fields[key] = value;
  }
  const name = fields.name ?? ([fields.firstName, fields.lastName].filter(Boolean).join(' ') || undefined);
  if (name !== undefined && name.length > LIMITS.name)
    return { error: `name is longer than ${LIMITS.name} characters` };
  if (fields.company !== undefined && fields.company.length > LIMITS.company)
    return { error: `company is longer than ${LIMITS.company} characters` };
  const email = fields.email;
  if (email !== undefined && (email.length > LIMITS.email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)))
    return { error: `Invalid email address "${clip(email)}"` };

  const customFields: Record<string, string | number | boolean> = {};
  // First and last names stay available to templates (`{{first_name}}`) beside the whole name.
  if (fields.firstName !== undefined) customFields.first_name = fields.firstName;
  if (fields.lastName !== undefined) customFields.last_name = fields.lastName;
  for (const [rawKey, rawValue] of raw.custom) {
    const key = clean(rawKey).trim();
    if (key === '' || key.length > LIMITS.customKey)
      return { error: `A custom field name must have 1 to ${LIMITS.customKey} characters` };
    const value = customValue(rawValue);
    if (typeof value === 'object') return { error: `Custom field "${clip(key)}" ${value.problem}` };
    if (value !== undefined) customFields[key] = value;
  }
  if (Object.keys(customFields).length > LIMITS.customFields)
    return { error: `More than ${LIMITS.customFields} custom fields` };
  return {
    contact: {
      phoneNumber,
      name: name ?? null,
      email: email ?? null,
      company: fields.company ?? null,
      customFields,
    },
  };
}

const FIELD_NAMES = {
  name: 'name',
  firstName: 'first_name',
  lastName: 'last_name',
  email: 'email',
  company: 'company',
} as const;

/** Text of a standard field: trimmed, empty as absent; numbers are taken as their digits. */
function text(value: unknown): string | undefined | { problem: string } {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return { problem: 'must be text' };
  const trimmed = clean(value).trim();
  return trimmed === '' ? undefined : trimmed;
}

function customValue(value: unknown): string | number | boolean | undefined | { problem: string } {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  if (typeof value !== 'string') return { problem: 'must be text, a number or true/false' };
  const trimmed = clean(value).trim();
  if (trimmed.length > LIMITS.customValue)
    return { problem: `is longer than ${LIMITS.customValue} characters` };
  return trimmed === '' ? undefined : trimmed;
}

/** Without NUL characters and lone surrogates, which PostgreSQL text cannot hold. */
function clean(value: string): string {
  return value.replaceAll('\u0000', '').replace(/\p{Cs}/gu, '\uFFFD');
}

function clip(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}

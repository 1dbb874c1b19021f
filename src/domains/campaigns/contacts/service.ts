/**
 * Campaign contacts: adding them as JSON, importing them from a CSV or JSON file, and listing them.
 *
 * Every way in ends in one pipeline. Rows are read one at a time (files stream from disk), each is
 * turned into a contact — the phone number normalised to E.164 with a default region, the other
 * fields checked (checks.ts) — or refused as invalid, and the valid ones are gathered into batches of
 * up to 1,000 distinct numbers. The batches are written one of two ways (writing.ts):
 * - row by row (the embedded database, and JSON bodies): each batch is inserted with
 *   `ON CONFLICT DO NOTHING`, so a number the campaign already has (or that came earlier in the same
 *   import) counts as a duplicate;
 * - staged (files on a PostgreSQL server): the batches are streamed as COPY lines into a temporary
 *   staging table a segment (about 1 MiB) at a time, and one statement inserts each segment — in row
 *   order, so the first row of a number wins — while the next segment is read and checked.
 * Both answer the same report for the same rows (report.ts). The whole import is one transaction that
 * holds the campaign row: it applies completely or not at all, `total_contacts` always equals the
 * number of contacts, and the campaign cannot start half-way through an import. Contacts may be added
 * while the campaign is draft, scheduled or paused.
 */
import type { CountryCode } from 'libphonenumber-js';
import type { Database, Db } from '../../../db/client.js';
import type { CampaignStatus, ContactStatus } from '../../../db/schema/index.js';
import type { Page } from '../../../lib/page.js';
import { conflict, notFound } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import { announceProgress } from '../events.js';
import { regionOf, toContact } from './checks.js';
import { fileRows, type SourceRow, type UploadedFile } from './files.js';
import { type ImportReport, Report } from './report.js';
import * as store from './store.js';
import { type CheckedRow, insertBatches, SEGMENT_SIZE, stageBatches, type WriteBatches } from './writing.js';

/** Campaign states that take new contacts. Running ones pick contacts as they go; finished ones are history. */
export const EDITABLE_STATUSES = ['draft', 'scheduled', 'paused'] as const satisfies CampaignStatus[];
/** Contacts per batch: per INSERT statement, or per chunk of COPY lines. */
export const BATCH_SIZE = 1000;

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

export class CampaignContactService {
  constructor(
    private readonly deps: {
      db: Db;
      defaultRegion: CountryCode;
      /** The server's `COPY … FROM STDIN`; without it (the embedded database) files are written row by row. */
      copyIn?: Database['copyIn'];
      /** The COPY text gathered into one staged segment (writing.ts SEGMENT_SIZE unless given). */
      segmentSize?: number;
    },
  ) {}

  /** 404 unless the campaign is the caller's; 409 unless it takes contacts now. */
  async assertEditable(principal: Principal, campaignId: number): Promise<void> {
    assertEditableStatus(await store.campaignStatus(this.deps.db, principal.tenant, campaignId));
  }

  /**
   * `POST …/contacts`: the contacts of a JSON body; row numbers are their positions (from 1). Written
   * row by row: a body holds at most 10,000 contacts, and a temporary table for every small request
   * would cost more than it saves (and grow the server's catalogue).
   */
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
    return this.#import(principal, campaignId, rows(), region, insertBatches);
  }

  /** `POST …/import-data`: a CSV or JSON file, read as a stream; staged through COPY on a server. */
  async importFile(
    principal: Principal,
    campaignId: number,
    file: UploadedFile,
    options: ImportOptions,
  ): Promise<ImportReport> {
    const region = regionOf(options.defaultRegion, this.deps.defaultRegion, ['body', 'default_region']);
    const rows = await fileRows(file, options.columnMappings);
    const { copyIn, segmentSize = SEGMENT_SIZE } = this.deps;
    const write: WriteBatches = copyIn ? stageBatches(copyIn, segmentSize) : insertBatches;
    return this.#import(principal, campaignId, rows, region, write);
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
    write: WriteBatches,
  ): Promise<ImportReport> {
    const { tenant } = principal;
    return this.deps.db.transaction(async (tx) => {
      const campaign = await store.lockCampaign(tx, tenant, campaignId);
      assertEditableStatus(campaign?.status);
      const report = new Report();
      const written = await write(tx, tenant, campaignId, checkedBatches(rows, region, report), report);
      report.imported = written.imported;
      report.endBatch();
      if (written.imported > 0) {
        const variables = new Set([...campaign!.availableVariables, ...written.customKeys]);
        await store.finishImport(tx, tenant, campaignId, [...variables].sort());
        // Watchers of the campaign's progress see the new contacts (the count is part of it).
        await announceProgress(tx, tenant.organizationId, campaignId);
      }
      return report.result();
    });
  }
}

/**
 * The valid rows of `rows`, in row order, in batches of up to BATCH_SIZE distinct numbers. Invalid
 * rows and repeats of a number within the batch being gathered go to the report as they are read.
 */
async function* checkedBatches(
  rows: AsyncIterable<SourceRow>,
  region: CountryCode,
  report: Report,
): AsyncGenerator<CheckedRow[]> {
  let batch: CheckedRow[] = [];
  const inBatch = new Set<string>();
  for await (const source of rows) {
    const checked = 'error' in source ? source : toContact(source.raw, region);
    if ('error' in checked) {
      report.invalidRow(source.row, checked.error);
      continue;
    }
    const { contact } = checked;
    if (inBatch.has(contact.phoneNumber)) {
      report.repeatedInBatch(source.row, contact.phoneNumber);
      continue;
    }
    inBatch.add(contact.phoneNumber);
    batch.push({ row: source.row, contact });
    if (batch.length >= BATCH_SIZE) {
      yield batch;
      batch = [];
      inBatch.clear();
    }
  }
  if (batch.length > 0) yield batch;
}

function assertEditableStatus(status: CampaignStatus | undefined): void {
  if (status === undefined) throw notFound('Campaign not found');
  if (!(EDITABLE_STATUSES as readonly string[]).includes(status)) {
    throw conflict(
      `The campaign is ${status}: contacts can be added while it is ${EDITABLE_STATUSES.join(', ')}`,
    );
  }
}

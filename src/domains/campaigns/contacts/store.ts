/**
 * SQL of campaign contacts: the campaign row an import locks, batched inserts that skip numbers the
 * campaign already has (the unique index campaign_contacts_phone_key), the staging table a server
 * import copies its rows into and the statement that writes them all at once, the campaign's
 * counters and variables after an import, and the contact list.
 */
import { asc, eq, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import { copyLine } from '../../../db/copy-text.js';
import {
  type CampaignStatus,
  type ContactStatus,
  campaignContacts,
  campaigns,
} from '../../../db/schema/index.js';
import type { Tenant } from '../../../db/tenant.js';
import { withUpdatedAt } from '../../../db/touch.js';
import { offsetOf, type Page } from '../../../lib/page.js';

export type ContactRow = typeof campaignContacts.$inferSelect;

export interface NewContact {
  phoneNumber: string;
  name: string | null;
  email: string | null;
  company: string | null;
  customFields: Record<string, string | number | boolean>;
}

export interface CampaignForImport {
  status: CampaignStatus;
  availableVariables: string[];
}

/** The campaign's status, or undefined when it is not the tenant's. */
export async function campaignStatus(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<CampaignStatus | undefined> {
  const [row] = await ex
    .select({ status: campaigns.status })
    .from(campaigns)
    .where(tenant.where(campaigns, eq(campaigns.id, campaignId)));
  return row?.status;
}

/**
 * Locks the campaign row for the rest of the transaction: imports into one campaign take turns, and
 * a start or an update of the campaign waits for the import to commit. FOR NO KEY UPDATE, as the
 * executor's lock (the lock order is in executor.ts): the campaign first, then its contacts.
 */
export async function lockCampaign(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<CampaignForImport | undefined> {
  const [row] = await ex
    .select({ status: campaigns.status, availableVariables: campaigns.availableVariables })
    .from(campaigns)
    .where(tenant.where(campaigns, eq(campaigns.id, campaignId)))
    .for('no key update');
  return row;
}

/**
 * Inserts the contacts (phone numbers unique within the batch) in one statement; a number the
 * campaign has already is skipped. Answers the numbers that were inserted.
 */
export async function insertContacts(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  contacts: NewContact[],
): Promise<Set<string>> {
  if (contacts.length === 0) return new Set();
  // The batch travels as one JSON parameter: one statement, no per-value parameters, either driver.
  const batch = JSON.stringify(
    contacts.map((c) => ({
      phone_number: c.phoneNumber,
      name: c.name,
      email: c.email,
      company: c.company,
      custom_fields: c.customFields,
    })),
  );
  const result = (await ex.execute(sql`
    insert into campaign_contacts (organization_id, campaign_id, phone_number, name, email, company, custom_fields)
    select ${tenant.organizationId}::int, ${campaignId}::int, r.phone_number, r.name, r.email, r.company,
           coalesce(r.custom_fields, '{}'::jsonb)
    from json_to_recordset(${batch}::json)
      as r(phone_number text, name text, email text, company text, custom_fields jsonb)
    on conflict (campaign_id, phone_number) do nothing
    returning phone_number`)) as unknown as { rows: Array<{ phone_number: string }> };
  return new Set(result.rows.map((row) => row.phone_number));
}

/**
 * Of `phoneNumbers` (contacts of the campaign), those inserted by the current transaction: their
 * `created_at` is the transaction's own `now()`, while contacts from before are older.
 */
export async function insertedInThisTransaction(
  ex: Executor,
  campaignId: number,
  phoneNumbers: string[],
): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  const result = (await ex.execute(sql`
    select phone_number from campaign_contacts
    where campaign_id = ${campaignId}::int
      and phone_number in (select json_array_elements_text(${JSON.stringify(phoneNumbers)}::json))
      and created_at = now()`)) as unknown as { rows: Array<{ phone_number: string }> };
  return new Set(result.rows.map((row) => row.phone_number));
}

/**
 * The staging table of an import on a server: checked rows, numbered as in the file, in the order
 * COPY_STAGING reads them (`stagingLine`). It holds one segment of the file at a time (emptied by
 * `clearStaging` before the next) and is dropped when the import's transaction ends, committed or
 * not. Repeats of a number within one batch are not staged: the checking reports those itself.
 */
const STAGING = 'campaign_contact_import';

export async function createStaging(ex: Executor): Promise<void> {
  await ex.execute(
    sql.raw(`create temp table ${STAGING} (
      row_number int not null,
      phone_number text not null,
      name text,
      email text,
      company text,
      custom_fields jsonb not null
    ) on commit drop`),
  );
}

export async function clearStaging(ex: Executor): Promise<void> {
  await ex.execute(sql.raw(`truncate ${STAGING}`));
}

/** The statement `Database.copyIn` runs to fill the staging table, with lines from `stagingLine`. */
export const COPY_STAGING = `copy ${STAGING} (row_number, phone_number, name, email, company, custom_fields) from stdin`;

/** One checked row as a line of COPY_STAGING. */
export function stagingLine(row: number, contact: NewContact): string {
  const { phoneNumber, name, email, company, customFields } = contact;
  return copyLine([row, phoneNumber, name, email, company, JSON.stringify(customFields)]);
}

/**
 * Inserts the staged rows in row order, skipping numbers the campaign has — so of the rows with one
 * number the first wins, the later ones conflicting with it — and contacts are listed in the file's
 * order. Answers how many were inserted and the first new contact's id: ids grow, and the campaign's
 * lock keeps other imports from adding to it meanwhile, so this statement's contacts are the
 * campaign's from that id on.
 */
export async function insertStaged(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<{ inserted: number; firstId: number | null }> {
  const result = (await ex.execute(sql`
    with inserted as (
      insert into campaign_contacts (organization_id, campaign_id, phone_number, name, email, company, custom_fields)
      select ${tenant.organizationId}::int, ${campaignId}::int, phone_number, name, email, company, custom_fields
      from ${sql.raw(STAGING)}
      order by row_number
      on conflict (campaign_id, phone_number) do nothing
      returning id
    )
    select count(*)::int as inserted, min(id) as first_id from inserted`)) as unknown as {
    rows: Array<{ inserted: number; first_id: number | null }>;
  };
  const [row] = result.rows;
  return { inserted: row?.inserted ?? 0, firstId: row?.first_id ?? null };
}

/**
 * The first `limit` staged rows, in row order, that `insertStaged` did not insert (its contacts are
 * the campaign's from `firstId` on): a later row of a number in the segment; a number an earlier
 * segment inserted; a number the campaign had before the import. `earlierInImport` when the import
 * inserted the number — the contacts it inserted are those created at the transaction's own `now()`.
 */
export async function firstStagedDuplicates(
  ex: Executor,
  campaignId: number,
  firstId: number | null,
  limit: number,
): Promise<Array<{ row: number; phoneNumber: string; earlierInImport: boolean }>> {
  const result = (await ex.execute(sql`
    select s.row_number, s.phone_number, c.id is not null as earlier_in_import
    from (
      select row_number, phone_number,
             row_number() over (partition by phone_number order by row_number) as occurrence
      from ${sql.raw(STAGING)}
    ) s
    left join campaign_contacts c
      on c.campaign_id = ${campaignId}::int and c.phone_number = s.phone_number and c.created_at = now()
    where s.occurrence > 1 or c.id is null or c.id < ${firstId ?? MAX_ID}::int
    order by s.row_number
    limit ${limit}::int`)) as unknown as {
    rows: Array<{ row_number: number; phone_number: string; earlier_in_import: boolean }>;
  };
  return result.rows.map((d) => ({
    row: d.row_number,
    phoneNumber: d.phone_number,
    earlierInImport: d.earlier_in_import,
  }));
}

/** Above every contact id (an int column): when a segment inserted nothing, every contact is older. */
const MAX_ID = 2 ** 31 - 1;

/** The names of the custom fields of the contacts this transaction inserted into the campaign. */
export async function customKeysInsertedInThisTransaction(
  ex: Executor,
  campaignId: number,
): Promise<string[]> {
  const result = (await ex.execute(sql`
    select distinct jsonb_object_keys(custom_fields) as key from campaign_contacts
    where campaign_id = ${campaignId}::int and created_at = now()`)) as unknown as {
    rows: Array<{ key: string }>;
  };
  return result.rows.map((row) => row.key);
}

/** After an import: `total_contacts` counted afresh, and the campaign's variables replaced. */
export async function finishImport(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  availableVariables: string[],
): Promise<void> {
  await ex
    .update(campaigns)
    .set(
      withUpdatedAt({
        totalContacts: sql`(select count(*)::int from ${campaignContacts} where ${campaignContacts.campaignId} = ${campaignId}::int)`,
        availableVariables,
      }),
    )
    .where(tenant.where(campaigns, eq(campaigns.id, campaignId)));
}

/** A page of the campaign's contacts in the order they were added, and how many match in all. */
export async function listContacts(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  page: Page,
  status: ContactStatus | undefined,
): Promise<{ rows: ContactRow[]; total: number }> {
  const where = tenant.where(
    campaignContacts,
    eq(campaignContacts.campaignId, campaignId),
    status === undefined ? undefined : eq(campaignContacts.status, status),
  ) as SQL;
  const [rows, [count]] = await Promise.all([
    ex
      .select()
      .from(campaignContacts)
      .where(where)
      .orderBy(asc(campaignContacts.id))
      .limit(page.perPage)
      .offset(offsetOf(page)),
    ex.select({ n: sql<number>`count(*)::int` }).from(campaignContacts).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

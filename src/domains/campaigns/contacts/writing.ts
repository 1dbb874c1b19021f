/**
 * The two ways of writing an import's checked rows into the campaign, in the import's transaction.
 * Both take the rows in batches of up to BATCH_SIZE distinct numbers, in row order, and report the
 * rows they do not insert as duplicates with the same messages.
 */
import type { Database, Tx } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import { MAX_REPORTED_ERRORS, type Report } from './report.js';
import * as store from './store.js';

/** A valid row of an import and the contact it makes. */
export interface CheckedRow {
  row: number;
  contact: store.NewContact;
}

/** What writing an import's batches added: how many contacts, and the custom field names they use. */
export interface Written {
  imported: number;
  customKeys: Iterable<string>;
}

/** Writes the checked batches of an import into the campaign, reporting the duplicates it finds. */
export type WriteBatches = (
  tx: Tx,
  tenant: Tenant,
  campaignId: number,
  batches: AsyncIterable<CheckedRow[]>,
  report: Report,
) => Promise<Written>;

/**
 * Row by row (the embedded database, and JSON bodies): one INSERT a batch, then which of its skipped
 * numbers this import inserted before.
 */
export const insertBatches: WriteBatches = async (tx, tenant, campaignId, batches, report) => {
  let imported = 0;
  const customKeys = new Set<string>();
  for await (const batch of batches) {
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
      for (const key of Object.keys(contact.customFields)) customKeys.add(key);
    }
    imported += inserted.size;
    report.refused(
      skipped.length,
      skipped.map(({ row, contact }) => ({
        row,
        phoneNumber: contact.phoneNumber,
        earlierInImport: earlier.has(contact.phoneNumber),
      })),
    );
    report.endBatch();
  }
  return { imported, customKeys };
};

/**
 * COPY text gathered into one segment: about this much (characters), a few thousand rows. Segments
 * let the database insert one while the next is read and checked; each waits for the previous to be
 * written, so memory holds about two.
 */
export const SEGMENT_SIZE = 1 << 20;

/** The COPY lines of consecutive batches, and the last row they cover. */
interface Segment {
  chunks: string[];
  rows: number;
  lastRow: number;
}

/**
 * Staged (files on a server): the checked rows go as COPY text into a temporary staging table and
 * are inserted from there by one statement per segment — the database does in one pass what a
 * batch's INSERT does in many, and inserts one segment while the next is read, checked and gathered.
 * Every staged row not inserted is a duplicate; which ones they are (for the report's list) is asked
 * only while the list has room, and which custom fields the inserted contacts use only when some row
 * was not inserted — otherwise they are all the fields seen here.
 */
export function stageBatches(copyIn: NonNullable<Database['copyIn']>, segmentSize: number): WriteBatches {
  return async (tx, tenant, campaignId, batches, report) => {
    await store.createStaging(tx);
    let staged = 0;
    let imported = 0;
    const stagedKeys = new Set<string>();

    const write = async (segment: Segment, first: boolean) => {
      if (!first) await store.clearStaging(tx);
      await copyIn(tx, store.COPY_STAGING, segment.chunks);
      const { inserted, firstId } = await store.insertStaged(tx, tenant, campaignId);
      imported += inserted;
      staged += segment.rows;
      const refused = segment.rows - inserted;
      if (refused > 0) {
        const listed = report.full()
          ? []
          : await store.firstStagedDuplicates(tx, campaignId, firstId, MAX_REPORTED_ERRORS);
        report.refused(refused, listed);
      }
      report.endBatch(segment.lastRow);
    };

    // One segment is written while the loop reads the next; its failure is awaited, not lost.
    let writing: Promise<void> | undefined;
    try {
      for await (const segment of segments(batches, segmentSize, stagedKeys)) {
        await writing;
        writing = write(segment, writing === undefined);
        writing.catch(() => {});
      }
      await writing;
    } catch (error) {
      // A file that turned out broken: the connection finishes the segment it is writing before the
      // transaction rolls back.
      await writing?.catch(() => {});
      throw error;
    }
    if (imported === staged) return { imported, customKeys: stagedKeys };
    return {
      imported,
      customKeys: imported > 0 ? await store.customKeysInsertedInThisTransaction(tx, campaignId) : [],
    };
  };
}

/** The batches as COPY lines, gathered into segments of about `segmentSize`; `keys` collects custom field names. */
async function* segments(
  batches: AsyncIterable<CheckedRow[]>,
  segmentSize: number,
  keys: Set<string>,
): AsyncGenerator<Segment> {
  let segment: Segment = { chunks: [], rows: 0, lastRow: 0 };
  let size = 0;
  for await (const batch of batches) {
    let chunk = '';
    for (const { row, contact } of batch) {
      chunk += store.stagingLine(row, contact);
      for (const key of Object.keys(contact.customFields)) keys.add(key);
    }
    segment.chunks.push(chunk);
    // A turn of the event loop for the connection: reading rows that are already buffered never
    // gives it one, so the answer to the segment being written (and the sending of its next
    // statement) would wait for the next read from the file — the database idle meanwhile.
    await new Promise((resolve) => setImmediate(resolve));
    segment.rows += batch.length;
    segment.lastRow = batch.at(-1)!.row;
    size += chunk.length;
    if (size >= segmentSize) {
      yield segment;
      segment = { chunks: [], rows: 0, lastRow: 0 };
      size = 0;
    }
  }
  if (segment.rows > 0) yield segment;
}

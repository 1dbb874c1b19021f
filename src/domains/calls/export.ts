/**
 * The call export's file formats (platform-api.md "Calls export and search"): the document's columns
 * in its order, then the after-call analysis (summary, sentiment, score, structured data as JSON
 * text). Rows come in batches from a database cursor and leave as text chunks, so a download of any
 * size holds one batch.
 */
import { stringify } from 'csv-stringify/sync';

export type ExportFormat = 'csv' | 'json';

export const EXPORT_FILES: Record<ExportFormat, { fileName: string; contentType: string }> = {
  csv: { fileName: 'calls_export.csv', contentType: 'text/csv; charset=utf-8' },
  json: { fileName: 'calls_export.json', contentType: 'application/json; charset=utf-8' },
};

/** One exported call, with the JSON export's keys in the document's order. */
export interface ExportedCall {
  id: number;
  call_sid: string | null;
  assistant_name: string | null;
  customer_phone_number: string;
  status: string;
  duration: number | null;
  started_at: string | null;
  ended_at: string | null;
  summary: string | null;
  sentiment: string | null;
  sentiment_score: number | null;
  structured_data: unknown;
}

/** CSV header and the field each column shows, in the document's order. */
export const CSV_COLUMNS: ReadonlyArray<[header: string, key: keyof ExportedCall]> = [
  ['Call ID', 'id'],
  ['Call SID', 'call_sid'],
  ['Assistant Name', 'assistant_name'],
  ['Customer Phone', 'customer_phone_number'],
  ['Status', 'status'],
  ['Duration (seconds)', 'duration'],
  ['Started At', 'started_at'],
  ['Ended At', 'ended_at'],
  ['Summary', 'summary'],
  ['Sentiment', 'sentiment'],
  ['Sentiment Score', 'sentiment_score'],
  ['Structured Data', 'structured_data'],
];

/** A row as the database cursor reads it (see `exportSql`). */
export function exportedCall(row: Record<string, unknown>): ExportedCall {
  return {
    id: Number(row.id),
    call_sid: (row.call_sid as string | null) ?? null,
    assistant_name: (row.assistant_name as string | null) ?? null,
    customer_phone_number: String(row.customer_phone_number),
    status: String(row.status),
    duration: row.duration === null || row.duration === undefined ? null : Number(row.duration),
    started_at: isoOrNull(row.started_at),
    ended_at: isoOrNull(row.ended_at),
    summary: (row.summary as string | null) ?? null,
    sentiment: (row.sentiment as string | null) ?? null,
    sentiment_score:
      row.sentiment_score === null || row.sentiment_score === undefined ? null : Number(row.sentiment_score),
    structured_data: row.structured_data ?? null,
  };
}

function isoOrNull(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(String(value))).toISOString();
}

/** A number as a spreadsheet reads one (`+14155552671`, `-3`, `2.5`): it evaluates to itself. */
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/;

/**
 * A cell a spreadsheet would run as a formula (it starts with `=`, `+`, `-`, `@`, a tab or a
 * carriage return) gets a leading `'`, which makes it text (OWASP "CSV injection"). Plain numbers
 * such as E.164 phone numbers are left alone: they evaluate to themselves and run nothing.
 */
export function neutraliseFormula(cell: string): string {
  if (!/^[=+\-@\t\r]/.test(cell) || PLAIN_NUMBER.test(cell)) return cell;
  return `'${cell}`;
}

/** A cell's text: numbers as they are, structured data as JSON text; text neutralised. */
function csvCell(value: unknown, key: keyof ExportedCall): string {
  if (value === null || value === undefined) return '';
  if (key === 'structured_data') return neutraliseFormula(JSON.stringify(value));
  if (typeof value === 'number') return String(value);
  return neutraliseFormula(String(value));
}

/** The CSV file (RFC 4180, CRLF line ends): the header, then one chunk per batch. */
export async function* csvChunks(batches: AsyncIterable<Record<string, unknown>[]>): AsyncGenerator<string> {
  // A cell holding a lone line feed or carriage return is quoted too (RFC 4180; given a record
  // delimiter, csv-stringify would otherwise quote only cells holding the whole CRLF).
  const options = { record_delimiter: 'windows' as const, quote_record_delimiter: true };
  yield stringify([CSV_COLUMNS.map(([header]) => header)], options);
  for await (const batch of batches) {
    const records = batch.map((row) => {
      const call = exportedCall(row);
      return CSV_COLUMNS.map(([, key]) => csvCell(call[key], key));
    });
    yield stringify(records, options);
  }
}

/** The JSON file: one array, written an element at a time. */
export async function* jsonChunks(batches: AsyncIterable<Record<string, unknown>[]>): AsyncGenerator<string> {
  yield '[';
  let first = true;
  for await (const batch of batches) {
    const elements = batch.map((row) => JSON.stringify(exportedCall(row)));
    yield (first ? '' : ',') + elements.join(',');
    first = false;
  }
  yield ']';
}

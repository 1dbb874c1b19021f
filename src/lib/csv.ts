/**
 * Streaming CSV reading over `csv-parse`: records come out one at a time as the input is read, so
 * memory stays flat however long the file is. RFC 4180 quoting (quoted delimiters, doubled quotes,
 * line breaks inside quotes), CRLF or LF line ends, a UTF-8 byte-order mark, rows of unequal length,
 * and blank rows (skipped) are all taken in stride. A broken file fails with the line it broke on.
 */
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';

/** The input is not CSV we can read; `line` is the 1-based line of the file where reading stopped. */
export class CsvSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number | undefined,
  ) {
    super(message);
    this.name = 'CsvSyntaxError';
  }
}

export interface CsvOptions {
  /** One character; `sniffDelimiter` picks one from the header line. Default `,`. */
  delimiter?: string;
  /** The longest record accepted (characters); a longer one is a syntax error (an unclosed quote, usually). */
  maxRecordLength?: number;
}

/** Delimiters spreadsheets write: comma, semicolon (locales with a decimal comma), tab, pipe. */
export const DELIMITERS = [',', ';', '\t', '|'] as const;

/**
 * The delimiter of a CSV file, judged from its first line (`sample` may hold more): the candidate
 * found most often outside quotes, `,` when none occurs or on a tie with it.
 */
export function sniffDelimiter(sample: string): string {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const char of sample) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && counts.has(char)) counts.set(char, counts.get(char)! + 1);
  }
  let best = ',';
  for (const [delimiter, count] of counts) if (count > counts.get(best)!) best = delimiter;
  return best;
}

/**
 * The records of `input` (header included), each an array of the raw field texts. Stops reading
 * and releases `input` when the consumer stops early.
 */
export async function* readCsv(input: Readable, options: CsvOptions = {}): AsyncGenerator<string[]> {
  const parser = parse({
    bom: true,
    delimiter: options.delimiter ?? ',',
    relax_column_count: true,
    // A stray quote inside an unquoted field (`O"Brien`) is kept as text rather than refused.
    relax_quotes: true,
    skip_empty_lines: true,
    // Rows of nothing but delimiters (`,,,`), which spreadsheets leave at the end, are blank too.
    skip_records_with_empty_values: true,
    max_record_size: options.maxRecordLength ?? 1 << 20,
  });
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  try {
    for await (const record of parser) yield record as string[];
  } catch (error) {
    if (isCsvError(error)) throw new CsvSyntaxError(error.message, lineOf(error));
    throw error;
  } finally {
    input.unpipe(parser);
    input.destroy();
    parser.destroy();
  }
}

/** csv-parse's own errors (`CsvError`) carry a `CSV_…` code. */
function isCsvError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('CSV_');
}

function lineOf(error: Error): number | undefined {
  const line = (error as { lines?: unknown }).lines;
  return typeof line === 'number' ? line : undefined;
}

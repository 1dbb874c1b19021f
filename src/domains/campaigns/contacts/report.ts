/**
 * The report an import answers: complete counts, and the first MAX_REPORTED_ERRORS problem rows in
 * row order with what is wrong with each. Both ways of writing an import fill it through the same
 * methods, so their reports are the same for the same file.
 */

/** The `errors` list of a report names at most this many rows (the counts are always complete). */
export const MAX_REPORTED_ERRORS = 100;

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

/**
 * Why a row with a number already taken is not imported. "Earlier in this import" when this import
 * added the number (or, inside one batch of checked rows, had it already); "already a contact"
 * otherwise — which a repeat of a number the campaign had before the import also says once its first
 * occurrence is in an earlier batch.
 */
export function duplicateDetail(phoneNumber: string, earlierInImport: boolean): string {
  return earlierInImport
    ? `Duplicate phone number ${phoneNumber}: it appears earlier in this import`
    : `Duplicate phone number ${phoneNumber}: already a contact of this campaign`;
}

/**
 * Counts and the rows to report. Problem rows wait in `#pending` until the rows before them are
 * settled — the end of their batch (a batch's duplicates are known only once it is written), or with
 * `through`, a row up to which everything is settled while later rows are already being read. Rows
 * are settled in row order, so sorting what is settled keeps the whole list in order. Each source of
 * problem rows has a list of its own: each list is in row order, so its first `room` rows include
 * every one of its rows that can make the first `room` overall — while one list shared by sources
 * that arrive one after another (repeats found while reading, then numbers the database refused)
 * could fill up with later rows first. A list never holds more than the report still has room for.
 */
export class Report {
  imported = 0;
  duplicates = 0;
  invalid = 0;
  readonly #errors: ImportError[] = [];
  #pending = { invalid: [] as ImportError[], repeated: [] as ImportError[], refused: [] as ImportError[] };

  full(): boolean {
    return this.#errors.length >= MAX_REPORTED_ERRORS;
  }

  /** A row that cannot be a contact. */
  invalidRow(row: number, detail: string): void {
    this.invalid += 1;
    this.#hold(this.#pending.invalid, { row, detail });
  }

  /** A row repeating a number of the batch being read. */
  repeatedInBatch(row: number, phoneNumber: string): void {
    this.duplicates += 1;
    this.#hold(this.#pending.repeated, { row, detail: duplicateDetail(phoneNumber, true) });
  }

  /**
   * `count` rows whose number the campaign had by the time they were written; `first` are the first
   * of them in row order (at least as many as the report has room for, when there are so many).
   */
  refused(
    count: number,
    first: Iterable<{ row: number; phoneNumber: string; earlierInImport: boolean }>,
  ): void {
    this.duplicates += count;
    for (const { row, phoneNumber, earlierInImport } of first)
      this.#hold(this.#pending.refused, { row, detail: duplicateDetail(phoneNumber, earlierInImport) });
  }

  /** Every problem row up to `through` (all of them without it) is known: they join the list. */
  endBatch(through = Number.POSITIVE_INFINITY): void {
    const room = MAX_REPORTED_ERRORS - this.#errors.length;
    const settled = (list: ImportError[]) => list.filter((error) => error.row <= through);
    const waiting = (list: ImportError[]) => list.filter((error) => error.row > through);
    const { invalid, repeated, refused } = this.#pending;
    const merged = [...settled(invalid), ...settled(repeated), ...settled(refused)].sort(
      (a, b) => a.row - b.row,
    );
    this.#errors.push(...merged.slice(0, Math.max(room, 0)));
    this.#pending = { invalid: waiting(invalid), repeated: waiting(repeated), refused: waiting(refused) };
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
    if (list.length < MAX_REPORTED_ERRORS - this.#errors.length) list.push(error);
  }
}

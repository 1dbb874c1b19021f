/**
 * Reads a contacts file in the browser only to show it before the import: its columns and first
 * rows, so each column can be mapped. The import itself sends the file untouched and the API reads
 * it (its reading is the truth: row errors come from there). CSV is split as the API documents it —
 * a header row, then comma, semicolon or tab, with "quoted" cells — and JSON is an array of objects.
 */

export interface TablePreview {
  columns: string[];
  rows: string[][];
  /** Data rows in the file (the header not counted). */
  rowCount: number;
}

const SHOWN_ROWS = 5;

/** The delimiter the header line uses most: comma, semicolon or tab. */
function delimiterOf(header: string): string {
  const counts = [',', ';', '\t'].map((d) => [d, header.split(d).length] as const);
  return counts.reduce((best, next) => (next[1] > best[1] ? next : best))[0];
}

/** CSV into rows of cells: quotes may hold delimiters, doubled quotes and line breaks. */
export function csvRows(text: string): string[][] {
  const source = text.replace(/^\uFEFF/, '');
  const delimiter = delimiterOf(source.split(/\r?\n/, 1)[0] ?? '');
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === delimiter) {
      row.push(cell);
      cell = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && source[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += char;
  }
  if (cell !== '' || row.length > 0) rows.push([...row, cell]);
  return rows.filter((r) => r.some((c) => c.trim() !== ''));
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** The columns and first rows of a CSV or JSON text; an Error saying why when it cannot be read. */
export function previewTable(text: string): TablePreview {
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('The file is empty');
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new Error('The JSON could not be read: it should be an array of objects');
    }
    const objects = (parsed as unknown[]).filter(
      (item): item is Record<string, unknown> => typeof item === 'object' && item !== null,
    );
    const columns = [...new Set(objects.flatMap((item) => Object.keys(item)))];
    return {
      columns,
      rows: objects.slice(0, SHOWN_ROWS).map((item) => columns.map((c) => cellText(item[c]))),
      rowCount: objects.length,
    };
  }
  const [header, ...data] = csvRows(trimmed);
  if (!header) throw new Error('The file has no header row');
  return {
    columns: header.map((c) => c.trim()),
    rows: data.slice(0, SHOWN_ROWS),
    rowCount: data.length,
  };
}

/** What a column may become: the API's contact columns, a custom field, or nothing. */
export const TARGETS = ['phone_number', 'name', 'first_name', 'last_name', 'email', 'company'] as const;

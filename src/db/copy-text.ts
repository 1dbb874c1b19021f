/**
 * PostgreSQL's COPY text format (the default of `COPY … FROM STDIN`): one line a row, fields
 * separated by tabs, `\N` for null, and a backslash before the characters that would otherwise end
 * a field or a line. Simpler to write and cheaper for the server to read than CSV's quoting.
 */

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One field: `\N` for null, the text with `\`, tab, line feed and carriage return escaped. */
export function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  return SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPES[c]!) : value;
}

/** One row: its fields as `copyField` writes them, tab-separated, with the line's end. */
export function copyLine(fields: ReadonlyArray<string | number | null>): string {
  return `${fields.map(copyField).join('\t')}\n`;
}

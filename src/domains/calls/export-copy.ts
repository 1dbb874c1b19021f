/**
 * The CSV export on a PostgreSQL server: one `COPY (SELECT …) TO STDOUT WITH (FORMAT csv, HEADER)`
 * whose output goes to the download as it arrives, so the rows never become JavaScript values. It
 * writes byte for byte the file `csvChunks` (export.ts) writes — the embedded database, which has no
 * COPY over the wire, keeps that path — so each cell is rendered in SQL as `csvCell` renders it:
 *
 * - text cells neutralised as `neutraliseFormula` does, and an empty cell written as NULL (COPY
 *   quotes an empty string, csv-stringify does not);
 * - timestamps as `Date.toISOString` writes them (UTC, milliseconds, truncated as the driver does);
 * - numbers and structured data as `JSON.stringify` writes what the driver parsed: compact, integer
 *   keys first (JavaScript objects order them so), numbers in JavaScript's shortest form;
 * - records ended by CRLF (COPY writes LF): `crlfRecords` rewrites line feeds outside quoted cells.
 */
import { Transform } from 'node:stream';
import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { assistants, callAnalyses, calls } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { CSV_COLUMNS, type ExportedCall } from './export.js';
import { type CallFilter, exportSource } from './store.js';

/**
 * The session's temporary functions the COPY statement calls (pg_temp: no migration, and each
 * connection has its own). `export_cell` is `neutraliseFormula` plus empty-as-NULL; `export_json`
 * is `JSON.stringify(JSON.parse(jsonb text))`: PostgreSQL's own jsonb text puts spaces after `,` and
 * `:`, orders keys by length, and writes numbers as `numeric` does.
 */
export const CSV_COPY_SETUP = String.raw`
create or replace function pg_temp.export_cell(cell text) returns text language sql immutable as $$
  select nullif(case when left(cell, 1) in ('=', '+', '-', '@', E'\t', E'\r')
    and cell !~ '^[+-]?[0-9]+([.][0-9]+)?$' then '''' || cell else cell end, '')
$$;
create or replace function pg_temp.export_json(value jsonb) returns text
language plpgsql immutable strict set extra_float_digits = 1 as $$
declare
  float_value float8;
  shortest text;
begin
  case jsonb_typeof(value)
  when 'object' then
    -- JavaScript puts array-index keys (0 to 2^32 - 2) first, in numeric order, then the others as read.
    return '{' || coalesce((
      select string_agg(to_json(key)::text || ':' || pg_temp.export_json(item), ','
        order by case when key ~ '^(0|[1-9][0-9]{0,9})$' and key::bigint <= 4294967294 then key::bigint end
          nulls last, ordinal)
      from jsonb_each(value) with ordinality as member(key, item, ordinal)), '') || '}';
  when 'array' then
    return '[' || coalesce((
      select string_agg(pg_temp.export_json(item), ',' order by ordinal)
      from jsonb_array_elements(value) with ordinality as element(item, ordinal)), '') || ']';
  when 'number' then
    -- What the driver's JSON.parse reads is the nearest double; float8's text is its shortest
    -- digits, laid out as JavaScript does: exponent below 1e-6 and from 1e21, plain digits between.
    float_value := value::float8;
    if float_value = 0 then
      return '0';
    end if;
    shortest := float_value::text;
    if abs(float_value) >= 1e21 or abs(float_value) < 1e-6 then
      return regexp_replace(shortest, 'e([+-])0*([0-9])', 'e\1\2');
    end if;
    if position('e' in shortest) > 0 then
      return shortest::numeric::text;
    end if;
    return shortest;
  else
    -- Strings (escaped as JSON.stringify escapes them), true, false and null.
    return value::text;
  end case;
end
$$;`;

const dialect = new PgDialect();

/** Each column's cell, in `CSV_COLUMNS` order. */
const CELLS: Record<keyof ExportedCall, SQL> = {
  id: sql`${calls.id}`,
  call_sid: textCell(sql`${calls.callSid}`),
  assistant_name: textCell(sql`${assistants.name}`),
  customer_phone_number: textCell(sql`${calls.customerPhoneNumber}`),
  status: textCell(sql`${calls.status}`),
  duration: sql`${calls.duration}`,
  started_at: isoTimestamp(sql`${calls.startedAt}`),
  ended_at: isoTimestamp(sql`${calls.endedAt}`),
  summary: textCell(sql`${callAnalyses.summary}`),
  sentiment: textCell(sql`${callAnalyses.sentiment}`),
  // A number cell is not neutralised (`csvCell`): `-0.5` is a number to a spreadsheet too.
  sentiment_score: sql`pg_temp.export_json(to_jsonb(${callAnalyses.sentimentScore}))`,
  // JSON `null` is read as no value, an empty cell.
  structured_data: textCell(sql`pg_temp.export_json(nullif(${callAnalyses.structuredData}, 'null'::jsonb))`),
};

function textCell(value: SQL): SQL {
  return sql`pg_temp.export_cell(${value})`;
}

function isoTimestamp(value: SQL): SQL {
  return sql`to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * The COPY statement of an export. COPY takes no bind parameters, so the filter's values are
 * written into the text as literals (numbers, an ISO date, a status the route checked) — still the
 * tenant's predicate of `callFilterSql`, through `exportSource`.
 */
export function csvCopyStatement(tenant: Tenant, filter: CallFilter): string {
  const columns = CSV_COLUMNS.map(([header, key]) => sql`${CELLS[key]} as ${sql.identifier(header)}`);
  const select = sql`select ${sql.join(columns, sql`, `)} ${exportSource(tenant, filter)}`;
  const copy = sql`copy (${select}) to stdout with (format csv, header)`;
  return dialect.sqlToQuery(copy.inlineParams()).sql;
}

const QUOTE = 0x22;
const LINE_FEED = 0x0a;
const CRLF = Buffer.from('\r\n');
/** Output is passed on in pieces of about this size, however COPY cut its messages. */
const PIECE_BYTES = 64 * 1024;

/**
 * COPY's CSV with CRLF record ends. A line feed inside a quoted cell is part of the cell: the quotes
 * seen so far decide (a doubled quote inside a cell toggles twice), across chunk boundaries too.
 */
export function crlfRecords(): Transform {
  let quoted = false;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const keep = (piece: Buffer) => {
    pending.push(piece);
    pendingBytes += piece.length;
  };
  const takePending = () => {
    const piece = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    return piece;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let start = 0;
      let nextQuote = chunk.indexOf(QUOTE);
      let nextLineFeed = chunk.indexOf(LINE_FEED);
      while (nextLineFeed !== -1) {
        if (nextQuote !== -1 && nextQuote < nextLineFeed) {
          quoted = !quoted;
          nextQuote = chunk.indexOf(QUOTE, nextQuote + 1);
          continue;
        }
        if (!quoted) {
          keep(chunk.subarray(start, nextLineFeed));
          keep(CRLF);
          start = nextLineFeed + 1;
        }
        nextLineFeed = chunk.indexOf(LINE_FEED, nextLineFeed + 1);
      }
      for (; nextQuote !== -1; nextQuote = chunk.indexOf(QUOTE, nextQuote + 1)) quoted = !quoted;
      if (start < chunk.length) keep(chunk.subarray(start));
      done(null, pendingBytes >= PIECE_BYTES ? takePending() : undefined);
    },
    flush(done) {
      done(null, pendingBytes > 0 ? takePending() : undefined);
    },
  });
}

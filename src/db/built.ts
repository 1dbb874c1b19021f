/**
 * Statements built once. Drizzle turns a query builder into SQL text again on every execution, and
 * on the paths that run for every carrier callback and campaign attempt that costs this process
 * about as much CPU as the database round trip itself: on the 2-core machine, ~170 µs to build a
 * select of the `calls` table against ~200 µs for the whole round trip of `select $1` (see
 * docs/performance.md, "Campaign dispatch"). A statement on such a path is written here once, with
 * `sql.placeholder`s for what varies, built on its first use, and run with each use's values on
 * whichever executor the caller holds — the pool, or a transaction's connection.
 *
 * Tenant isolation stays where it lives (db/tenant.ts): a built statement of an organization-owned
 * table filters with `ownedByPlaceholder(table)`, and `scopedStatement` fills that placeholder from
 * the `Tenant` each use must give. `unscopedStatement` is for the platform-wide lookups that say why
 * they are (a carrier callback finding its call before its signature names the organization).
 *
 * How: Drizzle's prepared query (the builder's `prepare()`) holds the built text and the result's
 * mapping, and runs on the connection it keeps in `client`; each use runs a copy of it whose `client`
 * is the caller's. Both drivers (node-postgres, PGlite) keep their connection so; the whole suite
 * runs every built statement on both, in and out of transactions.
 */
import { getTableColumns, type Table } from 'drizzle-orm';
import type { Executor } from './client.js';
import { ORGANIZATION_PLACEHOLDER, type Tenant } from './tenant.js';

interface Prepared<R> {
  execute(values?: Record<string, unknown>): Promise<R>;
}

/** A Drizzle select, insert, update or delete builder. */
interface Preparable<R> {
  prepare(name?: string): Prepared<R>;
}

type Values = Record<string, unknown>;

function builtOnce<R>(make: (ex: Executor) => Preparable<R>): (ex: Executor, values: Values) => Promise<R> {
  let prepared: Prepared<R> | undefined;
  return (ex, values) => {
    prepared ??= make(ex).prepare();
    const run = Object.create(prepared) as Prepared<R> & { client: unknown };
    run.client = (ex as unknown as { _: { session: { client: unknown } } })._.session.client;
    return run.execute(values);
  };
}

/**
 * A statement of an organization's rows, built once: `make` filters with
 * `ownedByPlaceholder(table)` (db/tenant.ts), and each use gives the Tenant whose rows it concerns.
 */
export function scopedStatement<R, V extends Values = Values>(
  make: (ex: Executor) => Preparable<R>,
): (ex: Executor, tenant: Tenant, values: V) => Promise<R> {
  const run = builtOnce(make);
  return (ex, tenant, values) => run(ex, { ...values, [ORGANIZATION_PLACEHOLDER]: tenant.organizationId });
}

/** A platform-wide statement, built once; the caller says why it may read across organizations. */
export function unscopedStatement<R, V extends Values = Values>(
  make: (ex: Executor) => Preparable<R>,
): (ex: Executor, values: V) => Promise<R> {
  return builtOnce(make);
}

/**
 * A row of `table` as Drizzle's own queries give it (property names, dates, JSON), from the raw row
 * of a statement written as SQL — one that chains writes in a WITH, which Drizzle's builders cannot
 * say — run through `ex.execute`, where both drivers leave values as the database sent them.
 */
export function rowOf<T extends Table>(table: T, raw: Record<string, unknown>): T['$inferSelect'] {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as T['$inferSelect'];
}

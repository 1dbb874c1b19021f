/**
 * One factory for the database: embedded PostgreSQL (PGlite) under DATA_DIR, or a `pg` pool for
 * DATABASE_URL. Both give the same Drizzle API over the same schema, a raw `executeSql` for pg-boss
 * and operations, and LISTEN/NOTIFY for telling other processes of a cluster that something changed.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import * as schema from './schema/index.js';

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Anything a store can run queries on: the database itself or an open transaction. */
export type Executor = Db | Tx;

export interface SqlResult {
  rows: Record<string, unknown>[];
}

export interface Database {
  readonly kind: 'embedded' | 'server';
  readonly db: Db;
  /** Raw SQL. Without values a text may hold several statements. */
  executeSql(text: string, values?: unknown[]): Promise<SqlResult>;
  /** Calls `handler` with the payload of every NOTIFY on `channel`, from any process. */
  listen(channel: string, handler: (payload: string) => void): Promise<void>;
  notify(channel: string, payload: string): Promise<void>;
  /**
   * The rows of one query, read through a database cursor `batchSize` at a time, so memory holds one
   * batch however many rows there are. Stopping early (a `break`, a closed download) closes the
   * cursor. See `openServer` and `wrapPglite` for how each kind keeps other work going meanwhile.
   */
  cursor(
    query: { sql: string; params: unknown[] },
    batchSize: number,
  ): AsyncGenerator<Record<string, unknown>[]>;
  /**
   * Server only (`COPY` over the wire does not exist on the embedded database): the output of one
   * `COPY (…) TO STDOUT` statement on a connection of its own, once its first bytes arrived (so a
   * failing statement rejects here rather than truncating a download). The connection goes back to
   * the pool when the stream ends; destroyed early, it is closed instead (it is mid-COPY), which
   * ends the statement on the server. `setup` runs first on the same connection (temporary functions).
   */
  copyOut?(statement: string, setup?: string): Promise<Readable>;
  /**
   * Server only, as `copyOut`: feeds `chunks` (COPY text, whole lines) to one `COPY … FROM STDIN`
   * statement on the connection of the open transaction `tx`, so the rows land inside it. Writes
   * wait for the socket when it is full, so the source is read no faster than the server takes it.
   * A source that fails (a file found broken half-way) aborts the COPY and rethrows; the failure the
   * server answers rejects likewise. Answers the rows copied.
   */
  copyIn?(tx: Tx, statement: string, chunks: AsyncIterable<string> | Iterable<string>): Promise<number>;
  /** Runs `work` while holding a session-level advisory lock (cluster-wide on a server). */
  withAdvisoryLock<T>(lockId: number, work: () => Promise<T>): Promise<T>;
  /** Embedded only: the whole data directory as a tarball (test templates are cloned from it). */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

/** pgvector, for knowledge-base retrieval (the migration creates it where it is available). */
const EXTENSIONS = { vector };

export type DatabaseTarget =
  | { kind: 'embedded'; dataDir: string }
  | { kind: 'memory'; loadDataDir?: Blob }
  | { kind: 'server'; url: string; poolSize: number };

// Both drivers must hand back the same JS types: `int8` and `numeric` as strings would leak into
// responses differently per driver, so counts are cast to int in SQL and money read as numbers.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.kind === 'server') return openServer(target.url, target.poolSize);
  if (target.kind === 'memory')
    return wrapPglite(await PGlite.create({ loadDataDir: target.loadDataDir, extensions: EXTENSIONS }));
  const dataDir = path.join(target.dataDir, 'pgdata');
  mkdirSync(dataDir, { recursive: true });
  return wrapPglite(await PGlite.create({ dataDir, extensions: EXTENSIONS }), 'embedded');
}

function wrapPglite(client: PGlite, kind: 'embedded' = 'embedded'): Database {
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    kind,
    db,
    async executeSql(text, values) {
      if (!values || values.length === 0) {
        const results = await client.exec(text);
        return { rows: (results.at(-1)?.rows ?? []) as Record<string, unknown>[] };
      }
      const result = await client.query<Record<string, unknown>>(text, values);
      return { rows: result.rows };
    },
    async listen(channel, handler) {
      await client.listen(channel, handler);
    },
    async notify(channel, payload) {
      await client.query('select pg_notify($1, $2)', [channel, payload]);
    },
    // The embedded database has one session that every request shares, so the cursor cannot live in
    // a transaction (that would hold the session for the whole download): it is declared WITH HOLD,
    // which makes PostgreSQL keep the result (spilling to temporary files past work_mem), and each
    // batch is fetched between other requests' queries.
    async *cursor(query, batchSize) {
      const name = cursorName();
      await client.query(`declare ${name} no scroll cursor with hold for ${query.sql}`, query.params);
      try {
        yield* fetchBatches((text) => client.query<Record<string, unknown>>(text), name, batchSize);
      } finally {
        await client.query(`close ${name}`).catch(() => {});
      }
    },
    // One process owns an embedded database (see embedded-lock.ts), so there is nobody to exclude.
    withAdvisoryLock: (_lockId, work) => work(),
    dumpDataDir: async () => (await client.dumpDataDir('none')) as Blob,
    async close() {
      if (!client.closed) await client.close();
    },
  };
}

function openServer(url: string, poolSize: number): Database {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its connection emits here; without a listener the process would crash.
  pool.on('error', () => {});
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  let listener: pg.Client | undefined;
  const handlers = new Map<string, Array<(payload: string) => void>>();

  async function connectListener(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {
      // Reconnect and re-subscribe; a notification sent while disconnected is lost, which callers
      // tolerate (their caches also expire on their own).
      listener = undefined;
      setTimeout(() => void ensureListener().catch(() => {}), 1000).unref();
    });
    client.on('notification', (message) => {
      for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    await client.connect();
    for (const channel of handlers.keys()) await client.query(`LISTEN "${channel}"`);
    return client;
  }
  async function ensureListener(): Promise<pg.Client> {
    listener ??= await connectListener();
    return listener;
  }

  return {
    kind: 'server',
    db,
    async executeSql(text, values) {
      const result = await pool.query(text, values && values.length > 0 ? values : undefined);
      // A multi-statement text answers an array of results; the last one is the answer.
      const last = Array.isArray(result) ? result.at(-1) : result;
      return { rows: (last?.rows ?? []) as Record<string, unknown>[] };
    },
    async listen(channel, handler) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`Invalid channel name ${channel}`);
      const known = handlers.get(channel);
      if (known) {
        known.push(handler);
        return;
      }
      handlers.set(channel, [handler]);
      const client = await ensureListener();
      await client.query(`LISTEN "${channel}"`);
    },
    async notify(channel, payload) {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    // A connection of its own, in a read-only repeatable-read transaction: one snapshot for the whole
    // read, and the rest of the pool stays free for other requests.
    async *cursor(query, batchSize) {
      const client = await pool.connect();
      let healthy = true;
      try {
        await client.query('begin isolation level repeatable read read only');
        try {
          const name = cursorName();
          await client.query(`declare ${name} no scroll cursor for ${query.sql}`, query.params);
          yield* fetchBatches((text) => client.query(text), name, batchSize);
        } finally {
          await client.query('rollback').catch(() => {
            healthy = false;
          });
        }
      } finally {
        // A connection whose transaction could not be ended is not handed to anyone else.
        client.release(healthy ? undefined : true);
      }
    },
    async copyOut(statement, setup) {
      const client = await pool.connect();
      let released = false;
      const release = (closeConnection: boolean) => {
        if (released) return;
        released = true;
        client.release(closeConnection || undefined);
      };
      try {
        if (setup) await client.query(setup);
      } catch (error) {
        release(false);
        throw error;
      }
      const stream = client.query(copyStreams.to(statement));
      // Given up mid-COPY: the server is blocked writing to a socket nobody reads, and reads nothing
      // (a Terminate message included) until it can write, so only closing the socket ends the
      // statement. The pool ends the client first, which makes the closed socket expected.
      const abandon = () => {
        if (released) return;
        release(true);
        (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      };
      stream.on('end', () => release(false));
      stream.on('error', abandon);
      stream.on('close', () => {
        if (!stream.readableEnded) abandon();
      });
      // The first chunk (the header at least) or the statement's error, before anyone is answered;
      // the chunk goes back into the stream, which stays paused until its reader pipes it.
      const first = await new Promise<Error | undefined>((resolve) => {
        const settle = (error?: Error) => {
          stream.off('data', onData).off('end', onEnd).off('error', onError);
          resolve(error);
        };
        const onData = (chunk: Buffer) => {
          stream.pause();
          stream.unshift(chunk);
          settle();
        };
        const onEnd = () => settle();
        const onError = (error: Error) => settle(error);
        stream.on('data', onData).on('end', onEnd).on('error', onError);
      });
      if (first) {
        stream.destroy();
        throw first;
      }
      return stream;
    },
    async copyIn(tx, statement, chunks) {
      const stream = connectionOf(tx).query(copyStreams.from(statement));
      // Settles when the server has answered: the COPY done, or refused (its error kept). Listening
      // from the start also keeps an error that comes between two writes from going unheard.
      let refused: Error | undefined;
      const answered = new Promise<void>((resolve) => {
        stream.once('finish', resolve);
        stream.once('error', (error) => {
          refused = error;
          resolve();
        });
      });
      try {
        for await (const chunk of chunks) {
          if (refused) throw refused;
          if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), answered]);
          // A socket that keeps taking the writes emits 'drain' without the event loop reading
          // anything: give it a turn, so that a refusal the server sent meanwhile is heard.
          else await new Promise((resolve) => setImmediate(resolve));
          if (refused) throw refused;
        }
      } catch (error) {
        // The source failed: CopyFail takes the connection out of COPY mode (the server answers it
        // with an error, awaited here) before the caller's transaction rolls back. After the
        // server's own refusal the connection is out already, and the stream must not be touched.
        if (!refused) {
          stream.destroy();
          await answered;
        }
        throw error;
      }
      stream.end();
      await answered;
      if (refused) throw refused;
      return stream.rowCount;
    },
    async withAdvisoryLock(lockId, work) {
      const client = await pool.connect();
      try {
        await client.query('select pg_advisory_lock($1)', [lockId]);
        try {
          return await work();
        } finally {
          await client.query('select pg_advisory_unlock($1)', [lockId]);
        }
      } finally {
        client.release();
      }
    },
    async close() {
      const client = listener;
      listener = undefined;
      client?.removeAllListeners('error');
      await client?.end().catch(() => {});
      await pool.end();
    },
  };
}

/** The connection a server transaction runs on (Drizzle's node-postgres session holds it). */
function connectionOf(tx: Tx): pg.ClientBase {
  const client = (tx as unknown as { session?: { client?: unknown } }).session?.client;
  if (!(client instanceof pg.Client)) throw new Error('Not a transaction of a PostgreSQL server');
  return client;
}

function cursorName(): string {
  return `cursor_${randomUUID().replace(/-/g, '')}`;
}

async function* fetchBatches(
  run: (text: string) => Promise<{ rows: Record<string, unknown>[] }>,
  name: string,
  batchSize: number,
): AsyncGenerator<Record<string, unknown>[]> {
  for (;;) {
    const { rows } = await run(`fetch forward ${Math.max(1, Math.floor(batchSize))} from ${name}`);
    if (rows.length > 0) yield rows;
    if (rows.length < batchSize) return;
  }
}

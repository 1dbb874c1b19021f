/**
 * `Database.copyIn`: `COPY … FROM STDIN` on the connection of an open transaction (db/client.ts).
 * On a server: many chunks arrive inside the transaction, escaped text intact; a source that fails
 * half-way aborts the COPY and its error is the one answered; a row the server refuses half-way
 * answers the server's error while the source is still producing; after either, the pool's
 * connections run queries as before. The embedded database has no COPY over the wire, and no copyIn.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Tx } from '../src/db/client.js';
import { databaseErrorOf } from '../src/db/errors.js';
import { openTestDatabase } from './support/harness.js';

let database: Database;
let drop: () => Promise<void>;
beforeAll(async () => {
  ({ database, drop } = await openTestDatabase());
});
afterAll(async () => {
  await database?.close();
  await drop?.();
});

const TABLE = 'create temp table copied (n int not null check (n >= 0), label text) on commit drop';
const COPY = 'copy copied (n, label) from stdin';

/** `chunks` chunks of 1,000 lines each (numbers from 0), a line's label `label`. */
async function* lines(
  chunks: number,
  label = 'row\\twith a tab',
  failAfter?: number,
): AsyncGenerator<string> {
  for (let chunk = 0; chunk < chunks; chunk++) {
    if (chunk === failAfter) throw new Error('the source broke');
    let text = '';
    for (let i = chunk * 1000; i < (chunk + 1) * 1000; i++) text += `${i}\t${label} ${i}\n`;
    yield text;
  }
}

async function count(tx: Tx): Promise<number> {
  const result = (await tx.execute(sql`select count(*)::int as n from copied`)) as unknown as {
    rows: Array<{ n: number }>;
  };
  return result.rows[0]!.n;
}

/** Every connection of the pool (five) answers a query: none was left mid-COPY. */
async function poolIsHealthy(): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => database.executeSql('select pg_sleep(0.05), 1 as one')),
  );
  expect(answers.map((answer) => answer.rows[0]?.one)).toEqual([1, 1, 1, 1, 1]);
}

describe('Database.copyIn', () => {
  it('exists on a server only', () => {
    expect(database.copyIn === undefined).toBe(database.kind === 'embedded');
  });

  it('copies many chunks into the open transaction, escaped text intact', async () => {
    if (!database.copyIn) return expect(database.kind).toBe('embedded');
    const copyIn = database.copyIn;
    // 300 chunks, about 8 MB: far more than the socket's buffers, so writes wait for the server.
    const { copied, inside, label } = await database.db.transaction(async (tx) => {
      await tx.execute(sql.raw(TABLE));
      const copied = await copyIn(tx, COPY, lines(300));
      const [row] = (
        (await tx.execute(sql`select label from copied where n = 123456`)) as unknown as {
          rows: Array<{ label: string }>;
        }
      ).rows;
      return { copied, inside: await count(tx), label: row?.label };
    });
    expect({ copied, inside, label }).toEqual({
      copied: 300_000,
      inside: 300_000,
      label: 'row\twith a tab 123456',
    });
    // An array of chunks is a source as well.
    const fromArray = await database.db.transaction(async (tx) => {
      await tx.execute(sql.raw(TABLE));
      return copyIn(tx, COPY, ['1\tone\n', '2\ttwo\n']);
    });
    expect(fromArray).toBe(2);
    await poolIsHealthy();
  });

  it('aborts the COPY when the source fails half-way, answering the source error', async () => {
    if (!database.copyIn) return expect(database.kind).toBe('embedded');
    const copyIn = database.copyIn;
    const failed = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql.raw(TABLE));
        await copyIn(tx, COPY, lines(50, 'fine', 20));
      })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toBe('the source broke');
    await poolIsHealthy();
  });

  it("answers the server's refusal of a row while the source is still producing", async () => {
    if (!database.copyIn) return expect(database.kind).toBe('embedded');
    const copyIn = database.copyIn;
    // About 80 MB, far more than the socket's buffers: written as the server takes it, the source is
    // still far from its end when the server refuses the 78th chunk's first row (a negative number).
    let produced = 0;
    async function* counted() {
      for await (const chunk of lines(3000)) {
        produced += 1;
        yield produced === 78 ? `-1\trefused\n${chunk}` : chunk;
      }
    }
    const refused = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql.raw(TABLE));
        await copyIn(tx, COPY, counted());
      })
      .catch((error: unknown) => error);
    expect(databaseErrorOf(refused)?.code).toBe('23514');
    // The source was not read to its end once the server had refused.
    expect(produced).toBeGreaterThanOrEqual(78);
    expect(produced).toBeLessThan(3000);
    await poolIsHealthy();
  });
});

/**
 * Logs never hold a statement's values (issue 14 item 5). A database error — Drizzle's wrapper, whose
 * message is the statement followed by every parameter, and the driver's error under it, whose
 * message and detail quote values — is logged, and stored on a failed job, as its SQLSTATE and the
 * places it names (table, constraint, column), with the request id of the request it failed in.
 * The test harness also refuses, for every test file, any log line that holds a failed statement.
 */
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertUser } from '../src/domains/identity/store.js';
import { installErrorHandling } from '../src/http/errors.js';
import { loggerOptions } from '../src/http/logging.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const SECRET = 'scrypt$16384$8$1$c2FsdA$this-is-a-password-hash';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false });
});
afterAll(async () => {
  await t.close();
});

/** The error a real statement fails with on this test's database. */
async function failure(statement: () => Promise<unknown>): Promise<Error> {
  try {
    await statement();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the statement did not fail');
}

const linesAfter = (mark: number) => t.logs.slice(mark).join('\n');

describe('a database error in a log line', () => {
  it('a unique violation: SQLSTATE, table and constraint; not the email or the password hash', async () => {
    const email = `leak.${Date.now()}@example.test`;
    await insertUser(t.database.db, { email, passwordHash: null, firstName: '', lastName: '' });
    const error = await failure(() =>
      t.database.db.execute(
        sql`insert into users (email, password_hash, first_name, last_name) values (${email}, ${SECRET}, '', '')`,
      ),
    );
    // The raw error does hold both (this is what used to be logged).
    expect(`${error.message} ${String((error.cause as { detail?: string })?.detail)}`).toContain(SECRET);
    const mark = t.logs.length;
    t.platform.app.log.error({ err: error }, 'unhandled error');
    const logged = linesAfter(mark);
    expect(logged).not.toContain(SECRET);
    expect(logged).not.toContain(email);
    const line = JSON.parse(logged) as { err: Record<string, string> };
    expect(line.err).toMatchObject({
      type: 'DatabaseError',
      sqlstate: '23505',
      table: 'users',
      constraint: expect.stringContaining('email'),
    });
    expect(line.err.stack).toMatch(/^\s+at /);
  });

  it('a malformed value: SQLSTATE only, not the value the message quotes', async () => {
    const error = await failure(() => t.database.db.execute(sql`select ${SECRET}::integer`));
    const mark = t.logs.length;
    t.platform.app.log.warn({ err: error }, 'failed');
    expect(linesAfter(mark)).not.toContain('this-is-a-password-hash');
    expect(JSON.parse(linesAfter(mark)).err.sqlstate).toBe('22P02');
  });

  it('other errors keep their message', () => {
    const mark = t.logs.length;
    t.platform.app.log.error({ err: new Error('carrier answered 503') }, 'failed');
    expect(JSON.parse(linesAfter(mark)).err.message).toBe('carrier answered 503');
  });

  it('a request that fails in the database is answered 422 and logged with its request id', async () => {
    // A value no request schema bounds, failing its statement: the class-22 backstop of errorAnswer.
    // (A small app with the platform's logger options and error handling; routes cannot be added to
    // the platform's app once it is ready.)
    const lines: string[] = [];
    const logger: FastifyBaseLogger = pino(
      loggerOptions('info') as object,
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const app = Fastify({ loggerInstance: logger });
    installErrorHandling(app);
    app.get('/data-exception', async () => {
      await t.database.db.execute(sql`select ${SECRET}::integer`);
      return {};
    });
    const response = await app.inject({ method: 'GET', url: '/data-exception' });
    await app.close();
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0]).toMatchObject({ loc: ['query'], type: 'value_error' });
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.err);
    expect(line.err.sqlstate).toBe('22P02');
    expect(line.reqId).toBeTruthy();
    expect(lines.join('\n')).not.toContain('this-is-a-password-hash');
  });
});

describe('a database error on a failed job', () => {
  it('is stored as its facts, not the statement values', async () => {
    await t.platform.queue.work('mail.send', async () => {
      await t.database.db.execute(sql`select ${SECRET}::integer`);
    });
    await t.platform.queue.enqueue('mail.send', { sealed_message: 'not sealed' });
    const output = await waitFor(async () => {
      const { rows } = await t.database.executeSql(
        `select output from pgboss.job where name = 'mail.send' and output is not null`,
      );
      return rows[0]?.output as Record<string, unknown> | undefined;
    }, 15_000);
    expect(JSON.stringify(output)).not.toContain('this-is-a-password-hash');
    expect(String(output.message)).toContain('sqlstate=22P02');
  });
});

/**
 * The job queue on the platform's own database: jobs commit or roll back with the transaction that
 * enqueued them, a job waits for a worker that starts later, an enqueued job wakes the workers at
 * once (on a server database those of every process on it: queue/cluster-wake.ts), and a stop
 * drains the running job before the database closes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Database, openDatabase } from '../src/db/client.js';
import { JobQueue } from '../src/queue/queue.js';
import { SmtpSimulator } from '../src/sim/smtp.js';
import { uniqueEmail } from './support/factories.js';
import { openTestDatabase, startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

describe('enqueueing inside a transaction', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform({}, { workers: false });
  });
  afterAll(() => t.close());

  const message = (to: string) => ({
    sealed_message: t.platform.secrets.sealJson({ to, subject: 'Hi', text: 'x' }),
  });

  it('drops the job when the transaction rolls back', async () => {
    const before = await t.platform.queue.counts('mail.send');
    await expect(
      t.platform.queue.transaction(async (_tx, jobs) => {
        await jobs.enqueue('mail.send', message('rolled.back@example.test'));
        throw new Error('abort the transaction');
      }),
    ).rejects.toThrow('abort the transaction');
    expect(await t.platform.queue.counts('mail.send')).toEqual(before);
  });

  it('keeps the job when the transaction commits, and a worker started later runs it', async () => {
    await t.platform.queue.transaction(async (_tx, jobs) => {
      await jobs.enqueue('mail.send', message('committed@example.test'));
    });
    expect((await t.platform.queue.counts('mail.send')).created).toBe(1);
    expect(t.mails()).toHaveLength(0);

    await t.platform.startWorkers();
    const mail = await waitFor(() => t.mails().find((m) => m.to === 'committed@example.test'));
    expect(mail.subject).toBe('Hi');
    await waitFor(async () => (await t.platform.queue.counts('mail.send')).completed === 1);
  });

  it('sends no mail for a registration that fails (the mail job rolls back with it)', async () => {
    const email = uniqueEmail('dup');
    const payload = { email, password: 'long enough', first_name: 'A', last_name: 'B' };
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/register', payload })).statusCode).toBe(
      201,
    );
    await waitFor(() => t.mails().find((m) => m.to === email));
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/register', payload })).statusCode).toBe(
      409,
    );
    await new Promise((resolve) => setTimeout(resolve, 700)); // longer than a worker poll
    expect(t.mails().filter((m) => m.to === email)).toHaveLength(1);
  });
});

describe('an enqueued job wakes the workers at once, not at their next poll', () => {
  // Polls a minute apart: a job run within seconds was woken, not found by a poll.
  const slowPolls = { pollingIntervalSeconds: 60 };
  const quiet = { error: () => {}, warn: () => {} };
  const onServer = inject('template').kind === 'server';
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  /** A second process's connection to the same database (server only). */
  let second: Database | undefined;
  const queues: JobQueue[] = [];
  const startQueue = async (database: Database) => {
    const queue = new JobQueue(database, quiet, slowPolls);
    await queue.start();
    queues.push(queue);
    return queue;
  };
  /** A queue whose `mail.send` workers note each job they run; nothing is mailed. */
  const recordingQueue = async (database: Database, ran: string[]) => {
    const queue = await startQueue(database);
    await queue.work('mail.send', async (payload) => void ran.push(payload.sealed_message), 2);
    return queue;
  };

  beforeAll(async () => {
    opened = await openTestDatabase();
    if (opened.url) second = await openDatabase({ kind: 'server', url: opened.url, poolSize: 3 });
  });
  afterAll(async () => {
    for (const queue of queues) await queue.stop(5_000);
    await second?.close();
    await opened.database.close();
    await opened.drop();
  });
  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.stop(5_000);
  });

  it('runs a job enqueued in a transaction, and one enqueued alone, within seconds', async () => {
    const ran: string[] = [];
    const queue = await recordingQueue(opened.database, ran);
    // The workers' first fetch finds nothing; from then on only a wake-up brings them back early.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await queue.transaction(async (_tx, jobs) => {
      await jobs.enqueue('mail.send', { sealed_message: 'in a transaction' });
    });
    await waitFor(() => ran.includes('in a transaction'), 5_000);
    await queue.enqueue('mail.send', { sealed_message: 'alone' });
    await waitFor(() => ran.includes('alone'), 5_000);
    // A job due later wakes nobody and is not run early.
    await queue.enqueue('mail.send', { sealed_message: 'later' }, { startAfterSeconds: 30 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(ran).toEqual(['in a transaction', 'alone']);
  });

  /** A queue whose `mail.send` workers (4) each take 300 ms a job and note the most running at once. */
  const slowQueue = async (database: Database, ran: string[], most: { now: number; max: number }) => {
    const queue = await startQueue(database);
    await queue.work(
      'mail.send',
      async (payload) => {
        most.now += 1;
        most.max = Math.max(most.max, most.now);
        await new Promise((resolve) => setTimeout(resolve, 300));
        most.now -= 1;
        ran.push(payload.sealed_message);
      },
      4,
    );
    return queue;
  };

  it('puts idle workers on a backlog, not only the one a commit woke', async () => {
    const ran: string[] = [];
    const most = { now: 0, max: 0 };
    const queue = await slowQueue(opened.database, ran, most);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Twelve jobs in one transaction: one wake-up (one notification on a server), one worker woken.
    await queue.transaction(async (_tx, jobs) => {
      for (let i = 0; i < 12; i++) await jobs.enqueue('mail.send', { sealed_message: `job ${i}` });
    });
    await waitFor(() => ran.length === 12, 10_000);
    expect(new Set(ran).size).toBe(12);
    // The job the first worker took second had waited its first job's 300 ms: it woke another,
    // and so on — with polls a minute apart, one worker alone would have run them one by one.
    expect(most.max).toBeGreaterThan(1);
  });

  if (onServer) {
    it('on a server, lets another process join a backlog that one process began', async () => {
      const here: string[] = [];
      const there: string[] = [];
      const mostHere = { now: 0, max: 0 };
      const mostThere = { now: 0, max: 0 };
      const enqueuer = await slowQueue(opened.database, here, mostHere);
      await slowQueue(second!, there, mostThere);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await enqueuer.transaction(async (_tx, jobs) => {
        for (let i = 0; i < 24; i++) await jobs.enqueue('mail.send', { sealed_message: `job ${i}` });
      });
      await waitFor(() => here.length + there.length === 24, 10_000);
      expect(new Set([...here, ...there]).size).toBe(24);
      // Each process had more than the one worker its notification woke on the backlog.
      expect(mostHere.max).toBeGreaterThan(1);
      expect(mostThere.max).toBeGreaterThan(1);
    });

    it('on a server, wakes the workers of another process on the same database', async () => {
      const ran: string[] = [];
      const enqueuer = await startQueue(opened.database); // no workers here
      await recordingQueue(second!, ran);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await enqueuer.transaction(async (_tx, jobs) => {
        await jobs.enqueue('mail.send', { sealed_message: 'for the other process' });
      });
      await waitFor(() => ran.includes('for the other process'), 5_000);
      // Rolled back: no job, and no wake-up for one.
      await expect(
        enqueuer.transaction(async (_tx, jobs) => {
          await jobs.enqueue('mail.send', { sealed_message: 'rolled back' });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(ran).toEqual(['for the other process']);
    });

    it('on a server, lets both processes take the jobs one of them enqueues', async () => {
      const here: string[] = [];
      const there: string[] = [];
      const enqueuer = await recordingQueue(opened.database, here);
      await recordingQueue(second!, there);
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (let i = 0; i < 40; i++) {
        await enqueuer.transaction(async (_tx, jobs) => {
          await jobs.enqueue('mail.send', { sealed_message: `job ${i}` });
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await waitFor(() => here.length + there.length === 40, 10_000);
      // Each job once; the process that enqueued them did not keep them all (it used to, waking
      // its own workers while the other's found jobs only at their poll, a minute apart here).
      expect(new Set([...here, ...there]).size).toBe(40);
      expect(here.length).toBeGreaterThan(0);
      expect(there.length).toBeGreaterThan(0);
    });
  }
});

describe('stopping drains running jobs before the database closes', () => {
  let smtp: SmtpSimulator;
  afterEach(() => smtp.stop());

  it('finishes delivering a mail that is in flight when stop is called', async () => {
    smtp = new SmtpSimulator({ acceptDelayMs: 1500 });
    const port = await smtp.start();
    const t = await startTestPlatform({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    const inFlight = new Promise<void>((resolve) => {
      smtp.onData = () => resolve();
    });
    const email = uniqueEmail('drain');
    const register = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { email, password: 'long enough', first_name: 'D', last_name: 'R' },
    });
    expect(register.statusCode).toBe(201);
    await inFlight; // the worker is now waiting for the slow server's reply
    expect(smtp.received).toHaveLength(0);

    await t.close();
    // stop() returned only after the delivery finished.
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]?.to).toEqual([email]);
    expect(smtp.received[0]?.data).toMatch(/verify-email/);
  });
});

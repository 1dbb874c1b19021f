/**
 * The job queue on the platform's own database: jobs commit or roll back with the transaction that
 * enqueued them, a job waits for a worker that starts later, and a stop drains the running job
 * before the database closes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SmtpSimulator } from '../src/sim/smtp.js';
import { uniqueEmail } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

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

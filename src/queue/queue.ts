/**
 * The job queue: pg-boss on the platform's own database (both drivers), so a job enqueued inside a
 * service's transaction exists exactly when that transaction commits. Workers are woken once it has
 * committed instead of waiting for their next poll: on a server database those of every process, by
 * a notification (cluster-wake.ts), on the embedded one this process's own. A worker that finds a job
 * that waited wakes an idle one beside it (BEHIND_MS), so that a backlog gets every process's idle
 * workers.
 */

import { type SQL, sql } from 'drizzle-orm';
import PgBoss from 'pg-boss';
import type { Database, Tx } from '../db/client.js';
import { withoutValues } from '../db/errors.js';
import { retryOnConflict } from '../db/retry.js';
import { installJobWake, JOBS_CHANNEL } from './cluster-wake.js';
import { type JobName, type JobPayloads, jobPolicies } from './jobs.js';
import type { JobObserver } from './metrics.js';

export interface JobLogger {
  error(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export interface EnqueueOptions {
  /** Run no earlier than this many seconds from now. */
  startAfterSeconds?: number;
  /** At most one queued job per key (pg-boss singleton key). */
  singletonKey?: string;
}

/** What a transaction body receives to enqueue jobs that commit with it. */
export interface JobEnqueuer {
  enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options?: EnqueueOptions): Promise<void>;
}

export type JobHandler<N extends JobName> = (
  payload: JobPayloads[N],
  job: { id: string; retryCount: number },
) => Promise<void>;

/**
 * pg-boss speaks SQL text with `$n` placeholders; Drizzle transactions take `SQL` objects. This turns
 * one into the other so pg-boss can insert its job row on the transaction's own connection.
 */
function textToSql(text: string, values: unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  return sql.join(
    parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql`${values[Number(part) - 1] ?? null}`)),
  );
}

/** The driver connection under a Drizzle transaction (PGlite's transaction, or node-postgres's client). */
interface RawClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

function transactionDb(tx: Tx): PgBoss.Db {
  // pg-boss's insert has CASE branches that CAST its start_after parameter to timestamptz or to an
  // interval; through Drizzle's typed parameters PostgreSQL folds the branch not taken and fails
  // ("invalid input syntax … 86400"). The driver's own query, like the non-transaction path, does not.
  const raw = (tx as unknown as { session?: { client?: RawClient } }).session?.client;
  return {
    async executeSql(text, values) {
      if (raw && typeof raw.query === 'function' && values && values.length > 0) {
        const result = await raw.query(text, values);
        return { rows: result.rows };
      }
      const result = (await tx.execute(textToSql(text, values ?? []))) as unknown as { rows: unknown[] };
      return { rows: result.rows };
    },
  };
}

/** One pg-boss worker of this process (see `work`). */
interface Worker {
  id: string | undefined;
  /** Running a job now. */
  busy: boolean;
}

/**
 * A job that was due this long before a worker took it shows that the queue is behind: a job is
 * normally taken within milliseconds of its commit, each process's idle workers being woken then
 * (cluster-wake.ts). One notification wakes one worker per process, though — a transaction that
 * enqueues many jobs of a name notifies once — and a worker that found a job looks for the next one
 * as soon as it ends; so without more, a process keeps as many workers on a backlog as it had when
 * the backlog began, and a second process that joined late (or an idle one whose worker was woken
 * once) leaves the backlog to the busy one. A worker that takes a job that waited longer than this
 * wakes another idle worker of its process, which wakes the next if its job waited too, until the
 * backlog is met or the workers are all busy. Longer than a busy process's usual delay (a throttled
 * one can pause for most of 100 ms), so that a queue that keeps up does not fetch twice per job.
 */
const BEHIND_MS = 200;

/** Whether the job waited longer than BEHIND_MS between being due and being taken. */
function waitedLong(job: { startAfter?: Date | string; startedOn?: Date | string }): boolean {
  if (job.startAfter === undefined || job.startedOn === undefined) return false;
  return new Date(job.startedOn).getTime() - new Date(job.startAfter).getTime() > BEHIND_MS;
}

export class JobQueue {
  readonly #boss: PgBoss;
  /** This process's workers of each job: pg-boss's id for each, and whether it runs a job now. */
  readonly #workers = new Map<JobName, Worker[]>();
  /** pg-boss's own queries still running; `stop` waits for them before the database may close. */
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Work handlers started that goes on after they returned (see `track`). */
  readonly #tracked = new Set<Promise<unknown>>();
  /** Where the search for an idle worker of each job starts next (so that they take turns). */
  readonly #wakeTurn = new Map<JobName, number>();
  /** Workers are woken by the job table's notifications (server database), not after each commit. */
  #wokenByNotifications = false;
  #started = false;

  constructor(
    private readonly database: Database,
    private readonly log: JobLogger,
    private readonly options: {
      pollingIntervalSeconds: number;
      /** Told of each run that ended (queue/metrics.ts). */
      observe?: JobObserver;
    } = { pollingIntervalSeconds: 2 },
  ) {
    this.#boss = new PgBoss({
      db: {
        executeSql: (text, values) => {
          const query = database.executeSql(text, values);
          this.#inFlight.add(query);
          const forget = () => this.#inFlight.delete(query);
          query.then(forget, forget);
          return query;
        },
      },
      // Maintenance (expiry, archiving) runs on the same database; keep completed jobs a week.
      archiveCompletedAfterSeconds: 60 * 60,
      deleteAfterDays: 7,
      // Expired jobs (their process died) are found by maintenance: every 30 s rather than 2 min.
      maintenanceIntervalSeconds: 30,
    });
    this.#boss.on('error', (error) => this.log.error({ err: error }, 'job queue error'));
  }

  /** Installs pg-boss's schema if needed and creates one queue per known job. */
  async start(): Promise<void> {
    await this.#boss.start();
    this.#started = true;
    for (const name of Object.keys(jobPolicies) as JobName[]) {
      const policy = jobPolicies[name];
      // The policy is given to updateQueue too: pg-boss 10's updateQueue sets it to `standard`
      // when it is left out, which turned every `short` queue standard at the second start.
      const queue = {
        name,
        retryLimit: policy.retryLimit,
        retryDelay: policy.retryDelay,
        retryBackoff: policy.retryBackoff,
        expireInSeconds: policy.expireInSeconds,
        policy: policy.policy ?? 'standard',
      };
      if (await this.#boss.getQueue(name)) await this.#boss.updateQueue(name, queue);
      else await this.#boss.createQueue(name, queue);
    }
    if (this.database.kind === 'server') {
      await installJobWake(this.database);
      await this.database.listen(JOBS_CHANNEL, (name) => {
        if (Object.hasOwn(jobPolicies, name)) this.#wakeOne(name as JobName);
      });
      this.#wokenByNotifications = true;
    }
  }

  /**
   * Runs `body` in a database transaction; jobs it enqueues are committed (or rolled back) with it,
   * and their workers are woken once it has committed.
   */
  async transaction<T>(body: (tx: Tx, jobs: JobEnqueuer) => Promise<T>): Promise<T> {
    const enqueued = new Set<JobName>();
    const result = await this.database.db.transaction((tx) =>
      body(tx, {
        enqueue: async (name, payload, options) => {
          await this.#send(name, payload, options, transactionDb(tx));
          enqueued.add(name);
        },
      }),
    );
    for (const name of enqueued) this.wake(name);
    return result;
  }

  /**
   * `transaction`, run again (a new transaction, `body` called afresh) when PostgreSQL aborts it
   * for a deadlock or a serialization failure — see `retryOnConflict` in db/retry.ts. For bodies
   * that only touch the database and enqueue jobs: nothing of an aborted run survives, its jobs
   * included, and workers are woken only for the run that committed.
   */
  retryingTransaction<T>(body: (tx: Tx, jobs: JobEnqueuer) => Promise<T>): Promise<T> {
    return retryOnConflict(() => this.transaction(body), {
      onRetry: (error, attempt) =>
        this.log.warn({ err: error, attempt }, 'transaction aborted by a lock conflict; running it again'),
    });
  }

  /** Enqueues outside any transaction. */
  async enqueue<N extends JobName>(
    name: N,
    payload: JobPayloads[N],
    options?: EnqueueOptions,
  ): Promise<void> {
    await this.#send(name, payload, options);
    this.wake(name);
  }

  async #send<N extends JobName>(
    name: N,
    payload: JobPayloads[N],
    options: EnqueueOptions = {},
    db?: PgBoss.Db,
  ): Promise<void> {
    await this.#boss.send(name, payload as object, {
      ...(db ? { db } : {}),
      ...(options.startAfterSeconds ? { startAfter: options.startAfterSeconds } : {}),
      ...(options.singletonKey ? { singletonKey: options.singletonKey } : {}),
    });
  }

  /** Registers the handler of one job in this process. A thrown error fails the attempt (retried per policy). */
  async work<N extends JobName>(name: N, handler: JobHandler<N>, concurrency = 1): Promise<void> {
    for (let i = 0; i < concurrency; i++) {
      // Listed before pg-boss starts it, which may hand it a job before `work` has returned its id.
      const worker: Worker = { id: undefined, busy: false };
      this.#workers.set(name, [...(this.#workers.get(name) ?? []), worker]);
      worker.id = await this.#boss.work<JobPayloads[N]>(
        name,
        {
          pollingIntervalSeconds: this.options.pollingIntervalSeconds,
          batchSize: 1,
          includeMetadata: true,
        },
        async (jobs) => {
          worker.busy = true;
          const started = performance.now();
          let outcome: 'completed' | 'failed' = 'failed';
          // A job that waited is a sign of more waiting: an idle worker looks too (see BEHIND_MS).
          if (jobs.some(waitedLong)) this.#wakeOne(name);
          try {
            for (const job of jobs) await handler(job.data, { id: job.id, retryCount: job.retryCount });
            outcome = 'completed';
          } catch (error) {
            throw storableFailure(error);
          } finally {
            if (jobs.length > 0) this.options.observe?.(name, outcome, (performance.now() - started) / 1000);
            worker.busy = false;
            // pg-boss waits a whole polling interval after every fetch, even one that found work;
            // a worker that found a job looks for the next one at once, so a backlog drains at
            // the speed of its handlers rather than one job per interval.
            if (jobs.length > 0 && worker.id !== undefined && this.#started)
              this.#boss.notifyWorker(worker.id);
          }
        },
      );
    }
  }

  /** Whether any worker of this process runs a job now. */
  #anyBusy(): boolean {
    for (const workers of this.#workers.values()) if (workers.some((worker) => worker.busy)) return true;
    return false;
  }

  /**
   * Work a job handler started that goes on after the handler returned (the SMS drain's sends, which
   * wait for their slots and the carrier after their job completed): `stop` waits for it as for a
   * running handler, before the queue stops.
   */
  track(work: Promise<unknown>): void {
    this.#tracked.add(work);
    const forget = () => this.#tracked.delete(work);
    work.then(forget, forget);
  }

  get running(): boolean {
    return this.#started;
  }

  /**
   * For jobs written by a statement of the caller's own (job-rows.ts), once it has committed: wakes
   * a worker of `name` now rather than at its next poll — on a server database every process's,
   * through the job table's notification, which needs nothing more here; on the embedded one, one of
   * this process's.
   */
  wake(name: JobName): void {
    if (!this.#wokenByNotifications) this.#wakeOne(name);
  }

  /**
   * Makes one of this process's idle workers of `name` poll now rather than at its next interval
   * (they take turns): one new job needs one worker, and waking them all would cost a fetch query
   * each. A busy worker is not woken: it looks for the next job as soon as its own has ended — so
   * when every worker is busy, none is.
   */
  #wakeOne(name: JobName): void {
    const workers = this.#workers.get(name) ?? [];
    const start = this.#wakeTurn.get(name) ?? 0;
    for (let k = 0; k < workers.length; k++) {
      const turn = (start + k) % workers.length;
      const worker = workers[turn]!;
      if (worker.busy || worker.id === undefined) continue;
      this.#wakeTurn.set(name, turn + 1);
      this.#boss.notifyWorker(worker.id);
      return;
    }
  }

  /** Counts of jobs per state, for health checks and tests. */
  async counts(name: JobName): Promise<Record<string, number>> {
    const { rows } = await this.database.executeSql(
      'select state, count(*)::int as n from pgboss.job where name = $1 group by state',
      [name],
    );
    return Object.fromEntries(rows.map((row) => [String(row.state), Number(row.n)]));
  }

  /**
   * Stops fetching new jobs and waits up to `timeoutMs` for the running ones — including a job whose
   * fetch was under way — and for their completion writes. pg-boss's own `stop` waits only for
   * workers that already hold a job, so a fetch in flight could otherwise start a job after the
   * database closed.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    const deadline = Date.now() + timeoutMs;
    for (const name of this.#workers.keys()) await this.#boss.offWork(name);
    await this.#settle(deadline);
    await this.#boss.stop({ graceful: true, wait: true, timeout: Math.max(deadline - Date.now(), 1000) });
    await this.#settle(deadline);
  }

  /**
   * Resolves once no handler runs, no tracked work is left and no pg-boss query is outstanding for a
   * whole event-loop turn.
   */
  async #settle(deadline: number): Promise<void> {
    while (Date.now() < deadline) {
      if (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
      await new Promise((resolve) => setImmediate(resolve));
      const busy = this.#anyBusy();
      if (this.#inFlight.size === 0 && !busy && this.#tracked.size === 0) return;
      if (busy || this.#tracked.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/**
 * pg-boss keeps a failed job's error (message and stack) in the job's row, where operators read it:
 * a database error goes there as its facts only, like in the logs, never with the statement's values.
 */
function storableFailure(error: unknown): unknown {
  const safe = withoutValues(error);
  if (!safe) return error;
  const failure = new Error(safe.message);
  failure.stack = `${failure.message}\n${safe.frames}`;
  return failure;
}

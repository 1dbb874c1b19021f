/**
 * Every process of a cluster hears of a job the moment it is enqueued, whichever process enqueued it.
 *
 * pg-boss finds work by polling (every 2 s here). A process that enqueued a job used to wake only its
 * own workers after the commit, so a job enqueued by a process with no workers (`WORKERS_ENABLED=false`,
 * an API-only process) or none free waited up to a whole poll for another process to find it. On a
 * server database a trigger on pg-boss's job table now sends a NOTIFY with the job's name for each
 * job due now, delivered when its transaction commits (never for one rolled back, nor for a `short`
 * job dropped because one already waits); each process LISTENs and wakes one of its workers of that
 * name, and the first to fetch gets the job. A transaction enqueueing many jobs of one name sends one
 * notification (PostgreSQL merges identical ones); each worker that finds a job looks for the next at
 * once (queue.ts), so a batch drains as before. A notification missed (the listening connection lost;
 * it reconnects within a second, db/client.ts) costs only time: the workers' polls find every job.
 *
 * The price: each process that hears of a job fetches once, so with N processes a job costs N - 1
 * fetches that find nothing. What it does not do is balance: the first process to fetch wins, and in
 * the cluster benchmark one of two processes still ran about five jobs in six (docs/performance.md).
 *
 * The trigger is pg-boss's table's, not ours: it is created at start when missing (also after a
 * pg-boss upgrade that rebuilt the table), under an advisory lock so that processes starting together
 * do not race, and it costs the enqueuing process no statement. The embedded database has one
 * process, which wakes its own workers directly (queue.ts).
 */
import type { Database } from '../db/client.js';

export const JOBS_CHANNEL = 'switchboard_jobs';

/**
 * The trigger's and its function's name. A changed trigger must get a new name (and drop this one):
 * a process finding a trigger of the name it knows does not look at its body.
 */
const TRIGGER = 'switchboard_job_wake_v1';
/** Beside the migrations' 7_340_001 (db/migrate.ts). */
const INSTALL_LOCK_ID = 7_340_002;

const INSTALL = `
create or replace function pgboss.${TRIGGER}() returns trigger language plpgsql as $$
begin
  -- Due now: a job to start later is found by the polls once it is due.
  if new.start_after <= now() then
    perform pg_notify('${JOBS_CHANNEL}', new.name);
  end if;
  return null;
end
$$;
create trigger ${TRIGGER} after insert on pgboss.job
  for each row execute function pgboss.${TRIGGER}();
`;

/** Creates the trigger unless pg-boss's job table has it already. Call after pg-boss has started. */
export async function installJobWake(database: Database): Promise<void> {
  const installed = async () => {
    const { rows } = await database.executeSql(
      `select 1 from pg_trigger where tgrelid = 'pgboss.job'::regclass and tgname = $1`,
      [TRIGGER],
    );
    return rows.length > 0;
  };
  if (await installed()) return;
  await database.withAdvisoryLock(INSTALL_LOCK_ID, async () => {
    if (!(await installed())) await database.executeSql(INSTALL);
  });
}

/**
 * A pg-boss job row written by a caller's own statement, so that a write and its job cost one round
 * trip (`/sms/send` inserts its messages and their drain's wake-up in one statement). The columns and
 * their defaults are exactly those of pg-boss 10's `insertJob` (node_modules/pg-boss/src/plans.js)
 * for a job sent with at most a singleton key and a start time of its own: everything else comes from
 * the queue's row in `pgboss.queue`, as `send` does. If pg-boss is upgraded, compare with its
 * `insertJob` again (test/sms.test.ts checks that a job written here is run like one sent through
 * `JobQueue`).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { JobName } from './jobs.js';

export interface JobRowOptions {
  /** A `text` expression over `from`'s columns: pg-boss's singleton key (see `short` in jobs.ts). */
  singletonKey?: SQL;
  /** A `timestamptz` expression over `from`'s columns: run no earlier (default: now). */
  startAfter?: SQL;
}

/**
 * An `insert into pgboss.job … select` that adds one job named `name` for each row of `from` (a
 * CTE or table the caller's statement names), its payload built by `payload` (a `jsonb` expression
 * over `from`'s columns). The name is written as given rather than taken from the queue's row, so
 * that a queue that does not exist fails the whole statement (pg-boss has no partition for it)
 * instead of silently writing no job. Like pg-boss's own insert it does nothing on a conflict: a
 * `short` queue's job whose key already waits is not written (`returning` then leaves it out).
 */
export function insertJobRows(name: JobName, from: SQL, payload: SQL, options: JobRowOptions = {}): SQL {
  const startAfter = options.startAfter ?? sql`now()`;
  return sql`insert into pgboss.job (
      id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter, expire_in,
      keep_until, retry_limit, retry_delay, retry_backoff, policy
    )
    select
      gen_random_uuid(), ${name}::text, ${payload}, 0, ${startAfter}, ${options.singletonKey ?? sql`null`}, null,
      q.dead_letter,
      case when q.expire_seconds is not null then q.expire_seconds * interval '1s' else interval '15 minutes' end,
      ${startAfter} + cast(coalesce((q.retention_minutes * 60)::text, '14 days') as interval),
      coalesce(q.retry_limit, 2),
      case when coalesce(q.retry_backoff, false) then greatest(q.retry_delay, 1) else coalesce(q.retry_delay, 0) end,
      coalesce(q.retry_backoff, false),
      q.policy
    from ${from} left join pgboss.queue as q on q.name = ${name}::text
    on conflict do nothing`;
}

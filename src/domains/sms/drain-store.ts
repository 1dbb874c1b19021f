/**
 * SQL of the SMS drain (drain.ts): the claim — one statement that takes a number's due messages,
 * gives each its slot at the number's rate, moves the number's turn past them and leaves the next
 * wake-up — and the set-based records of what the carrier answered.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { messages } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { insertJobRows } from '../../queue/job-rows.js';
import { advanceSmsTurn, lockSmsTurn } from '../phone-numbers/sms-turns.js';
import type { MessageRow } from './store.js';

/** How a claim paces and sizes a number's batch (drain.ts says why each is what it is). */
export interface ClaimRules {
  /** The organization's sending version the caller's knowledge of the number was resolved at. */
  version: number;
  /** Messages per second when the number has no `sms_rate_per_second` of its own. */
  defaultRate: number;
  /**
   * The first slot no sooner than this many seconds from now: this process's lane of the number
   * runs that late (send-lanes.ts), and slots before it would only be sent late.
   */
  notBeforeSeconds: number;
  /** Slots are `gapFactor / rate + gapExtraSeconds` seconds apart. */
  gapFactor: number;
  gapExtraSeconds: number;
  /** Messages whose slot falls within this many seconds from now are claimed (at least one when due). */
  horizonSeconds: number;
  /**
   * The wake-up job for the next run is due this long after it: the process that claimed runs the
   * next claim itself, and the job is for another process to go on should this one be gone.
   */
  fallbackSeconds: number;
  /** The next run is due this long before the turn after the batch. */
  leadSeconds: number;
  /** The next run never sooner than this: messages held by another transaction are not spun on. */
  minRerunSeconds: number;
  maxBatch: number;
  /** A message back in the queue after a retryable failure waits this, doubled per earlier attempt. */
  retryBaseSeconds: number;
  /** A message `sending` for longer was interrupted: failed with `interruptedError`, never resent. */
  interruptedAfterSeconds: number;
  interruptedError: string;
}

/** A message taken by a claim, `sending` now, and when its slot comes. */
export interface ClaimedMessage {
  id: string;
  provider: string;
  fromPhoneNumber: string;
  toPhoneNumber: string;
  body: string;
  mediaUrls: string[];
  /** Attempts including this one. */
  attempts: number;
  /** Milliseconds from the statement's end to the slot (≤ 0: due now). */
  waitMs: number;
}

export type Claim =
  /** The organization's configuration changed since the caller resolved the number: nothing done. */
  | { kind: 'stale' }
  /** The number is gone (removed): nothing done. */
  | { kind: 'no-number' }
  | {
      kind: 'claimed';
      /** In slot order, which is the queue's order. */
      messages: ClaimedMessage[];
      /** Between two slots: a little over `spacingMs`, room for the way to the carrier. */
      gapMs: number;
      /** 1 / the number's rate: no two of its sends may leave closer than this. */
      spacingMs: number;
      /**
       * The number's turn as the claim found it and as it left it (as text, to be compared): a
       * process whose previous claim left the turn it finds knows nobody else claimed in between.
       */
      turnBefore: string | null;
      turnAfter: string | null;
      /**
       * Milliseconds until the number's next run is due (queued messages remain; the process that
       * claimed runs it then), undefined when none remain. The wake-up job the statement writes for
       * it (unless one waits already) is due `fallbackSeconds` later: whoever takes it over if this
       * process is gone by then.
       */
      nextRunInMs: number | undefined;
      /** Messages found interrupted mid-send and failed. */
      interrupted: number;
    };

/** When a queued message may be claimed: at once, or after its back-off from a retryable failure. */
function eligibleAt(rules: ClaimRules, now: ReturnType<typeof sql>) {
  return sql`case when m.attempts = 0 then ${now} else m.updated_at + make_interval(
    secs => ${rules.retryBaseSeconds}::float8 * power(2, m.attempts - 1)) end`;
}

/**
 * Claims the number's due messages in one statement. Under the number's row lock (which serialises
 * claims of one number across processes), it takes — oldest first, skipping rows another transaction
 * holds, and messages still in their retry back-off — as many queued messages as have a slot within
 * the horizon: the first at the number's turn (or now, when the turn has passed), each next one a gap
 * later. It sets them `sending` (one attempt more), moves the turn past the last one, fails the
 * number's messages interrupted mid-send, and, when queued messages remain, writes the number's next
 * wake-up (`sms.drain`, at the turn after this batch less the lead, or when the first back-off ends).
 */
export async function claimDue(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  rules: ClaimRules,
): Promise<Claim> {
  const org = tenant.organizationId;
  const result = (await ex.execute(sql`
    with fresh as (
      select 1 as ok
      where (select coalesce(max(version), 0) from sms_sending_versions where organization_id = ${org}::int)
        = ${rules.version}::bigint
    ),
    number as (${lockSmsTurn(tenant, phoneNumberId, sql`exists (select 1 from fresh)`)}),
    plan as (
      select locked.now,
        greatest(locked.next_turn, locked.now + make_interval(secs => ${rules.notBeforeSeconds}::float8)) as start,
        ${rules.gapFactor}::float8 / coalesce(locked.rate, ${rules.defaultRate}::float8)
          + ${rules.gapExtraSeconds}::float8 as gap,
        1::float8 / coalesce(locked.rate, ${rules.defaultRate}::float8) as spacing
      -- The clock is read with the locked row, after any wait for the lock: slots start from then.
      from (select number.*, clock_timestamp() as now from number) as locked
    ),
    sized as (
      select plan.*,
        case when plan.start < plan.now + make_interval(secs => ${rules.horizonSeconds}::float8)
          then least(${rules.maxBatch}::int, ceil(extract(epoch from
            plan.now + make_interval(secs => ${rules.horizonSeconds}::float8) - plan.start) / plan.gap)::int)
          else 0 end as size
      from plan
    ),
    due as (
      select m.id, m.created_at from messages as m
      where m.organization_id = ${org}::int and m.phone_number_id = ${phoneNumberId}::int
        and m.status = 'queued' and ${eligibleAt(rules, sql`'-infinity'::timestamptz`)} <= clock_timestamp()
      order by m.created_at, m.id
      -- Evaluated before the first row is locked: the number's lock is taken first.
      limit coalesce((select size from sized), 0)
      for update of m skip locked
    ),
    numbered as (
      select due.id, (row_number() over (order by due.created_at, due.id) - 1)::int as slot from due
    ),
    claimed as (
      update messages as m set status = 'sending', attempts = m.attempts + 1, updated_at = now()
      from numbered
      where m.id = numbered.id and m.organization_id = ${org}::int
      returning m.id, m.provider, m.from_phone_number, m.to_phone_number, m.body, m.media_urls,
        m.attempts, numbered.slot
    ),
    turn as (${advanceSmsTurn(
      tenant,
      phoneNumberId,
      sql`(select sized.start + make_interval(secs => sized.gap * (select count(*) from claimed)) from sized)`,
      sql`exists (select 1 from claimed)`,
    )}),
    interrupted as (
      update messages set status = 'failed', error = ${rules.interruptedError}::text, updated_at = now()
      where organization_id = ${org}::int and phone_number_id = ${phoneNumberId}::int
        and status = 'sending' and exists (select 1 from number)
        and updated_at < now() - make_interval(secs => ${rules.interruptedAfterSeconds}::float8)
      returning 1
    ),
    behind as (
      select min(${eligibleAt(rules, sql`sized.now`)}) as eligible_at
      from messages as m cross join sized
      where m.organization_id = ${org}::int and m.phone_number_id = ${phoneNumberId}::int
        and m.status = 'queued' and m.id not in (select id from claimed)
    ),
    next_run as (
      select greatest(
        coalesce((select next_turn from turn), sized.start) - make_interval(secs => ${rules.leadSeconds}::float8),
        behind.eligible_at,
        sized.now + make_interval(secs => ${rules.minRerunSeconds}::float8)
      ) as at
      from sized cross join behind
      where behind.eligible_at is not null
    ),
    wake as (${insertJobRows(
      'sms.drain',
      sql`next_run`,
      sql`jsonb_build_object('organization_id', ${org}::int, 'phone_number_id', ${phoneNumberId}::int)`,
      {
        singletonKey: sql`${String(phoneNumberId)}::text`,
        startAfter: sql`next_run.at + make_interval(secs => ${rules.fallbackSeconds}::float8)`,
      },
    )} returning 1)
    select exists (select 1 from fresh) as fresh, exists (select 1 from number) as found,
      (select next_turn::text from number) as turn_before,
      coalesce((select next_turn::text from turn), (select next_turn::text from number)) as turn_after,
      (select gap from sized) as gap_seconds, (select spacing from sized) as spacing_seconds,
      (select extract(epoch from next_run.at - clock_timestamp())::float8 * 1000 from next_run) as next_run_in_ms,
      (select count(*) from interrupted)::int as interrupted,
      coalesce((
        select jsonb_agg(jsonb_build_object(
          'id', claimed.id, 'provider', claimed.provider, 'from', claimed.from_phone_number,
          'to', claimed.to_phone_number, 'body', claimed.body, 'media_urls', claimed.media_urls,
          'attempts', claimed.attempts,
          'wait_ms', extract(epoch from sized.start + make_interval(secs => sized.gap * claimed.slot)
            - clock_timestamp())::float8 * 1000
        ) order by claimed.slot)
        from claimed cross join sized
      ), '[]'::jsonb) as claimed`)) as unknown as {
    rows: Array<{
      fresh: boolean;
      found: boolean;
      turn_before: string | null;
      turn_after: string | null;
      gap_seconds: number | null;
      spacing_seconds: number | null;
      next_run_in_ms: number | null;
      interrupted: number;
      claimed: Array<{
        id: string;
        provider: string;
        from: string;
        to: string;
        body: string;
        media_urls: string[];
        attempts: number;
        wait_ms: number;
      }>;
    }>;
  };
  const row = result.rows[0]!;
  if (!row.fresh) return { kind: 'stale' };
  if (!row.found) return { kind: 'no-number' };
  return {
    kind: 'claimed',
    messages: row.claimed.map((message) => ({
      id: message.id,
      provider: message.provider,
      fromPhoneNumber: message.from,
      toPhoneNumber: message.to,
      body: message.body,
      mediaUrls: message.media_urls,
      attempts: Number(message.attempts),
      waitMs: Number(message.wait_ms),
    })),
    gapMs: Number(row.gap_seconds) * 1000,
    spacingMs: Number(row.spacing_seconds) * 1000,
    turnBefore: row.turn_before,
    turnAfter: row.turn_after,
    nextRunInMs: row.next_run_in_ms === null ? undefined : Number(row.next_run_in_ms),
    interrupted: Number(row.interrupted),
  };
}

/**
 * Records that the carrier accepted these messages, in one statement. A status becomes `sent` only
 * while it is still `sending`: a delivery receipt that overtook the carrier's answer keeps its later
 * status. Returns the rows recorded.
 */
export async function markAcceptedMany(
  ex: Executor,
  tenant: Tenant,
  accepted: Array<{ id: string; providerMessageId: string; segments: number; cost: number }>,
): Promise<MessageRow[]> {
  if (accepted.length === 0) return [];
  const input = accepted.map((item) => ({
    id: item.id,
    provider_message_id: item.providerMessageId,
    segments: item.segments,
    cost: item.cost,
  }));
  return ex
    .update(messages)
    .set({
      status: sql`case when ${messages.status} = 'sending' then 'sent' else ${messages.status} end`,
      providerMessageId: sql`accepted.provider_message_id`,
      segments: sql`accepted.segments`,
      cost: sql`accepted.cost`,
      sentAt: sql`now()`,
      error: null,
      updatedAt: sql`now()`,
    })
    .from(
      sql`jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
        as accepted(id uuid, provider_message_id text, segments int, cost numeric)`,
    )
    .where(and(tenant.owns(messages), sql`${messages.id} = accepted.id`))
    .returning();
}

/**
 * Sets messages still `sending` to `status` (`queued` again after a retryable failure, `failed`
 * otherwise) with each one's error, in one statement. Returns the rows changed.
 */
export async function endSendingMany(
  ex: Executor,
  tenant: Tenant,
  status: 'queued' | 'failed',
  ended: Array<{ id: string; error: string }>,
): Promise<MessageRow[]> {
  if (ended.length === 0) return [];
  return ex
    .update(messages)
    .set({ status, error: sql`ended.error`, updatedAt: sql`now()` })
    .from(sql`jsonb_to_recordset(${JSON.stringify(ended)}::jsonb) as ended(id uuid, error text)`)
    .where(and(tenant.owns(messages), sql`${messages.id} = ended.id`, eq(messages.status, 'sending')))
    .returning();
}

/**
 * Fails the organization's queued messages whose number was removed (the foreign key emptied their
 * `phone_number_id`): they can never be sent. Returns them.
 */
export async function failOrphaned(ex: Executor, tenant: Tenant, error: string): Promise<MessageRow[]> {
  return ex
    .update(messages)
    .set({ status: 'failed', error, updatedAt: sql`now()` })
    .where(
      tenant.where(
        messages,
        sql`${messages.phoneNumberId} is null`,
        eq(messages.direction, 'outbound'),
        eq(messages.status, 'queued'),
      ),
    )
    .returning();
}

/**
 * Writes a drain wake-up for every number with queued messages on the whole platform (one statement;
 * a number whose wake-up waits already keeps it). A process starting its workers does so: a wake-up
 * lost to a run that failed for good, or to the jobs of an older version, would otherwise wait for
 * the number's next send. Returns how many it wrote.
 */
export async function wakeEveryQueueOnPlatform(ex: Executor): Promise<number> {
  const result = (await ex.execute(sql`
    with queues as (
      select distinct organization_id, phone_number_id from messages
      where status = 'queued' and phone_number_id is not null
    ),
    wake as (${insertJobRows(
      'sms.drain',
      sql`queues`,
      sql`jsonb_build_object('organization_id', queues.organization_id, 'phone_number_id', queues.phone_number_id)`,
      { singletonKey: sql`queues.phone_number_id::text` },
    )} returning 1)
    select count(*)::int as n from wake`)) as unknown as { rows: Array<{ n: number }> };
  return Number(result.rows[0]?.n ?? 0);
}

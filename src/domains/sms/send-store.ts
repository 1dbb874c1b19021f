/**
 * SQL of `/sms/send`: one statement writes the message, its `sms.send` job (when queued) and its
 * idempotency key with the answer, and only while the sender it was resolved from is current (the
 * organization's sending version, see senders.ts). One round trip, and atomic as one transaction:
 * nothing of it exists unless all of it does.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { insertJobRows } from '../../queue/job-rows.js';

export interface SendRow {
  /** Chosen by the caller, so the answer stored with the key can name it in the same statement. */
  id: string;
  phoneNumberId: number;
  assistantId: number;
  provider: string;
  from: string;
  to: string;
  body: string;
  mediaUrls: string[];
  segments: number;
  /** `queued` (with its job) or `sending` (an immediate send: the caller hands it to the carrier). */
  status: 'queued' | 'sending';
}

export type SendWritten =
  /** The sender changed since it was resolved: nothing was written; resolve it again. */
  | 'stale'
  /** The idempotency key is held by an earlier request (live, under 24 hours): nothing was written. */
  | 'key-taken'
  | 'written';

/**
 * Writes a send. With `idempotency` the key is claimed in the same statement — a new key, or one
 * older than the 24 hours keys are kept, taken over — with `answer` (null while an immediate send
 * still waits for its carrier); a key another request holds makes a concurrent statement wait for
 * that request's commit (the primary key), then find it taken.
 */
export async function writeSend(
  ex: Executor,
  tenant: Tenant,
  version: number,
  row: SendRow,
  idempotency?: { key: string; hash: string; answer: object | null },
): Promise<SendWritten> {
  const org = tenant.organizationId;
  const keyStep = idempotency
    ? sql`, claimed as (
        insert into sms_idempotency_keys as k (organization_id, key, request_hash, message_id, response)
        select ${org}::int, ${idempotency.key}::text, ${idempotency.hash}::text, ${row.id}::uuid,
          ${idempotency.answer === null ? null : JSON.stringify(idempotency.answer)}::jsonb
        from fresh
        on conflict (organization_id, key) do update set
          request_hash = excluded.request_hash, message_id = excluded.message_id,
          response = excluded.response, created_at = now()
        where k.created_at < now() - interval '24 hours'
        returning 1
      )`
    : sql``;
  const onlyWhen = idempotency ? sql`fresh where exists (select 1 from claimed)` : sql`fresh`;
  const jobStep =
    row.status === 'queued'
      ? sql`, job as (${insertJobRows(
          'sms.send',
          sql`message`,
          sql`jsonb_build_object('message_id', message.id, 'organization_id', ${org}::int)`,
        )} returning 1)`
      : sql``;
  const result = (await ex.execute(sql`
    with fresh as (
      select 1 from (
        select coalesce(max(version), 0) as version from sms_sending_versions where organization_id = ${org}::int
      ) as v
      where v.version = ${version}::bigint
    )${keyStep},
    message as (
      insert into messages (
        id, organization_id, phone_number_id, assistant_id, provider, direction, from_phone_number,
        to_phone_number, body, media_urls, status, segments, attempts
      )
      select ${row.id}::uuid, ${org}::int, ${row.phoneNumberId}::int, ${row.assistantId}::int,
        ${row.provider}::text, 'outbound', ${row.from}::text, ${row.to}::text, ${row.body}::text,
        ${JSON.stringify(row.mediaUrls)}::jsonb, ${row.status}::text, ${row.segments}::int,
        ${row.status === 'sending' ? 1 : 0}::int
      from ${onlyWhen}
      returning id
    )${jobStep}
    select exists (select 1 from fresh) as fresh, (select count(*) from message)::int as written`)) as unknown as {
    rows: Array<{ fresh: boolean; written: number }>;
  };
  const outcome = result.rows[0]!;
  if (!outcome.fresh) return 'stale';
  return Number(outcome.written) === 1 ? 'written' : 'key-taken';
}

/** One queued send of a group, with the sender version it was resolved at and its idempotency key. */
export interface GroupedSend {
  version: number;
  row: SendRow & { status: 'queued' };
  idempotency?: { key: string; hash: string; answer: object };
}

/**
 * Writes several queued sends of one organization in one statement: their messages, jobs and
 * idempotent answers, each row under its own conditions exactly as `writeSend` would (its sender
 * version current, its key new or expired), and one outcome per send in the order given. A send
 * whose condition fails writes nothing and does not stop the others. Two sends of one group must
 * not name the same key (the caller keeps them apart: one insert cannot claim a key twice); a
 * statement that fails (a row breaking a constraint) writes none of them, and the caller writes
 * them one by one to learn whose it was.
 */
export async function writeSends(ex: Executor, tenant: Tenant, sends: GroupedSend[]): Promise<SendWritten[]> {
  const org = tenant.organizationId;
  const input = sends.map((send, ord) => ({
    ord,
    version: send.version,
    id: send.row.id,
    phone_number_id: send.row.phoneNumberId,
    assistant_id: send.row.assistantId,
    provider: send.row.provider,
    from_phone: send.row.from,
    to_phone: send.row.to,
    body: send.row.body,
    media_urls: send.row.mediaUrls,
    segments: send.row.segments,
    key: send.idempotency?.key ?? null,
    request_hash: send.idempotency?.hash ?? null,
    response: send.idempotency?.answer ?? null,
  }));
  const result = (await ex.execute(sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as i(
        ord int, version bigint, id uuid, phone_number_id int, assistant_id int, provider text,
        from_phone text, to_phone text, body text, media_urls jsonb, segments int, key text,
        request_hash text, response jsonb
      )
    ),
    fresh as (
      select input.* from input
      where input.version = (
        select coalesce(max(version), 0) from sms_sending_versions where organization_id = ${org}::int
      )
    ),
    claimed as (
      insert into sms_idempotency_keys as k (organization_id, key, request_hash, message_id, response)
      select ${org}::int, fresh.key, fresh.request_hash, fresh.id, fresh.response
      from fresh where fresh.key is not null
      on conflict (organization_id, key) do update set
        request_hash = excluded.request_hash, message_id = excluded.message_id,
        response = excluded.response, created_at = now()
      where k.created_at < now() - interval '24 hours'
      returning k.message_id
    ),
    message as (
      insert into messages (
        id, organization_id, phone_number_id, assistant_id, provider, direction, from_phone_number,
        to_phone_number, body, media_urls, status, segments, attempts
      )
      select fresh.id, ${org}::int, fresh.phone_number_id, fresh.assistant_id, fresh.provider, 'outbound',
        fresh.from_phone, fresh.to_phone, fresh.body, fresh.media_urls, 'queued', fresh.segments, 0
      from fresh
      where fresh.key is null or fresh.id in (select message_id from claimed)
      order by fresh.ord
      returning id
    ),
    job as (${insertJobRows(
      'sms.send',
      sql`message`,
      sql`jsonb_build_object('message_id', message.id, 'organization_id', ${org}::int)`,
    )} returning 1)
    select input.ord,
      exists (select 1 from fresh where fresh.ord = input.ord) as fresh,
      exists (select 1 from message where message.id = input.id) as written
    from input order by input.ord`)) as unknown as {
    rows: Array<{ ord: number; fresh: boolean; written: boolean }>;
  };
  return result.rows.map((outcome) => {
    if (!outcome.fresh) return 'stale';
    return outcome.written ? 'written' : 'key-taken';
  });
}

/**
 * SQL of `/sms/send`: one statement writes the sends' messages, the wake-up of each sending number's
 * drain (`sms.drain`, for queued messages) and their idempotency keys with the answers, each send
 * only while the sender it was resolved from is current (the organization's sending version, see
 * senders.ts). One round trip, and atomic as one transaction: nothing of it exists unless all of it
 * does.
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
  /**
   * `queued` (its number's drain is woken) or `sending` (an immediate send: the caller hands it to
   * the carrier).
   */
  status: 'queued' | 'sending';
}

/** One send to write, with the sender version it was resolved at and its idempotency key. */
export interface PendingSend {
  version: number;
  row: SendRow;
  /** The key, the request's hash and the answer kept with it (null while an immediate send waits). */
  idempotency?: { key: string; hash: string; answer: object | null };
}

/** A queued send, as send-groups.ts writes them together. */
export interface GroupedSend extends PendingSend {
  row: SendRow & { status: 'queued' };
  idempotency?: { key: string; hash: string; answer: object };
}

export type SendWritten =
  /** The sender changed since it was resolved: nothing was written; resolve it again. */
  | 'stale'
  /** The idempotency key is held by an earlier request (live, under 24 hours): nothing was written. */
  | 'key-taken'
  | 'written';

export interface SendsWritten {
  /** One per send, in the order given. */
  outcomes: SendWritten[];
  /**
   * Drain wake-ups this statement wrote: none when every number written to already had one waiting
   * (its `short` queue keeps one), so nobody needs to be told to look.
   */
  wakeUps: number;
}

/**
 * Writes sends of one organization in one statement: their messages, a drain wake-up for each number
 * with a queued message, and their idempotency keys, each send under its own conditions — its sender
 * version current, and its key new or older than the 24 hours keys are kept (then taken over) — and
 * one outcome per send. A send whose condition fails writes nothing and does not stop the others. A
 * key another request holds makes the statement wait for that request's commit (the primary key),
 * then find it taken. Two sends of one call must not name the same key (one insert cannot claim a key
 * twice; send-groups.ts keeps them apart). A statement that fails (a row breaking a constraint)
 * writes none of them.
 */
export async function writeSends(ex: Executor, tenant: Tenant, sends: PendingSend[]): Promise<SendsWritten> {
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
    status: send.row.status,
    key: send.idempotency?.key ?? null,
    request_hash: send.idempotency?.hash ?? null,
    response: send.idempotency?.answer ?? null,
  }));
  const result = (await ex.execute(sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as i(
        ord int, version bigint, id uuid, phone_number_id int, assistant_id int, provider text,
        from_phone text, to_phone text, body text, media_urls jsonb, segments int, status text,
        key text, request_hash text, response jsonb
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
        fresh.from_phone, fresh.to_phone, fresh.body, fresh.media_urls, fresh.status, fresh.segments,
        case when fresh.status = 'sending' then 1 else 0 end
      from fresh
      where fresh.key is null or fresh.id in (select message_id from claimed)
      order by fresh.ord
      returning id, phone_number_id, status
    ),
    draining as (select distinct phone_number_id from message where status = 'queued'),
    wake as (${insertJobRows(
      'sms.drain',
      sql`draining`,
      sql`jsonb_build_object('organization_id', ${org}::int, 'phone_number_id', draining.phone_number_id)`,
      { singletonKey: sql`draining.phone_number_id::text` },
    )} returning 1)
    select input.ord,
      exists (select 1 from fresh where fresh.ord = input.ord) as fresh,
      exists (select 1 from message where message.id = input.id) as written,
      (select count(*) from wake)::int as wake_ups
    from input order by input.ord`)) as unknown as {
    rows: Array<{ ord: number; fresh: boolean; written: boolean; wake_ups: number }>;
  };
  return {
    outcomes: result.rows.map((outcome) => {
      if (!outcome.fresh) return 'stale';
      return outcome.written ? 'written' : 'key-taken';
    }),
    wakeUps: Number(result.rows[0]?.wake_ups ?? 0),
  };
}

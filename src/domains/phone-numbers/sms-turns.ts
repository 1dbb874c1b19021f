/**
 * A number's SMS sending turn (`sms_next_send_at`): when its next message may start. The SMS drain
 * (domains/sms/drain-store.ts) claims a batch of the number's messages, gives each a slot after the
 * turn and moves the turn past them — in one statement, so that the turn and the claim commit
 * together and two processes can never hand out the same slot. The turn lives on the number's row,
 * which only this domain writes; so the two steps of that statement that touch the row are written
 * here and composed into it, as `queue/job-rows.ts` offers the job table's insert — and so is the
 * statement that takes one turn alone (`takeSmsTurn`).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';

/**
 * A `select` for a CTE: the tenant's number `phoneNumberId` — `id`, `next_turn` (null before its
 * first send) and `rate` (its `sms_rate_per_second`, null for the default) — locked when `when`
 * holds. The lock is what serialises the drains of one number: a second claim waits here and then
 * reads the turn the first one left. `for no key update`, as the turn's own update locks: a send
 * inserting a message of the number (its foreign key takes a key-share lock) is not held up, and
 * cannot deadlock with a claim that waits for that send's drain wake-up.
 */
export function lockSmsTurn(tenant: Tenant, phoneNumberId: number, when: SQL): SQL {
  return sql`select id, sms_next_send_at as next_turn, sms_rate_per_second as rate
    from phone_numbers
    where organization_id = ${tenant.organizationId}::int and id = ${phoneNumberId}::int and ${when}
    for no key update`;
}

/**
 * An `update` for a CTE: moves the number's turn to `nextTurn` (a `timestamptz` expression) when
 * `when` holds, returning the new turn as `next_turn`. Only ever forward: a turn never moves back,
 * whatever the caller computed.
 */
export function advanceSmsTurn(tenant: Tenant, phoneNumberId: number, nextTurn: SQL, when: SQL): SQL {
  return sql`update phone_numbers
    set sms_next_send_at = greatest(sms_next_send_at, ${nextTurn})
    where organization_id = ${tenant.organizationId}::int and id = ${phoneNumberId}::int and ${when}
    returning sms_next_send_at as next_turn`;
}

/**
 * Takes the number's next turn on its own — a slot for one message, `gapSeconds` before the turn
 * after it — and returns how many milliseconds from now the slot is (≤ 0: now) and the turn it left
 * (as text); undefined when the number is gone. The drain does so for a message that could not
 * leave at the slot its claim gave it (its process stalled) while another process claims the
 * number's messages too: sent that late, it could reach the carrier right beside that one's next.
 */
export async function takeSmsTurn(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  gapSeconds: number,
): Promise<{ inMs: number; turn: string } | undefined> {
  const result = (await ex.execute(sql`
    with slot as (
      select greatest(sms_next_send_at, clock_timestamp()) as at from phone_numbers
      where organization_id = ${tenant.organizationId}::int and id = ${phoneNumberId}::int
      for no key update
    ),
    taken as (
      ${advanceSmsTurn(
        tenant,
        phoneNumberId,
        sql`(select slot.at + make_interval(secs => ${gapSeconds}::float8) from slot)`,
        sql`exists (select 1 from slot)`,
      )}
    )
    select extract(epoch from slot.at - clock_timestamp())::float8 * 1000 as wait_ms,
      (select next_turn::text from taken) as turn
    from slot where exists (select 1 from taken)`)) as unknown as {
    rows: Array<{ wait_ms: number; turn: string }>;
  };
  const row = result.rows[0];
  return row ? { inMs: Number(row.wait_ms), turn: row.turn } : undefined;
}

/** Messages as the API shows them. */
import type { MessageRow } from './store.js';

/** The message as the API shows it. */
export function messageView(row: MessageRow) {
  return {
    message_id: row.id,
    direction: row.direction,
    status: row.status,
    provider: row.provider,
    from_phone_number: row.fromPhoneNumber,
    to_phone_number: row.toPhoneNumber,
    message: row.body,
    media_urls: row.mediaUrls,
    segments: row.segments,
    cost: row.cost,
    error: row.error,
    attempts: row.attempts,
    assistant_id: row.assistantId,
    phone_number_id: row.phoneNumberId,
    sent_at: row.sentAt?.toISOString() ?? null,
    delivered_at: row.deliveredAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
